// company-ca-host-to-sandbox end to end on Docker (issue 39): a site signed by a company's CA, which only the host
// trusts. Without `trust` in sbx's config, curl inside fails the way the issue's user saw ("unable to get local issuer
// certificate"); with `"trust": [the CA file]`, a new session trusts it (the opaque tunnel: the site's own
// certificate), and sbx's proxy verifies it too when it ends the TLS itself (a rule that sees requests), with no
// NODE_EXTRA_CA_CERTS in the daemon's environment. A trust file that leads into the sandbox's tree is refused.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chownSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Fixture } from "../docker/fixture";
import { acquireFixture, canRun, docker, makeRepo, must, releaseFixture, removeRepoImages, skipReason, stopDaemon } from "./harness";
import { makeCerts, startSite, type Site, type TestCerts } from "./site";

const tag = Math.random().toString(36).slice(2, 8);

const SITE_SCRIPT = `
const tls = { cert: Bun.file("/certs/c.pem"), key: Bun.file("/certs/k.pem") };
Bun.serve({ hostname: "0.0.0.0", port: 443, tls, fetch: (r) => new Response("intranet " + new URL(r.url).pathname + "\\n") });
console.log("site ready");
`;

let f: Fixture;
let repo: string;
let certs: TestCerts;
let site: Site;
let caFile = "";
let env: Record<string, string>;

function sbx(args: string[]) {
  return f.sbx(args, { cwd: repo, env });
}
function config(o: Record<string, unknown> | null) {
  const dir = join(f.user.home, ".config", "sbx");
  const file = join(dir, "config.json");
  if (o === null) return rmSync(file, { force: true });
  mkdirSync(dir, { recursive: true });
  for (const p of [join(f.user.home, ".config"), dir]) chownSync(p, f.user.uid, f.user.gid);
  writeFileSync(file, JSON.stringify(o));
  chownSync(file, f.user.uid, f.user.gid);
}

describe.skipIf(!canRun)(`company-ca-host-to-sandbox end to end on Docker${skipReason ? ` (skipped: ${skipReason})` : ""}`, () => {
  beforeAll(async () => {
    f = acquireFixture();
    repo = makeRepo(f, `ca-${tag}`);
    certs = makeCerts("sbxt-ca", ["intranet.test"], { caName: "Acme Corp Root CA" });
    site = await startSite({ prefix: "sbxt-ca", script: SITE_SCRIPT, certs });
    const ip = site.ip;
    // The company's CA where its person keeps it (their home), as a host trusts it.
    caFile = join(f.user.home, "acme-root-ca.pem");
    writeFileSync(caFile, readFileSync(certs.ca), { mode: 0o644 });
    chownSync(caFile, f.user.uid, f.user.gid);
    await stopDaemon(f.user);
    // No NODE_EXTRA_CA_CERTS: the daemon knows the company's CA only from sbx's config.
    env = { SBX_TEST_ONLY_RESOLVE: JSON.stringify({ "intranet.test": ip }) };
    config({});
    must(sbx(["create", "t"]), "sbx create t");
    must(sbx(["allow", `intranet.test@${ip}`, "--sandbox", "t"]), "allow the name at its private address");
  }, 240_000);

  afterAll(async () => {
    if (repo) {
      sbx(["rm", "--force", "t"]);
      removeRepoImages(repo);
    }
    if (f) config(null);
    site?.remove();
    certs?.remove();
    if (caFile) rmSync(caFile, { force: true });
    if (f) await stopDaemon(f.user);
    if (f) releaseFixture();
  }, 60_000);

  test("without trust: the sandbox does not trust the company's CA (what the issue's user saw)", () => {
    const r = sbx(["run", "t", "--", "curl", "-sS", "-m", "20", "https://intranet.test/x"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/SSL certificate problem/);
  });

  test("with trust: a new session trusts it (curl, python), through the opaque tunnel to the site's own certificate", () => {
    config({ trust: [caFile] });
    expect(must(sbx(["run", "t", "--", "curl", "-sS", "-m", "20", "https://intranet.test/x"]), "curl").stdout).toBe("intranet /x\n");
    const py = "import urllib.request as u;print(u.urlopen('https://intranet.test/py',timeout=20).read().decode(),end='')";
    expect(must(sbx(["run", "t", "--", "python3", "-c", py]), "python3").stdout).toBe("intranet /py\n");
  });

  test("sbx's proxy verifies the company's site with it where it ends the TLS (a rule sees the requests)", () => {
    must(sbx(["deny", "intranet.test", "--method", "DELETE", "--sandbox", "t"]), "a rule");
    expect(must(sbx(["run", "t", "--", "curl", "-sS", "-m", "20", "https://intranet.test/judged"]), "curl judged").stdout).toBe("intranet /judged\n");
    expect(sbx(["run", "t", "--", "curl", "-sS", "-m", "20", "-o", "/dev/null", "-w", "%{http_code}", "-X", "DELETE", "https://intranet.test/judged"]).stdout).toBe("403");
    must(sbx(["deny", "intranet.test", "--method", "DELETE", "--sandbox", "t", "--remove"]), "rule removed");
  });

  test("never the other way: a trust file that leads into the sandbox's tree is refused, and doctor says why", () => {
    const clone = join(f.user.home, ".cache", "sandbox");
    const planted = join(f.user.home, "planted-ca.pem");
    const inside = Bun.spawnSync(["find", clone, "-maxdepth", "3", "-type", "d"], { stdout: "pipe" }).stdout.toString().split("\n").filter(Boolean).at(-1)!;
    const target = join(inside, "evil-ca.pem");
    writeFileSync(target, readFileSync(certs.ca));
    chownSync(target, f.user.uid, f.user.gid);
    symlinkSync(target, planted);
    try {
      config({ trust: [planted] });
      const d = sbx(["doctor", "--json"]);
      const check = (JSON.parse(d.stdout) as { checks: { name: string; status: string; detail: string }[] }).checks.find((c) => c.name === "company CAs")!;
      expect(check.status).toBe("fail");
      expect(check.detail).toContain("where sandboxes write");
      // And sessions do not trust it.
      expect(sbx(["run", "t", "--", "curl", "-sS", "-m", "20", "https://intranet.test/x"]).code).not.toBe(0);
    } finally {
      rmSync(planted, { force: true });
      rmSync(target, { force: true });
      config({});
    }
  });
});
