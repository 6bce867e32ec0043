// A site in a container of its own, as the end-to-end tests need one: a test CA and a certificate for the names the site
// answers (`makeCerts`), a Docker network the test made, and a Bun script on the base image serving there
// (`startSite`): its address, its log, its removal. The script finds its certificate at /certs/c.pem and its key at
// /certs/k.pem, and says "site ready" (or `ready`) once it listens. Everything is labelled sbx.test=1.
import { copyFileSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BASE_IMAGE } from "../docker/fixture";
import { docker, must } from "./harness";

const BUN = realpathSync(process.execPath);

/** A test CA's files: `ca` (its certificate, what a client trusts), `cert`/`key` (the site's, signed by it). */
export interface TestCerts {
  dir: string;
  ca: string;
  cert: string;
  key: string;
  remove(): void;
}

/**
 * A CA named `caName` and a certificate for `names` (subjectAltName) signed by it, in a new dir under /tmp (readable by
 * all: the site container reads it). `selfSigned`: the site's certificate is its own CA (`ca` is `cert`).
 * runs: openssl req / openssl x509
 */
export function makeCerts(prefix: string, names: readonly string[], o: { caName?: string; selfSigned?: boolean } = {}): TestCerts {
  const dir = mkdtempSync(`/tmp/${prefix}-certs-`);
  const run = (argv: string[]) => {
    const r = Bun.spawnSync(argv, { stdout: "ignore", stderr: "pipe" });
    if (r.exitCode !== 0) throw new Error(`${argv.slice(0, 3).join(" ")}: ${r.stderr.toString()}`);
  };
  const [cert, key, ca] = [join(dir, "c.pem"), join(dir, "k.pem"), join(dir, "ca.pem")];
  const san = `subjectAltName=${names.map((n) => `DNS:${n}`).join(",")}`;
  if (o.selfSigned) {
    run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", `/CN=${names[0]}`, "-addext", san, "-keyout", key, "-out", cert]);
    copyFileSync(cert, ca);
  } else {
    run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", `/CN=${o.caName ?? "world test CA"}`, "-keyout", join(dir, "ca.key"), "-out", ca]);
    run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", `/CN=${names[0]}`, "-keyout", key, "-out", join(dir, "c.csr")]);
    writeFileSync(join(dir, "ext"), `${san}\n`);
    run(["openssl", "x509", "-req", "-in", join(dir, "c.csr"), "-CA", ca, "-CAkey", join(dir, "ca.key"), "-CAcreateserial", "-days", "1", "-extfile", join(dir, "ext"), "-out", cert]);
  }
  Bun.spawnSync(["chmod", "-R", "a+rX", dir]);
  return { dir, ca, cert, key, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export interface SiteOptions {
  /** Names the container and network: `<prefix>-site-<tag>`, `<prefix>-net-<tag>`. */
  prefix: string;
  /** The Bun script the site runs (`bun -e`). */
  script: string;
  /** Mounted at /certs (read-only). */
  certs?: TestCerts;
  env?: Record<string, string>;
  /** More read-only mounts (host path → container path). */
  mounts?: Record<string, string>;
  /** A network with no way out (`docker network create --internal`): only the host's bridge reaches the site. */
  internal?: boolean;
  /** Joins this network (another site's) instead of making one. */
  network?: string;
  /** What the script prints once it listens (default "site ready"). */
  ready?: string;
}

export interface Site {
  container: string;
  network: string;
  /** Its address on the network. */
  ip: string;
  logs(): string;
  /** Removes the container, and the network when it made it. */
  remove(): void;
}

/** Starts the site and waits until it says it is ready (20 s at most; then its log is the error). */
export async function startSite(o: SiteOptions): Promise<Site> {
  const tag = Math.random().toString(36).slice(2, 8);
  const container = `${o.prefix}-site-${tag}`;
  const network = o.network ?? `${o.prefix}-net-${tag}`;
  if (o.network === undefined) must(docker(["network", "create", "--label", "sbx.test=1", ...(o.internal ? ["--internal"] : []), network]), "docker network create");
  const mounts = { [BUN]: "/opt/bun", ...(o.certs ? { [o.certs.dir]: "/certs" } : {}), ...o.mounts };
  const r = docker([
    "run", "-d", "--name", container, "--label", "sbx.test=1", "--network", network,
    ...Object.entries(o.env ?? {}).flatMap(([k, v]) => ["--env", `${k}=${v}`]),
    ...Object.entries(mounts).flatMap(([src, dst]) => ["--mount", `type=bind,src=${src},dst=${dst},readonly`]),
    "--entrypoint", "/opt/bun", BASE_IMAGE, "-e", o.script,
  ]);
  const logs = () => {
    const l = docker(["logs", container]);
    return l.stdout + l.stderr;
  };
  const remove = () => {
    docker(["rm", "--force", container]);
    if (o.network === undefined) docker(["network", "rm", network]);
  };
  if (r.code !== 0) {
    remove();
    throw new Error(`docker run ${container}: ${r.stderr}`);
  }
  const ready = o.ready ?? "site ready";
  for (let i = 0; i < 400 && !docker(["logs", container]).stdout.includes(ready); i++) await Bun.sleep(50);
  if (!docker(["logs", container]).stdout.includes(ready)) {
    const why = logs();
    remove();
    throw new Error(`the site ${container} did not say "${ready}": ${why}`);
  }
  const ip = docker(["inspect", "--format", `{{(index .NetworkSettings.Networks "${network}").IPAddress}}`, container]).stdout.trim();
  if (!/^\d+\.\d+\.\d+\.\d+$/.test(ip)) throw new Error(`no address for ${container} on ${network}: ${ip}`);
  return { container, network, ip, logs, remove };
}
