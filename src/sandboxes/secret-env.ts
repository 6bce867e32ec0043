// What a new session or command of a sandbox gets for its package mirrors (the host's registry settings, carried at
// create: variables and npm's global config lines) and for the secrets bound to hosts: each one's placeholder under its
// variable, and, since those hosts' TLS is ended by sbx's proxy, sbx's CA to trust, beside the host's own roots, in a
// file every client of note reads (OpenSSL's SSL_CERT_FILE, curl, Python requests, git, Node), and the same
// certificates as a PKCS#12 trust store for Java, which reads none of those. The files live in the sandbox's socket
// dir, which the host writes and the sandbox only reads.
import { chmodSync, existsSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { rootCertificates } from "node:tls";
import { dirname, join } from "node:path";
import { randomBytes } from "node:crypto";
import { mirrorDelivery, type Mirrors } from "../core/mirrors";
import type { SandboxSpec } from "../core/spec";
import type { SessionSecrets } from "../secrets/bound";
import { certificatesOf, trustStore, TRUSTSTORE_PASSWORD } from "../tls/pkcs12";
import { SYSTEM_BUNDLES } from "../tls/host-trust";

/** What the daemon's bound secrets give a session (secrets/bound.ts). */
export interface SessionSecretSource {
  session(sandboxId: number): Promise<SessionSecrets>;
}


export const CA_BUNDLE_FILE = "ca-bundle.pem";
export const CA_FILE = "ca.pem";
export const NPMRC_FILE = "npmrc";
export const TRUSTSTORE_FILE = "truststore.p12";

/** The host's roots (the first system bundle it has), read once per change of that file (every session asks). */
let roots: { file: string | null; at: number; pem: string } | null = null;
function hostRoots(): string {
  const file = SYSTEM_BUNDLES.find((f) => existsSync(f)) ?? null;
  const at = file ? statSync(file).mtimeMs : 0;
  if (roots?.file !== file || roots.at !== at) roots = { file, at, pem: file ? readFileSync(file, "utf8") : rootCertificates.join("\n") };
  return roots.pem;
}

/** A hash of what each file was last written with: a session's files are written again only when that changed. */
const written = new Map<string, bigint | number>();
function writeReadable(file: string, data: string | Uint8Array, h: bigint | number = Bun.hash(data)): void {
  if (written.get(file) === h && existsSync(file)) return;
  const tmp = `${file}.${randomBytes(6).toString("hex")}.tmp`;
  writeFileSync(tmp, data, { mode: 0o644 });
  // A user-account guest (another uid) reads them through the "other" bits; the daemon's umask (077 under its launchd
  // job and systemd units) must not take them away. Its socket dir alone keeps other guests out.
  chmodSync(tmp, 0o644);
  renameSync(tmp, file);
  written.set(file, h);
}

/**
 * The bundle as a Java trust store, made once per bundle (it is the same for every sandbox of a daemon: the host's
 * roots and its CA). Measured here (144 certificates, 2 busy cores): 4-12 ms warm, ≈75 ms the first time in a process;
 * a session that finds it made adds ≈3 µs (0.032 ms a session against 0.029 ms without it).
 */
let store: { bundle: bigint | number; der: Uint8Array } | null = null;
function trustStoreOf(bundle: string, h: bigint | number): Uint8Array {
  if (store?.bundle !== h) store = { bundle: h, der: trustStore(certificatesOf(bundle)) };
  return store.der;
}

/**
 * Pure: one -D option's value as JAVA_TOOL_OPTIONS splits them: on spaces, so a value with one is quoted (HotSpot 9
 * and later take quotes there).
 */
function jvmValue(v: string): string {
  if (!/[\s"']/.test(v)) return v;
  return v.includes('"') ? `'${v}'` : `"${v}"`;
}

/** Pure: the JVM options that make it trust the store (and nothing else): a Java client trusts what curl does. */
export function javaTrustOptions(file: string): string {
  return [`-Djavax.net.ssl.trustStore=${jvmValue(file)}`, "-Djavax.net.ssl.trustStoreType=PKCS12", `-Djavax.net.ssl.trustStorePassword=${TRUSTSTORE_PASSWORD}`].join(" ");
}

/**
 * Writes the trust and npm files into the sandbox's socket dir and returns the variables that point at them, as the
 * sandbox sees them (its socket dir is where its bridge socket is), with the host's package mirrors (`mirrors`, kept at
 * create: a variable the sandbox sets itself, by the config file or devcontainer.json, stays its own). No trust files
 * when it trusts nothing beyond the roots (no secret or rule makes sbx's proxy end its TLS, and the config names no
 * company CA); nothing at all when it has no mirrors either.
 */
export function secretSessionEnv(spec: SandboxSpec, s: SessionSecrets, mirrors: Mirrors | null = null): Record<string, string> {
  const carried = mirrors ? mirrorDelivery(mirrors) : { env: {}, npmrc: [], cargoToml: null };
  const inside = dirname(spec.env.SBX_BRIDGE_SOCKET ?? spec.sockets.bridge);
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(carried.env)) if (spec.env[k] === undefined) env[k] = v;
  // npm's global config (the person's ~/.npmrc inside and the project's .npmrc still apply, and win, as on the host):
  // the mirrors' registry lines, then each bound registry's token line.
  const npmrc = [...carried.npmrc, ...s.npmrc.map((n) => `//${n.host}/:_authToken=${n.placeholder}`)];
  if (npmrc.length > 0) {
    writeReadable(join(spec.sockets.dir, NPMRC_FILE), npmrc.map((l) => `${l}\n`).join(""));
    env.NPM_CONFIG_GLOBALCONFIG = join(inside, NPMRC_FILE);
  }
  const extra = `${s.extraCas ?? ""}${s.caPem ?? ""}`;
  if (extra === "") return env;
  // The CAs beyond the roots (Node adds them to its own): a company's, then sbx's.
  writeReadable(join(spec.sockets.dir, CA_FILE), extra);
  const text = `${hostRoots().trimEnd()}\n${extra}`;
  const h = Bun.hash(text);
  writeReadable(join(spec.sockets.dir, CA_BUNDLE_FILE), text, h);
  // A function of the bundle: the bundle's hash says when it changed.
  writeReadable(join(spec.sockets.dir, TRUSTSTORE_FILE), trustStoreOf(text, h), h);
  const bundle = join(inside, CA_BUNDLE_FILE);
  Object.assign(env, {
    SSL_CERT_FILE: bundle,
    CURL_CA_BUNDLE: bundle,
    REQUESTS_CA_BUNDLE: bundle,
    GIT_SSL_CAINFO: bundle,
    NODE_EXTRA_CA_CERTS: join(inside, CA_FILE),
    // Added to the sandbox's own (its proxy properties, drivers/env.ts), which the session would otherwise lose.
    JAVA_TOOL_OPTIONS: [spec.env.JAVA_TOOL_OPTIONS, javaTrustOptions(join(inside, TRUSTSTORE_FILE))].filter(Boolean).join(" "),
    ...s.env,
  });
  return env;
}
