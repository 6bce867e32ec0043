// l7-rules end to end on Docker: `sbx allow HOST --method … --path …` and `sbx deny HOST --method …` on a real sandbox.
// Inside, curl, Python and Node (as an agent runs them, through the proxy variables, trusting what sbx gives the
// session: a sandbox with a rule and no secret gets sbx's CA too) reach what the rules allow and get a 403 that names
// the fix for the rest; the site never sees a refused request; `sbx policy check` says the same before anything is sent.
// The site runs in a container on a network this test made, with a certificate from a CA the host trusts
// (NODE_EXTRA_CA_CERTS for the daemon); the daemon's lookup of `.test` names is the test seam.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Fixture } from "../docker/fixture";
import { acquireFixture, canRun, makeRepo, must, releaseFixture, removeRepoImages, skipReason, stopDaemon } from "./harness";
import { makeCerts, startSite, type Site, type TestCerts } from "./site";

const tag = Math.random().toString(36).slice(2, 8);

const SITE_SCRIPT = `
const tls = { cert: Bun.file("/certs/c.pem"), key: Bun.file("/certs/k.pem") };
Bun.serve({ hostname: "0.0.0.0", port: 443, tls, fetch: (r) => {
  console.log("SAW " + r.method + " " + new URL(r.url).pathname);
  return new Response("site " + r.method + " " + new URL(r.url).pathname + "\\n");
} });
console.log("site ready");
`;

let f: Fixture;
let repo: string;
let certs: TestCerts;
let site: Site;
let env: Record<string, string>;

function sbx(args: string[]) {
  return f.sbx(args, { cwd: repo, env });
}
const saw = () => site.logs().split("\n").filter((l) => l.startsWith("SAW "));

describe.skipIf(!canRun)(`l7-rules end to end on Docker${skipReason ? ` (skipped: ${skipReason})` : ""}`, () => {
  beforeAll(async () => {
    f = acquireFixture();
    repo = makeRepo(f, `l7-${tag}`);
    certs = makeCerts("sbxt-l7", ["api.test"]);
    site = await startSite({ prefix: "sbxt-l7", script: SITE_SCRIPT, certs });
    const ip = site.ip;
    await stopDaemon(f.user);
    env = { SBX_TEST_ONLY_RESOLVE: JSON.stringify({ "api.test": ip }), NODE_EXTRA_CA_CERTS: certs.ca };
    must(sbx(["create", "t"]), "sbx create t");
    must(sbx(["allow", ip, "--sandbox", "t"]), "sbx allow ip");
    must(sbx(["allow", "api.test", "--method", "GET,HEAD", "--path", "/v1/**", "--sandbox", "t"]), "sbx allow rule");
  }, 240_000);

  afterAll(async () => {
    if (repo) {
      sbx(["rm", "--force", "t"]);
      removeRepoImages(repo);
    }
    site?.remove();
    certs?.remove();
    if (f) await stopDaemon(f.user);
    if (f) releaseFixture();
  }, 60_000);

  test("curl: GET inside the rule reaches the site; DELETE and another path get a 403 naming the fix, and never reach it", () => {
    expect(must(sbx(["run", "t", "--", "curl", "-sS", "-m", "20", "https://api.test/v1/items"]), "curl get").stdout).toBe("site GET /v1/items\n");
    const del = sbx(["run", "t", "--", "curl", "-sS", "-m", "20", "-o", "/dev/null", "-w", "%{http_code}", "-X", "DELETE", "https://api.test/v1/items"]);
    expect(del.stdout).toBe("403");
    const v = sbx(["run", "t", "--", "curl", "-sS", "-m", "20", "-i", "https://api.test/admin"]);
    expect(v.stdout).toContain("403 sbx: api.test:443 is not allowed (sbx allow api.test --method GET --path '/admin' --sandbox t)");
    expect(saw()).toEqual(["SAW GET /v1/items"]);
  });

  test("python3 urllib and node get the same answers", () => {
    const py = "import urllib.request as u,urllib.error as e\nfor m in ('GET','PUT'):\n  try: print(m, u.urlopen(u.Request('https://api.test/v1/py',method=m,data=b'x' if m=='PUT' else None),timeout=20).status)\n  except e.HTTPError as x: print(m, x.code)";
    expect(must(sbx(["run", "t", "--", "python3", "-c", py]), "python3").stdout).toBe("GET 200\nPUT 403\n");
    if (sbx(["run", "t", "--", "sh", "-c", "command -v node"]).code !== 0) return void console.warn("node is not in the base image: its half skipped");
    // Node's https ignores the proxy variables: it takes the transparent path, judged the same.
    const js = "const h=require('https');const go=(m)=>new Promise(r=>h.request('https://api.test/v1/node',{method:m},x=>{x.resume();x.on('end',()=>r(m+' '+x.statusCode))}).on('error',e=>r(m+' '+e.code)).end());(async()=>{console.log(await go('GET'));console.log(await go('DELETE'))})()";
    expect(must(sbx(["run", "t", "--", "node", "-e", js]), "node").stdout).toBe("GET 200\nDELETE 403\n");
  });

  test("a deny carves DELETE out of a whole-host allow; sbx policy check says what the proxy does, before anything is sent", () => {
    must(sbx(["allow", "api.test", "--sandbox", "t"]), "allow whole host");
    must(sbx(["deny", "api.test", "--method", "DELETE", "--sandbox", "t"]), "deny rule");
    expect(must(sbx(["run", "t", "--", "curl", "-sS", "-m", "20", "-X", "PUT", "https://api.test/anything"]), "put").stdout).toBe("site PUT /anything\n");
    expect(sbx(["run", "t", "--", "curl", "-sS", "-m", "20", "-o", "/dev/null", "-w", "%{http_code}", "-X", "DELETE", "https://api.test/anything"]).stdout).toBe("403");
    const check = sbx(["policy", "check", "https://api.test/anything", "--method", "DELETE", "--sandbox", "t", "--json"]);
    expect(check.code).toBe(77);
    expect(JSON.parse(check.stdout)).toMatchObject({ allowed: false, reason: "denied-by-rule", fix: "sbx deny api.test --method DELETE --remove --sandbox t" });
    const ok = sbx(["policy", "check", "https://api.test/anything", "--method", "PUT", "--sandbox", "t"]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain("allowed: PUT /anything on api.test:443");
    expect(saw().filter((l) => l.includes("DELETE"))).toEqual([]);
    must(sbx(["deny", "api.test", "--method", "DELETE", "--sandbox", "t", "--remove"]), "remove the deny");
    // No rule names the host now: an opaque tunnel again, to the site's own certificate (which only the host's CA
    // signs, hence -k here), and DELETE goes through.
    const after = must(sbx(["run", "t", "--", "curl", "-sS", "-k", "-m", "20", "-X", "DELETE", "-w", " %{certs}", "https://api.test/anything"]), "delete now").stdout;
    expect(after).toStartWith("site DELETE /anything\n");
    expect(sbx(["run", "t", "--", "curl", "-sS", "-m", "20", "https://api.test/anything"]).stderr).toContain("SSL certificate problem");
  });
});
