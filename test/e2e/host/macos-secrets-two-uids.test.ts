// secret-bound and ca-key-host-only for macOS sandboxes, with two real uids (test/support/linux-mac.ts: the host user and
// each guest are real Linux users, sudo, su, file modes and ACLs are real; only the macOS-only tools are modelled). The
// daemon's part runs as the host user with the umask its LaunchAgent has (077), as on a Mac: the guest's session must
// get its placeholders and read sbx's CA and its npm config at the paths its variables name (the host paths of its
// socket dir: a Mac mounts nothing); a real curl as the guest trusts a site signed by sbx's CA through them; another
// guest cannot read them; no guest reads sbx's CA key, in the host's home (700) or in a state dir outside it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { SandboxSpec } from "../../../src/core/spec";
import type { MacosBackend } from "../../../src/drivers/macos/backend";
import { kitPaths, renderKit } from "../../../src/drivers/macos/install";
import { guestUser, hostTag } from "../../../src/drivers/macos/naming";
import { userSpec, type UserIdentity } from "../../../src/drivers/user-account";
import type { Sandbox } from "../../../src/core/schemas";
import type { Paths } from "../../../src/sys/paths";
import { LinuxMac } from "../../support/linux-mac";
import { cannotCreateUsers, createTestUser, type TestUser } from "../../support/test-user";

const why =
  cannotCreateUsers() ??
  (["/usr/bin/sudo", "/usr/sbin/visudo", "/usr/bin/su", "/usr/bin/setfacl", "/usr/bin/zsh", "/usr/bin/setpriv"].find((p) => !existsSync(p))
    ? "sudo, su, setfacl, setpriv or zsh missing (install.sh installs them)"
    : undefined) ??
  (!existsSync("/etc/sudoers.d") ? "no /etc/sudoers.d on this machine" : undefined) ??
  (Bun.which("curl") ? undefined : "needs curl");

const RANGE = { min: 64200, max: 64299 };
const VALUE = "sk_live_Mac0nlyV4lueQ9wErTy7uIo1p";
const NPM_VALUE = "npm_MacRegistryToken0123456789abcdefghij";
const HELPER = join(import.meta.dir, "..", "..", "support", "mac-daemon-secrets.ts");

function sh(argv: string[]) {
  const r = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode ?? -1, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

describe.skipIf(why !== undefined)(`secret-bound on macOS, with real uids on Linux${why ? ` (skipped: ${why})` : ""}`, () => {
  let host: TestUser;
  let root: string;
  let lm: LinuxMac;
  let b: MacosBackend;
  let sudoers: string;
  let paths: Pick<Paths, "stateDir" | "configDir" | "runtimeDir">;
  let spec: SandboxSpec;
  let other: SandboxSpec;
  let env: Record<string, string>;
  let site: ReturnType<typeof Bun.serve>;

  const identity = (id: string, port: number): UserIdentity => ({
    kind: "user",
    id,
    dir: join(host.home, ".cache", "sandbox", id),
    proxyPort: port,
    hostUser: { name: host.name, uid: host.uid, gid: host.gid, home: host.home, shell: "/bin/zsh" },
  });
  const row = (name: string, ident: UserIdentity): Sandbox =>
    ({ id: 1, name, repo: join(host.home, "src", "demo"), backend: "macos", identity: ident }) as unknown as Sandbox;

  /** As the host user, the way the daemon runs a guest's session: sudo … su - <guest> -f -c …, with the session's variables. */
  const session = (s: SandboxSpec, script: string, vars: Record<string, string> = env) =>
    host.run(b.shellArgv(s, { argv: ["sh", "-c", script], cwd: s.repo, tty: false, env: vars }).map((a) => a.replace("'/usr/bin/sandbox-exec'", `'${lm.standIn}'`)), { cwd: "/" });

  /** The same without blocking this process (where the test's TLS site answers). */
  const sessionAsync = async (s: SandboxSpec, script: string, vars: Record<string, string> = env) => {
    const p = host.spawn(b.shellArgv(s, { argv: ["sh", "-c", script], cwd: s.repo, tty: false, env: vars }).map((a) => a.replace("'/usr/bin/sandbox-exec'", `'${lm.standIn}'`)), { cwd: "/" });
    const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    return { code, stdout, stderr };
  };

  /** The daemon's part, as the host user, under its LaunchAgent's umask (077): answers the session's variables. */
  const daemonStep = (p: typeof paths, name: string, ident: UserIdentity) => {
    const input = { paths: p, name, repo: join(host.home, "src", "demo"), identity: ident, values: { API_TOKEN: VALUE, NPM_TOKEN: NPM_VALUE } };
    const r = host.run(["sh", "-c", 'umask 077; exec "$@"', "sh", process.execPath, HELPER, JSON.stringify(input)], { cwd: "/" });
    if (r.code !== 0) throw new Error(`the daemon's step failed: ${r.stderr}`);
    return JSON.parse(r.stdout) as { env: Record<string, string>; spec: SandboxSpec; leaf: { certPem: string; keyPem: string } };
  };

  beforeAll(async () => {
    host = createTestUser({ groups: [], shell: "/bin/zsh" });
    sh(["chmod", "700", host.home]);
    const repo = join(host.home, "src", "demo");
    for (const argv of [
      ["mkdir", "-p", repo],
      ["git", "-C", repo, "init", "-q", "-b", "main"],
      ["sh", "-c", `cd ${repo} && echo hello > README && git add README && git -c user.name=p -c user.email=p@x commit -qm first`],
    ]) {
      const r = host.run(argv, { cwd: host.home });
      if (r.code !== 0) throw new Error(`${argv.join(" ")}: ${r.stderr}`);
    }
    root = mkdtempSync("/tmp/sbx-macsec-");
    lm = new LinuxMac(root, host, RANGE);
    b = lm.backend();
    sudoers = join("/etc/sudoers.d", `sbx_e2e_${hostTag(host.name)}`);
    const rule = renderKit(host.name, kitPaths(host.name, join(root, "kit"))).sudoers;
    const f = join(root, "rule");
    writeFileSync(f, rule, { mode: 0o440 });
    const check = sh(["visudo", "-cf", f]);
    if (check.code !== 0) throw new Error(`visudo: ${check.stdout}${check.stderr}`);
    writeFileSync(sudoers, rule, { mode: 0o440 });
    // The person's sbx dirs where a Mac has them by default: in its home (700).
    paths = { stateDir: join(host.home, ".local", "state", "sbx"), configDir: join(host.home, ".config", "sbx"), runtimeDir: lm.runtimeDir };
    const ident = identity("a1b2c3d4e5f6", 17201);
    spec = userSpec(paths as Paths, row("demo", ident));
    other = userSpec(paths as Paths, row("other", identity("f6e5d4c3b2a1", 17202)));
    // Bring-up first (the guards' socket dir, its guest's search entries), as the daemon does before any session.
    await b.apply(spec);
    await b.apply(other);
    const out = daemonStep(paths, "demo", ident);
    expect(out.spec.sockets).toEqual(spec.sockets);
    env = out.env;
    // A site on loopback with a certificate from sbx's CA (what the proxy's terminator shows for api.test).
    site = Bun.serve({ hostname: "127.0.0.1", port: 0, tls: { cert: out.leaf.certPem, key: out.leaf.keyPem }, fetch: () => new Response("trusted\n") });
  }, 120_000);

  afterAll(async () => {
    site?.stop(true);
    for (const s of [spec, other]) if (s) await b?.remove(s).catch(() => {});
    rmSync(sudoers ?? "/nonexistent", { force: true });
    sh(["groupdel", `sbx_${hostTag(host?.name ?? "x")}`]);
    host?.remove();
    if (root) rmSync(root, { recursive: true, force: true });
  }, 60_000);

  test("a session gets its placeholder, shaped like the value, and variables naming files in its socket dir", () => {
    const r = session(spec, 'printf "%s\\n" "$API_TOKEN" "$SSL_CERT_FILE" "$NODE_EXTRA_CA_CERTS" "$NPM_CONFIG_GLOBALCONFIG"');
    expect(r.stderr).toBe("");
    const [token, bundle, ca, npmrc] = r.stdout.trimEnd().split("\n");
    expect(token).toMatch(new RegExp(`^sk_live_[A-Za-z0-9]{${VALUE.length - 8}}$`));
    expect(token).not.toBe(VALUE);
    // A Mac mounts nothing: the guest reaches its socket dir at the host's path.
    for (const p of [bundle, ca, npmrc]) expect(p!.startsWith(`${spec.sockets.dir}/`)).toBe(true);
    for (const k of ["CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "GIT_SSL_CAINFO"]) expect(env[k]).toBe(bundle!);
  });

  test("the guest reads sbx's CA, the bundle and its npm config, though the daemon's umask is 077", () => {
    const r = session(spec, 'head -c 27 "$SSL_CERT_FILE"; echo; head -c 27 "$NODE_EXTRA_CA_CERTS"; echo; cat "$NPM_CONFIG_GLOBALCONFIG"');
    expect(r.stderr).toBe("");
    const npmPlaceholder = /_authToken=(\S+)/.exec(r.stdout)?.[1] ?? "";
    expect(r.stdout).toBe(`-----BEGIN CERTIFICATE-----\n-----BEGIN CERTIFICATE-----\n//registry.test/:_authToken=${npmPlaceholder}\n`);
    expect(npmPlaceholder).toMatch(new RegExp(`^npm_[A-Za-z0-9]{${NPM_VALUE.length - 4}}$`));
    expect(r.stdout).not.toContain(NPM_VALUE);
  });

  test("curl as the guest trusts a site signed by sbx's CA through the session's bundle, and nothing else of its own", async () => {
    // Straight to the site (Linux has no pf to send it through the proxy; the terminator's certificate is what it tries).
    const curl = `curl -sS -m 10 --noproxy '*' --resolve api.test:${site.port}:127.0.0.1 https://api.test:${site.port}/`;
    const r = await sessionAsync(spec, curl);
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe("trusted\n");
    // Without the session's variables curl trusts only the system's roots: the same site fails.
    const bare = await sessionAsync(spec, curl, {});
    expect(bare.code).not.toBe(0);
  });

  test("another sandbox's guest cannot read this one's trust files or npm config", () => {
    const r = session(other, `cat ${env.SSL_CERT_FILE} ${env.NODE_EXTRA_CA_CERTS} ${env.NPM_CONFIG_GLOBALCONFIG}`, {});
    expect(r.code).not.toBe(0);
    expect(r.stdout).toBe("");
  });

  test("ca-key-host-only: no guest reads sbx's CA key or lists its dir, in the host's home or in a state dir outside it", () => {
    const key = join(paths.stateDir, "tls", "ca.key");
    expect(sh(["cat", key]).stdout).toContain("PRIVATE KEY");
    const tries = (k: string) => `cat ${k}; ls ${join(k, "..")}`;
    expect(session(spec, tries(key)).stdout).toBe("");
    // A person whose XDG_STATE_HOME is outside their home (a dir every account may traverse): the tls dir's own modes.
    // Its state dir made 0755 (the CLI, run from a shell with umask 022, may make it first): the tls dir and the key
    // are then all that keep a guest out.
    const outside = join(root, "state-outside");
    mkdirSync(join(outside, "sbx"), { recursive: true, mode: 0o755 });
    sh(["chown", "-R", `${host.uid}:${host.gid}`, outside]);
    const p2 = { ...paths, stateDir: join(outside, "sbx"), configDir: join(outside, "config") };
    daemonStep(p2, "demo", identity("a1b2c3d4e5f6", 17201));
    const key2 = join(p2.stateDir, "tls", "ca.key");
    expect(sh(["cat", key2]).stdout).toContain("PRIVATE KEY");
    const r = session(spec, tries(key2));
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("Permission denied");
    // What the guest may read there is the certificate's twin in its own socket dir, never the key.
    expect(session(spec, `grep -c PRIVATE ${env.SSL_CERT_FILE} ${env.NODE_EXTRA_CA_CERTS} || true`).stdout).not.toMatch(/:[1-9]/);
  });
});
