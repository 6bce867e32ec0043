// company-network end to end (issue 39's "done when"): the whole company network on this machine, and sbx on it.
//
//   office netns (the test made it: loopback only)          host                        corp network (--internal)
//   ┌──────────────────────────────────────────────┐
//   │ sbx daemon, sbx CLI  ── 127.0.0.1:3128 ──────┼── unix socket ── squid (Basic auth, ──── intranet host 172.x
//   │ /etc/hosts: intranet.test → 172.x (private)  │                  its own hosts file)     (company CA's cert)
//   │ /etc/resolv.conf → 127.0.0.1:53 (a recorder) │
//   └──────────────────────────────────────────────┘
//   sandbox (Docker, --network none) ── unix socket ── the daemon's proxy
//
// The daemon runs in a network namespace whose only way out is the company's proxy (Debian's squid, wanting
// credentials that sbx keeps as a stored secret): any connection it tried straight to the site would find no route.
// The office's resolver answers intranet.test with a private address from its hosts file (the company's DNS: the
// real getaddrinfo, no test seam), and anything else goes to a DNS server that answers nothing and writes down every
// name it is asked. The site is signed by a CA only the host trusts (config `trust`), and is also the company's git
// server (the repo's origin), npm registry (~/.npmrc) and pip index (pip.conf). One approval (`sbx-egress ask`, then
// the `sbx allow` its 403 advises) lets curl, git, npm and Python in a real Docker sandbox reach it through sbx and
// squid; another name is refused without sbx looking it up. Hostile: the sandbox names the parent itself, sends its
// own Proxy-Authorization, and the name moves to another private address after the approval.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Fixture } from "../docker/fixture";
import { CLI } from "../docker/fixture";
import type { RunResult } from "../../support/test-user";
import { squidMissing, startSquid, type Squid } from "../../support/squid";
import { makeZip } from "../../support/zip";
import { acquireFixture, canRun, containerOf, daemonPid, docker, done, makeRepo, must, releaseFixture, removeRepoImages, skipReason, stopDaemon } from "./harness";
import { makeCerts, startSite, type Site, type TestCerts } from "./site";

const missing = skipReason ?? squidMissing() ?? (Bun.which("nsenter") && Bun.which("unshare") && Bun.which("ip") ? undefined : "nsenter, unshare or ip is missing");
const run = canRun && missing === undefined;

const tag = Math.random().toString(36).slice(2, 8);
const NS = `sbxt-office-${tag}`;
const PROXY_USER = "corp-ann";
const PROXY_PASSWORD = `Sq-${tag}-pa55`;
// Not 3128: inside a sandbox that is sbx's own forwarder.
const PARENT_PORT = 8080;
const HELPER = join(import.meta.dir, "company-office.ts");
const SITE_PROGRAM = join(import.meta.dir, "company-site.ts");

let f: Fixture;
let repo = "";
let work = "";
let certs: TestCerts;
let caFile = "";
let site: Site;
let moved: Site | undefined;
let squid: Squid;
const helpers: Bun.Subprocess<"ignore", "pipe", "pipe">[] = [];
let dnsLog = "";
let hostsFile = "";
let resolvFile = "";

/** argv run inside the office: its network namespace, and its /etc/hosts and /etc/resolv.conf (a mount namespace). */
function inOffice(argv: string[]): string[] {
  return [
    "nsenter", `--net=/run/netns/${NS}`,
    "unshare", "--mount", "--propagation", "slave",
    "sh", "-c", 'mount --bind "$1" /etc/hosts && mount --bind "$2" /etc/resolv.conf && shift 2 && exec "$@"', "office", hostsFile, resolvFile,
    ...argv,
  ];
}

/** sbx as the test user, in the office (the first call starts the daemon there). */
function sbx(args: string[], stdin?: string): RunResult {
  const r = Bun.spawnSync(inOffice([...f.user.prefix(), "bun", CLI, ...args]), { cwd: repo, stdin: stdin === undefined ? "ignore" : Buffer.from(stdin), stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode ?? -1, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}
function sbxAsync(args: string[]) {
  return done(Bun.spawn(inOffice([...f.user.prefix(), "bun", CLI, ...args]), { cwd: repo, stdin: "ignore", stdout: "pipe", stderr: "pipe" }));
}
/** A command in sandbox t. */
const inside = (argv: string[]) => sbx(["run", "t", "--", ...argv]);

function asUser(path: string, data: string): void {
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, data);
  for (let p = path; p.startsWith(f.user.home) && p !== f.user.home; p = join(p, "..")) chownSync(p, f.user.uid, f.user.gid);
}

/** The names the office's DNS server was asked (what the hosts file did not answer). */
function asked(): string[] {
  return readFileSync(dnsLog, "utf8").split("\n").filter((l) => l.startsWith("DNS ")).map((l) => l.slice(4));
}

/** Starts one of company-office.ts's roles and waits for it to say `ready`. */
async function helperUp(argv: string[], vars: Record<string, string>, ready: string): Promise<Bun.Subprocess<"ignore", "pipe", "pipe">> {
  const p = Bun.spawn(argv, { env: { ...process.env, ...vars }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const reader = p.stdout.getReader();
  let out = "";
  const until = Date.now() + 10_000;
  while (!out.includes(ready) && Date.now() < until) {
    const r = await Promise.race([reader.read(), Bun.sleep(until - Date.now()).then(() => null)]);
    if (r === null || r.done) break;
    out += new TextDecoder().decode(r.value);
  }
  reader.releaseLock();
  if (!out.includes(ready)) {
    p.kill("SIGKILL");
    throw new Error(`${vars.ROLE} did not start: ${out}${await new Response(p.stderr).text()}`);
  }
  return p;
}

/**
 * squid's CONNECT lines, each `user host:port`, once its log is still for 300 ms (it writes a tunnel's line when the
 * tunnel closes, which can be after the client has gone).
 */
function connects(): string[] {
  let log = squid.accessLog();
  for (let i = 0; i < 20; i++) {
    Bun.sleepSync(300);
    const again = squid.accessLog();
    if (again === log) break;
    log = again;
  }
  return log
    .split("\n")
    .map((l) => l.trim().split(/\s+/))
    .filter((w) => w[5] === "CONNECT")
    .map((w) => `${w[7]} ${w[6]}`);
}

const sh = (argv: string[], what: string, cwd?: string, env?: Record<string, string>) => {
  const r = Bun.spawnSync(argv, { cwd, stdout: "pipe", stderr: "pipe", ...(env ? { env: { ...process.env, ...env } } : {}) });
  if (r.exitCode !== 0) throw new Error(`${what}: ${r.stderr.toString()}${r.stdout.toString()}`);
  return r.stdout.toString();
};

/** The company's files on its intranet host: git repos, an npm package, a Python wheel (what the site serves). */
function companyFiles(dir: string, appRepo: string): void {
  const git = ["git", "-c", "user.email=it@corp.test", "-c", "user.name=IT", "-c", "init.defaultBranch=main"];
  // Root copies the person's repo (its upload-pack too, which reads only global config for safe.directory).
  const gitconfig = join(work, "gitconfig");
  writeFileSync(gitconfig, "[safe]\n\tdirectory = *\n");
  sh([...git, "clone", "-q", "--bare", appRepo, join(dir, "git", "app.git")], "git clone --bare app", undefined, { GIT_CONFIG_GLOBAL: gitconfig });
  const lib = join(work, "lib");
  mkdirSync(lib, { recursive: true });
  writeFileSync(join(lib, "lib.txt"), "corp lib\n");
  for (const a of [["init", "-q"], ["add", "-A"], ["commit", "-qm", "lib"]]) sh([...git, ...a], `git ${a[0]} lib`, lib);
  sh([...git, "clone", "-q", "--bare", lib, join(dir, "git", "lib.git")], "git clone --bare lib");
  // npm: a packument (/npm/corp-pad, its index.json) and its tarball.
  const pkg = join(work, "pkg", "package");
  mkdirSync(pkg, { recursive: true });
  writeFileSync(join(pkg, "package.json"), JSON.stringify({ name: "corp-pad", version: "1.0.0", main: "index.js" }));
  writeFileSync(join(pkg, "index.js"), 'module.exports = (s) => "corp-pad:" + s;\n');
  const npmDir = join(dir, "npm", "corp-pad");
  mkdirSync(join(npmDir, "-"), { recursive: true });
  const tgz = join(npmDir, "-", "corp-pad-1.0.0.tgz");
  sh(["tar", "-czf", tgz, "-C", join(work, "pkg"), "package"], "tar the package");
  const bytes = readFileSync(tgz);
  const dist = {
    tarball: "https://intranet.test/npm/corp-pad/-/corp-pad-1.0.0.tgz",
    integrity: `sha512-${new Bun.CryptoHasher("sha512").update(bytes).digest("base64")}`,
    shasum: new Bun.CryptoHasher("sha1").update(bytes).digest("hex"),
  };
  writeFileSync(join(npmDir, "index.json"), JSON.stringify({ name: "corp-pad", "dist-tags": { latest: "1.0.0" }, versions: { "1.0.0": { name: "corp-pad", version: "1.0.0", main: "index.js", dist } } }));
  // pip: a simple index page and the wheel it links to, with its hash.
  const wheel = makeZip([
    { name: "corp_tool/__init__.py", data: "VALUE = 'corp tool'\n" },
    { name: "corp_tool-1.0.dist-info/METADATA", data: "Metadata-Version: 2.1\nName: corp-tool\nVersion: 1.0\n" },
    { name: "corp_tool-1.0.dist-info/WHEEL", data: "Wheel-Version: 1.0\nGenerator: sbx-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n" },
    { name: "corp_tool-1.0.dist-info/RECORD", data: "corp_tool/__init__.py,,\ncorp_tool-1.0.dist-info/METADATA,,\ncorp_tool-1.0.dist-info/WHEEL,,\ncorp_tool-1.0.dist-info/RECORD,,\n" },
  ]);
  const whl = "corp_tool-1.0-py3-none-any.whl";
  mkdirSync(join(dir, "pypi", "simple", "corp-tool"), { recursive: true });
  mkdirSync(join(dir, "pypi", "files"), { recursive: true });
  writeFileSync(join(dir, "pypi", "files", whl), wheel);
  const sha = new Bun.CryptoHasher("sha256").update(wheel).digest("hex");
  writeFileSync(join(dir, "pypi", "simple", "corp-tool", "index.html"), `<!DOCTYPE html><html><body><a href="../../files/${whl}#sha256=${sha}">${whl}</a></body></html>\n`);
  sh(["chmod", "-R", "a+rX", dir], "chmod the site");
}

/** npm and a Node that runs it (the host's: the base image has Node 18 and no npm), put where the sandbox finds them. */
function giveNpm(ctr: string): void {
  const npmRoot = "/usr/lib/node_modules/npm";
  const node = Bun.which("node");
  if (!existsSync(npmRoot) || node === null) throw new Error("the host has no npm to lend the sandbox");
  must(docker(["cp", "-L", node, `${ctr}:/usr/local/bin/node20`]), "docker cp node");
  must(docker(["cp", npmRoot, `${ctr}:/usr/local/lib/npm`]), "docker cp npm");
  const wrapper = join(work, "npm");
  writeFileSync(wrapper, '#!/bin/sh\nexec /usr/local/bin/node20 /usr/local/lib/npm/bin/npm-cli.js "$@"\n', { mode: 0o755 });
  must(docker(["cp", wrapper, `${ctr}:/usr/local/bin/npm`]), "docker cp npm wrapper");
}

describe.skipIf(!run)(`company-network end to end on Docker${run ? "" : ` (skipped: ${missing})`}`, () => {
  let ctr = "";
  let siteIp = "";

  beforeAll(async () => {
    f = acquireFixture();
    repo = makeRepo(f, `co-${tag}`);
    work = mkdtempSync("/tmp/sbxt-co-");
    chmodSync(work, 0o755);
    // The company's CA, which only the host trusts (its person keeps it in their home), and the intranet's certificate.
    certs = makeCerts("sbxt-co", ["intranet.test", "other.test"], { caName: "Acme Corp Root CA" });
    caFile = join(f.user.home, "acme-root-ca.pem");
    asUser(caFile, readFileSync(certs.ca, "utf8"));
    // The repo's origin is the company's git server.
    must(f.git(["remote", "add", "origin", "https://intranet.test/git/app.git"], repo), "git remote add");
    const siteDir = join(work, "site");
    companyFiles(siteDir, repo);
    site = await startSite({ prefix: "sbxt-co", script: readFileSync(SITE_PROGRAM, "utf8"), certs, internal: true, mounts: { [siteDir]: "/site" }, env: { SITE_NAME: "intranet" } });
    siteIp = site.ip;
    // The company's proxy: the only thing that reaches the corp network; it knows both names.
    squid = await startSquid({ user: PROXY_USER, password: PROXY_PASSWORD, hosts: { "intranet.test": siteIp, "other.test": siteIp } });
    // The office: a network namespace with loopback only; its hosts file is the company's DNS for intranet.test.
    sh(["ip", "netns", "add", NS], "ip netns add");
    sh(["ip", "-n", NS, "link", "set", "lo", "up"], "lo up");
    hostsFile = join(work, "hosts");
    resolvFile = join(work, "resolv.conf");
    writeFileSync(hostsFile, `127.0.0.1 localhost\n::1 localhost\n${siteIp} intranet.test\n`, { mode: 0o644 });
    writeFileSync(resolvFile, "nameserver 127.0.0.1\noptions attempts:1 timeout:1\n", { mode: 0o644 });
    // The office's way to the proxy: 127.0.0.1:3128 there, carried over a unix socket to squid here.
    const sock = join(work, "parent.sock");
    dnsLog = join(work, "dns.log");
    writeFileSync(dnsLog, "");
    const helper = readFileSync(HELPER, "utf8");
    helpers.push(await helperUp([process.execPath, "-e", helper], { ROLE: "bridge", PARENT_SOCKET: sock, SQUID_PORT: String(squid.port) }, "bridge ready"));
    helpers.push(await helperUp(inOffice([process.execPath, "-e", helper]), { ROLE: "office", PARENT_SOCKET: sock, PARENT_PORT: String(PARENT_PORT), DNS_LOG: dnsLog }, "office ready"));
    // The person's machine: the proxy (its login a stored secret), the CA to trust, the company's npm and pip mirrors.
    await stopDaemon(f.user);
    const cfg = join(f.user.home, ".config", "sbx", "config.json");
    asUser(cfg, JSON.stringify({ proxy: { url: `http://127.0.0.1:${PARENT_PORT}`, credentials: "CORP_PROXY" }, trust: [caFile] }));
    asUser(join(f.user.home, ".npmrc"), "registry=https://intranet.test/npm/\n");
    asUser(join(f.user.home, ".config", "pip", "pip.conf"), "[global]\nindex-url = https://intranet.test/pypi/simple\n");
    must(sbx(["secret", "set", "CORP_PROXY"], `${PROXY_USER}:${PROXY_PASSWORD}`), "sbx secret set CORP_PROXY");
    const created = must(sbx(["create", "t"]), "sbx create t");
    expect(created.stderr).toContain("npm registry=https://intranet.test/npm/");
    ctr = containerOf(repo, "t");
    giveNpm(ctr);
  }, 300_000);

  afterAll(async () => {
    if (repo) {
      sbx(["rm", "--force", "t"]);
      removeRepoImages(repo);
    }
    if (f) {
      await stopDaemon(f.user);
      for (const p of [join(f.user.home, ".config", "sbx", "config.json"), join(f.user.home, ".npmrc"), join(f.user.home, ".config", "pip"), caFile]) if (p) rmSync(p, { recursive: true, force: true });
    }
    for (const p of helpers) {
      p.kill("SIGTERM");
      await p.exited;
    }
    Bun.spawnSync(["ip", "netns", "del", NS]);
    await squid?.stop();
    moved?.remove();
    site?.remove();
    certs?.remove();
    if (work) rmSync(work, { recursive: true, force: true });
    if (f) releaseFixture();
  }, 120_000);

  test("the model holds: the daemon lives in the office, where a direct connection to the site finds no route and squid is the way out", () => {
    const pid = daemonPid(f.user);
    expect(pid).not.toBeNull();
    expect(readlinkSync(`/proc/${pid}/ns/net`)).toBe(`net:[${statSync(`/run/netns/${NS}`).ino}]`);
    const direct = Bun.spawnSync(inOffice(["curl", "-sS", "-m", "5", "--noproxy", "*", "--cacert", certs.ca, "https://intranet.test/hello"]), { stdout: "pipe", stderr: "pipe" });
    expect(direct.exitCode).not.toBe(0);
    expect(direct.stderr.toString()).toMatch(/unreachable|Couldn't connect|Failed to connect/i);
    const via = Bun.spawnSync(inOffice(["curl", "-sS", "-m", "10", "-x", `http://127.0.0.1:${PARENT_PORT}`, "--proxy-user", `${PROXY_USER}:${PROXY_PASSWORD}`, "--cacert", certs.ca, "https://intranet.test/hello"]), { stdout: "pipe", stderr: "pipe" });
    expect({ code: via.exitCode, out: via.stdout.toString() }).toEqual({ code: 0, out: "intranet hello\n" });
  });

  test("before any approval: refused by sbx (403), filed as the name alone, and nobody looked it up", () => {
    const before = connects().length;
    const r = inside(["curl", "-sS", "-m", "20", "https://intranet.test/hello"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("403");
    const pending = JSON.parse(must(sbx(["approvals", "--json"]), "approvals").stdout) as Array<{ sandbox: string; host: string }>;
    expect(pending.filter((p) => p.sandbox === "t").map((p) => p.host)).toEqual(["intranet.test"]);
    expect(connects().length).toBe(before);
  }, 60_000);

  test("one approval: sbx-egress ask says what allowing does; the person's `sbx allow` pairs the name with its private address", async () => {
    const ask = sbxAsync(["run", "t", "--", "sbx-egress", "ask", "intranet.test", "--why", "the company registry", "--wait", "120"]);
    let id: number | undefined;
    for (let i = 0; i < 200 && id === undefined; i++) {
      const pending = JSON.parse(sbx(["approvals", "--json"]).stdout || "[]") as Array<{ id: number; sandbox: string; host: string; reason: string }>;
      id = pending.find((p) => p.sandbox === "t" && p.host === "intranet.test" && p.reason.startsWith("asked:"))?.id;
      if (id === undefined) await Bun.sleep(100);
    }
    expect(id).toBeDefined();
    must(sbx(["allow", "intranet.test", "--sandbox", "t"]), "sbx allow intranet.test");
    const a = await ask;
    expect({ code: a.code, out: a.stdout.trim() }).toEqual({ code: 0, out: "allowed" });
    expect(a.stderr).toContain("allowing it allows intranet.test with that address only");
    let patterns: string[] = [];
    for (let i = 0; i < 30 && !patterns.includes(`intranet.test@${siteIp}`); i++) {
      patterns = (JSON.parse(must(sbx(["allowlist", "--sandbox", "t", "--json"]), "allowlist").stdout) as { sandbox: { patterns: { pattern: string }[] } }).sandbox.patterns.map((p) => p.pattern);
      await Bun.sleep(100);
    }
    expect(patterns.sort()).toEqual(["intranet.test", `intranet.test@${siteIp}`]);
  }, 180_000);

  test("curl reaches the site through sbx and squid, with the company's CA; squid heard sbx's login, by name", () => {
    expect(must(inside(["curl", "-sS", "-m", "20", "https://intranet.test/hello"]), "curl").stdout).toBe("intranet hello\n");
    expect(connects()).toContain(`${PROXY_USER} intranet.test:443`);
  }, 60_000);

  test("git: fetch from the company's git server (the repo's origin) and clone another of its repos, through the bridge and squid", () => {
    must(inside(["git", "fetch", "origin"]), "git fetch origin");
    expect(must(inside(["git", "rev-parse", "origin/main"]), "rev-parse").stdout.trim()).toBe(must(f.git(["rev-parse", "HEAD"], repo), "host HEAD").stdout.trim());
    must(inside(["git", "clone", "https://intranet.test/git/lib.git", "lib"]), "git clone lib");
    expect(must(inside(["cat", "lib/lib.txt"]), "cat").stdout).toBe("corp lib\n");
  }, 120_000);

  test("npm: the company's registry (the host's .npmrc, carried in) answers npm view and npm install", () => {
    expect(must(inside(["npm", "view", "corp-pad", "version"]), "npm view").stdout.trim()).toBe("1.0.0");
    must(inside(["sh", "-c", "mkdir -p /tmp/npmt && cd /tmp/npmt && npm install --no-audit --no-fund corp-pad"]), "npm install");
    expect(must(inside(["sh", "-c", "cd /tmp/npmt && node -e 'console.log(require(\"corp-pad\")(\"ok\"))'"]), "require").stdout).toBe("corp-pad:ok\n");
  }, 120_000);

  test("Python: urllib, and pip download from the company's index (the host's pip.conf, carried in)", () => {
    const py = "import urllib.request as u;print(u.urlopen('https://intranet.test/hello',timeout=20).read().decode(),end='')";
    expect(must(inside(["python3", "-c", py]), "python3").stdout).toBe("intranet hello\n");
    const pip = inside(["pip", "download", "--no-deps", "--no-cache-dir", "-d", "/tmp/pipd", "corp-tool"]);
    expect(pip.code).toBe(0);
    expect(must(inside(["ls", "/tmp/pipd"]), "ls").stdout.trim()).toBe("corp_tool-1.0-py3-none-any.whl");
  }, 120_000);

  test("still one approval: everything above asked for nothing more", () => {
    const pending = JSON.parse(must(sbx(["approvals", "--json"]), "approvals").stdout) as Array<{ sandbox: string; host: string }>;
    expect(pending.filter((p) => p.sandbox === "t")).toEqual([]);
  });

  test("another name is refused by sbx: squid would carry it, but never hears of it, and sbx never looked it up", () => {
    for (const argv of [
      ["curl", "-sS", "-m", "20", "https://other.test/hello"],
      ["python3", "-c", "import urllib.request as u;u.urlopen('https://other.test/hello',timeout=20)"],
    ]) {
      const r = inside(argv);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain("403");
    }
    expect(connects().filter((c) => c.includes("other.test"))).toEqual([]);
    expect(asked().filter((n) => n.includes("other.test") || n.includes("intranet.test"))).toEqual([]);
  }, 60_000);

  test("hostile: the sandbox names the parent proxy itself: no route from inside, and through sbx refused, even published", () => {
    const before = connects().length;
    const direct = inside(["curl", "-sS", "-m", "5", "-x", `http://127.0.0.1:${PARENT_PORT}`, "--proxy-user", `${PROXY_USER}:guess`, "https://intranet.test/hello"]);
    expect(direct.code).not.toBe(0);
    expect(direct.stdout).not.toContain("intranet hello");
    for (const allowed of [false, true]) {
      // The most a person can allow of the host's loopback: publish that port for this sandbox, as a service of theirs.
      if (allowed) must(sbx(["publish", "t", `127.0.0.1:${PARENT_PORT}`]), "publish the parent's address");
      // A CONNECT to its address through sbx, as a sandbox would ask for any host (--noproxy "": 127.0.0.1 is in the
      // sandbox's NO_PROXY, its own loopback), and a plain request to it.
      const r = inside(["curl", "-sS", "-m", "10", "--noproxy", "", "-o", "/dev/null", "-w", "%{http_connect}", `https://127.0.0.1:${PARENT_PORT}/`]);
      expect({ allowed, status: r.stdout }).toEqual({ allowed, status: "403" });
      const plain = inside(["curl", "-sS", "-m", "10", "--noproxy", "", "-o", "/dev/null", "-w", "%{http_code}", `http://127.0.0.1:${PARENT_PORT}/`]);
      expect({ allowed, status: plain.stdout }).toEqual({ allowed, status: "403" });
    }
    must(sbx(["publish", "t", "--remove", `127.0.0.1:${PARENT_PORT}`]), "publish --remove");
    expect(connects().length).toBe(before);
  }, 60_000);

  test("hostile: the sandbox's own Proxy-Authorization reaches nobody: squid sees only sbx's login", () => {
    const before = connects().length;
    const r = inside(["curl", "-sS", "-m", "20", "--proxy-user", "mallory:her-own", "--proxy-basic", "https://intranet.test/hello"]);
    expect(r.stdout).toBe("intranet hello\n");
    const after = connects().slice(before);
    expect(after).toEqual([`${PROXY_USER} intranet.test:443`]);
    expect(squid.accessLog()).not.toContain("mallory");
  }, 60_000);

  test("hostile: the name moves to another private address after the approval: a new decision, filed as the new pairing", async () => {
    // Another host on the company's network (its own certificate from the same CA: TLS alone would not stop it).
    moved = await startSite({ prefix: "sbxt-co-moved", network: site.network, script: readFileSync(SITE_PROGRAM, "utf8"), certs, mounts: { [join(work, "site")]: "/site" }, env: { SITE_NAME: "moved" } });
    const before = connects().length;
    writeFileSync(hostsFile, `127.0.0.1 localhost\n::1 localhost\n${moved.ip} intranet.test\n`);
    try {
      const r = inside(["curl", "-sS", "-m", "20", "https://intranet.test/hello"]);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain("403");
      const pending = JSON.parse(must(sbx(["approvals", "--json"]), "approvals").stdout) as Array<{ sandbox: string; host: string }>;
      const mine = pending.filter((p) => p.sandbox === "t" && p.host.startsWith("intranet.test")).map((p) => p.host);
      expect(mine).toEqual([`intranet.test@${moved.ip}`]);
      expect(connects().length).toBe(before);
    } finally {
      writeFileSync(hostsFile, `127.0.0.1 localhost\n::1 localhost\n${siteIp} intranet.test\n`);
    }
    // Back at the approved address: through again, with nothing new approved.
    expect(must(inside(["curl", "-sS", "-m", "20", "https://intranet.test/hello"]), "curl back").stdout).toBe("intranet hello\n");
    sbx(["deny", `intranet.test@${moved.ip}`, "--sandbox", "t"]);
  }, 120_000);
});
