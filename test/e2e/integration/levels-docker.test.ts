// Policy levels and time-boxed approvals end to end on Docker: one real sandbox, curl and Python through the proxy
// variables and Node 18 (which ignores them: the transparent path), each asking a site over plain HTTP. `locked`
// refuses the npm registry; `balanced` allows the one the repo's package.json and .npmrc name; `open` reaches a public
// host and never a private or host address; an allow --for a time lapses by itself and `sbx logs` says so; --once lets
// one connection through and not a second. The site runs in a container on a network this test made; the daemon's
// lookup of the `.test` names is the test seam (SBX_TEST_ONLY_RESOLVE). Nothing is sent anywhere else.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Fixture } from "../docker/fixture";
import { acquireFixture, canRun, docker, makeRepo, must, putFile, releaseFixture, removeRepoImages, skipReason, stopDaemon } from "./harness";
import { startSite, type Site } from "./site";

const tag = Math.random().toString(36).slice(2, 8);

const SITE_SCRIPT = `
Bun.serve({ hostname: "0.0.0.0", port: 80, fetch: (r) => { console.log("GOT " + r.headers.get("host")); return new Response("site " + r.headers.get("host") + "\\n"); } });
console.log("site ready");
`;

let f: Fixture;
let repo: string;
let ip = "";
let site: Site;
let env: Record<string, string>;

function sbx(args: string[]) {
  return f.sbx(args, { cwd: repo, env });
}

/** What each client inside gets for http://HOST/: its status code, or "error" when it got none. */
function clients(host: string): { curl: string; python3: string; node: string } {
  const url = `http://${host}/`;
  const curl = sbx(["run", "t", "--", "curl", "-sS", "-m", "20", "-o", "/dev/null", "-w", "%{http_code}", url]).stdout.trim();
  const python3 = sbx(["run", "t", "--", "python3", "-c", `import urllib.request,urllib.error\ntry:\n print(urllib.request.urlopen("${url}", timeout=20).status)\nexcept urllib.error.HTTPError as e:\n print(e.code)\nexcept Exception as e:\n print("error", e)`]).stdout.trim();
  // Node 18's http ignores the proxy variables: it takes the transparent path (sbx's DNS stub, then port 80).
  const node = sbx(["run", "t", "--", "node", "-e", `require("http").get("${url}", (r) => { console.log(r.statusCode); r.resume(); }).on("error", (e) => console.log("error", e.code))`]).stdout.trim();
  return { curl, python3, node };
}

const all = (code: string) => ({ curl: code, python3: code, node: code });

function audit(kind: string): Array<{ action: string; detail: Record<string, unknown> }> {
  return must(sbx(["logs", "--sandbox", "t", "--kind", kind, "--json", "-n", "500"]), "sbx logs")
    .stdout.split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

describe.skipIf(!canRun)(`policy levels and time-boxed approvals end to end on Docker${skipReason ? ` (skipped: ${skipReason})` : ""}`, () => {
  beforeAll(async () => {
    f = acquireFixture();
    repo = makeRepo(f, `levels-${tag}`);
    // The person's repo uses npm, from the registry its .npmrc names.
    putFile(f, repo, "package.json", '{"name":"app","version":"1.0.0"}\n');
    putFile(f, repo, ".npmrc", "registry=http://registry.npm.test/\n");
    must(f.git(["add", "-A"], repo), "git add");
    must(f.git(["commit", "-qm", "npm"], repo), "git commit");
    site = await startSite({ prefix: "sbxt-lv", script: SITE_SCRIPT });
    ip = site.ip;
    await stopDaemon(f.user);
    // private.test stands for an inward address no one allowed: the proxy refuses it before connecting anywhere.
    env = { SBX_TEST_ONLY_RESOLVE: JSON.stringify({ "registry.npm.test": ip, "other.test": ip, "lapse.test": ip, "once.test": ip, "private.test": "10.255.255.1" }) };
    must(sbx(["create", "t", "--policy", "locked"]), "sbx create t --policy locked");
    // The site's own (private) address, exactly: a name allowed by a level or an entry reaches it (allowlist-exact);
    // no level ever reaches it by itself.
    must(sbx(["allow", ip, "--sandbox", "t"]), "sbx allow ip");
  }, 240_000);

  afterAll(async () => {
    if (repo) {
      sbx(["rm", "--force", "t"]);
      removeRepoImages(repo);
    }
    site?.remove();
    if (f) await stopDaemon(f.user);
    if (f) releaseFixture();
  }, 60_000);

  test("level-locked: curl, python3 and node are refused the npm registry; sbx list says locked", () => {
    expect(clients("registry.npm.test")).toEqual(all("403"));
    const [item] = JSON.parse(must(sbx(["list", "--json"]), "sbx list").stdout) as { level: string }[];
    expect(item!.level).toBe("locked");
  }, 120_000);

  test("level-balanced: the registry the repo's .npmrc names is allowed (and the npm preset by its package.json); another host is not", () => {
    must(sbx(["policy", "set", "t", "--level", "balanced"]), "sbx policy set balanced");
    expect(clients("registry.npm.test")).toEqual(all("200"));
    expect(clients("other.test")).toEqual(all("403"));
    const v = JSON.parse(must(sbx(["policy", "show", "t", "--json"]), "policy show").stdout) as { allows: { pattern: string; why: string }[] };
    expect(v.allows).toContainEqual({ pattern: "registry.npm.test", why: "npm registry (.npmrc)" });
    expect(v.allows).toContainEqual({ pattern: "registry.npmjs.org", why: "npm registry (package.json)" });
    // The allowed connections name the level as what allowed them (the proxy's audit rows are written in batches).
    let named = false;
    for (let i = 0; i < 40 && !named; i++) {
      named = audit("egress").some((e) => e.action === "allowed" && e.detail.host === "registry.npm.test" && e.detail.source === "level");
      if (!named) Bun.sleepSync(250);
    }
    expect(named).toBe(true);
  }, 120_000);

  test("level-open-never-private: open reaches a named host, never a private, metadata or host address", () => {
    must(sbx(["policy", "set", "t", "--level", "open"]), "sbx policy set open");
    expect(clients("other.test")).toEqual(all("200"));
    expect(clients("private.test")).toEqual(all("403"));
    for (const url of ["http://169.254.169.254/", "http://10.255.255.1/", "http://host.sbx.internal/", "http://[::ffff:169.254.169.254]/"]) {
      const code = sbx(["run", "t", "--", "curl", "-sS", "-m", "20", "-o", "/dev/null", "-w", "%{http_code}", url]).stdout.trim();
      expect({ url, code }).toEqual({ url, code: "403" });
    }
    must(sbx(["policy", "set", "t", "--level", "locked"]), "sbx policy set locked");
    expect(clients("other.test")).toEqual(all("403"));
  }, 180_000);

  test("approval-lapses: an allow --for a time lets clients through, then refuses them by itself, and sbx logs says lapsed", async () => {
    must(sbx(["allow", "lapse.test", "--sandbox", "t", "--for", "10s"]), "sbx allow --for");
    const until = Date.now() + 10_000;
    expect(sbx(["run", "t", "--", "curl", "-sS", "-m", "20", "-o", "/dev/null", "-w", "%{http_code}", "http://lapse.test/"]).stdout.trim()).toBe("200");
    await Bun.sleep(Math.max(0, until - Date.now()) + 500);
    expect(clients("lapse.test")).toEqual(all("403"));
    let lapsed = false;
    for (let i = 0; i < 40 && !lapsed; i++) {
      lapsed = audit("allowlist").some((e) => e.action === "lapsed" && e.detail.pattern === "lapse.test");
      if (!lapsed) await Bun.sleep(250);
    }
    expect(lapsed).toBe(true);
    expect(must(sbx(["logs", "--sandbox", "t", "--kind", "allowlist"]), "sbx logs").stdout).toContain("lapsed");
  }, 180_000);

  test("approval-once: sbx approvals allow N --once lets the next connection through, and not the one after", () => {
    expect(sbx(["run", "t", "--", "curl", "-sS", "-m", "20", "-o", "/dev/null", "-w", "%{http_code}", "http://once.test/"]).stdout.trim()).toBe("403");
    const pending = JSON.parse(must(sbx(["approvals", "--json"]), "sbx approvals").stdout) as { id: number; host: string }[];
    const a = pending.find((p) => p.host === "once.test");
    expect(a).toBeDefined();
    must(sbx(["approvals", "allow", String(a!.id), "--once"]), "sbx approvals allow --once");
    const py = sbx(["run", "t", "--", "python3", "-c", 'import urllib.request\nprint(urllib.request.urlopen("http://once.test/", timeout=20).read().decode().strip())']).stdout.trim();
    expect(py).toBe("site once.test");
    expect(clients("once.test")).toEqual(all("403"));
  }, 120_000);
});
