// The real gh (Debian's) through the bridge, against a GitHub API double on 127.0.0.1 over HTTPS (its own CA): the
// token authenticates gh's requests, yet nothing the sandbox asks gh to print (--jq, --template) can reach it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createBridgeApp, type BridgeDeps } from "../../../src/bridge/server";
import { NO_BRIDGE_SETTINGS, parseSubject, subjectText, withApproval, type BridgeSettings } from "../../../src/core/bridge-settings";
import { makeSiteCert } from "../../../src/demo/cert";
import { createExec } from "../../../src/sys/exec";

const hasGh = Bun.which("gh") !== null;
const TOKEN = "ghp_SecretHostToken0123456789abcdefXYZ";
const PATH = process.env.PATH ?? "/usr/bin:/bin";

let root = "";
let server: ReturnType<typeof Bun.serve> | null = null;
let host = "";
let certFile = "";
const seen: { path: string; auth: string | null; body: string }[] = [];

const PRS = [
  { number: 7, title: "Add widgets", url: "https://example.invalid/pr/7", state: "OPEN", headRefName: "feature", isDraft: false, author: { login: "ann" } },
  { number: 8, title: "Fix sprockets", url: "https://example.invalid/pr/8", state: "OPEN", headRefName: "fix", isDraft: false, author: { login: "bob" } },
];

beforeAll(async () => {
  if (!hasGh) return;
  root = realpathSync(mkdtempSync(join(tmpdir(), "sbx-gh-real-")));
  const cert = await makeSiteCert(createExec({ PATH }), root, ["127.0.0.1"]);
  certFile = cert.certFile;
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: cert.certPem, key: cert.keyPem },
    async fetch(req) {
      const u = new URL(req.url);
      const body = req.method === "POST" ? await req.text() : "";
      seen.push({ path: u.pathname, auth: req.headers.get("authorization"), body });
      if (u.pathname === "/api/graphql" && body.includes("PullRequestList")) {
        return Response.json({ data: { repository: { pullRequests: { totalCount: PRS.length, nodes: PRS, pageInfo: { hasNextPage: false, endCursor: null } } } } });
      }
      if (u.pathname === "/api/v3/repos/acme/widgets/pulls" && req.method === "GET") return Response.json(PRS.map((p) => ({ number: p.number, title: p.title })));
      if (u.pathname === "/api/graphql") return Response.json({ data: { repository: { name: "widgets", nameWithOwner: "acme/widgets", description: "d", url: "https://x/acme/widgets" } } });
      return Response.json({ message: "Not Found" }, { status: 404 });
    },
  });
  host = `127.0.0.1:${server.port}`;
});

afterAll(() => {
  server?.stop(true);
  if (root) rmSync(root, { recursive: true, force: true });
});

function bridge(settings: BridgeSettings | (() => BridgeSettings) = NO_BRIDGE_SETTINGS, ask?: BridgeDeps["ask"]) {
  const exec = createExec({ PATH });
  const repo = join(root, `host-${seen.length}-${Math.random().toString(36).slice(2, 6)}`);
  mkdirSync(repo);
  const git = (...a: string[]) => Bun.spawnSync(["git", "-C", repo, ...a], { env: { PATH, HOME: "/nonexistent", GIT_CONFIG_NOSYSTEM: "1" } });
  git("init", "-q", "-b", "main");
  git("remote", "add", "origin", `https://${host}/acme/widgets.git`);
  const ws = join(repo, "..", `${repo.split("/").pop()}-clone`);
  mkdirSync(ws);
  const app = createBridgeApp({
    sandbox: { id: "id1", name: "demo", workspace: ws, workspaceView: "/home/u/widgets", repo },
    gateDir: join(repo, "..", `${repo.split("/").pop()}-gate`),
    secrets: () => ({ [`GIT_TOKEN_127_0_0_1_${server!.port}`]: TOKEN }),
    audit: () => undefined,
    exec,
    path: PATH,
    tlsEnv: { SSL_CERT_FILE: certFile },
    settings: typeof settings === "function" ? settings : () => settings,
    ...(ask ? { ask } : {}),
  });
  return async (args: string[]) => {
    const res = await app.request("/v1/run", { method: "POST", body: `${JSON.stringify({ tool: "gh", args, cwd: "/home/u/widgets", branch: "feature" })}\n` });
    const frames = (await res.text()).trim().split("\n").map((l) => JSON.parse(l) as { t: string; d?: string; code?: number });
    return { out: frames.filter((f) => f.t === "out").map((f) => f.d).join(""), err: frames.filter((f) => f.t === "err").map((f) => f.d).join(""), code: frames.at(-1)?.code };
  };
}

describe.skipIf(!hasGh)(`the real gh through the bridge${hasGh ? "" : " (skipped: gh is not installed; apt-get install gh)"}`, () => {
  test("formatter-reads-of-the-environment: --jq '$ENV' and env lookups print no token; control: the same gh with the token in its environment prints it", async () => {
    const call = bridge();
    const r = await call(["pr", "list", "--json", "number,title", "--jq", "$ENV"]);
    expect(r.code).toBe(0);
    expect(r.out).toContain("GH_CONFIG_DIR");
    expect(r.out).not.toContain(TOKEN);
    expect(r.out).not.toContain("[REDACTED]"); // not caught by redaction: it was never there
    const env2 = await call(["pr", "list", "--json", "number", "--jq", 'env | to_entries | map(.value) | join(",")']);
    expect(env2.out).not.toContain(TOKEN.slice(4, 20));
    // gh did authenticate, with the host's token, from the private hosts.yml.
    expect(seen.some((s) => s.auth === `token ${TOKEN}`)).toBe(true);
    // Control: had gh the token in its environment, the same formatter would hand it over.
    // (Spawned, not spawnSync: the API double answers from this process.)
    const ctl = Bun.spawn(["gh", "pr", "list", "--repo", `${host}/acme/widgets`, "--json", "number", "--jq", "$ENV.GH_ENTERPRISE_TOKEN"], {
      env: { PATH, HOME: root, GH_CONFIG_DIR: join(root, "empty-gh"), GH_HOST: host, GH_ENTERPRISE_TOKEN: TOKEN, SSL_CERT_FILE: certFile },
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(await new Response(ctl.stdout).text()).toContain(TOKEN);
  });

  test("ordinary agent use works: pr list filtered with --jq and with --template, repo view, --version, auth status", async () => {
    const call = bridge();
    const jq = await call(["pr", "list", "--json", "number,title", "--jq", ".[] | select(.number == 8) | .title"]);
    expect(jq).toMatchObject({ code: 0, out: "Fix sprockets\n" });
    const tpl = await call(["pr", "list", "--json", "number,title", "--template", "{{range .}}#{{.number}} {{.title}};{{end}}"]);
    expect(tpl).toMatchObject({ code: 0, out: "#7 Add widgets;#8 Fix sprockets;" });
    const view = await call(["repo", "view", "--json", "nameWithOwner", "--jq", ".nameWithOwner"]);
    expect(view).toMatchObject({ code: 0, out: "acme/widgets\n" });
    const v = await call(["--version"]);
    expect(v.code).toBe(0);
    expect(v.out).toContain("gh version");
    const st = await call(["auth", "status"]);
    expect(st.code).toBe(0);
    expect(st.out).toContain(`Logged in to ${host} through the sbx bridge`);
    expect(`${st.out}${st.err}`).not.toContain(TOKEN);
  });

  test("gh api: off by default; allowed for this sandbox, a GET of this repository's paths works, another's is refused", async () => {
    expect((await bridge()(["api", "repos/{owner}/{repo}/pulls"])).code).toBe(77);
    const call = bridge({ ...NO_BRIDGE_SETTINGS, allow: ["gh-api"], repos: [] });
    const r = await call(["api", "repos/{owner}/{repo}/pulls", "--jq", ".[].title"]);
    expect(r).toMatchObject({ code: 0, out: "Add widgets\nFix sprockets\n" });
    expect((await call(["api", "repos/acme/widgets/pulls", "--jq", "length"])).out).toBe("2\n");
    const before = seen.length;
    for (const args of [["api", "repos/evil/other/pulls"], ["api", "user"], ["api", "-X", "POST", "repos/{owner}/{repo}/issues"]]) expect((await call(args)).code).toBe(77);
    expect(seen.length).toBe(before);
  });

  test("-R of a repository the user added for this sandbox (--allow-repo) goes to that repository, with the token", async () => {
    const call = bridge({ ...NO_BRIDGE_SETTINGS, allow: [], repos: [`https://${host}/acme/other`] });
    const before = seen.length;
    const r = await call(["pr", "list", "-R", `${host}/acme/other`, "--json", "number", "--jq", "length"]);
    expect(r).toMatchObject({ code: 0, out: "2\n" });
    const asked = seen.slice(before).find((q) => q.body.includes("PullRequestList"))!;
    expect(asked.body).toContain('"repo":"other"');
    expect(asked.auth).toBe(`token ${TOKEN}`);
  });

  test("another repository by -R waits in the approvals queue; allowed there, the next call goes to it with the token", async () => {
    let settings: BridgeSettings = NO_BRIDGE_SETTINGS;
    const asked: string[] = [];
    const call = bridge(
      () => settings,
      (subject) => (asked.push(subjectText(subject)), { id: 41, count: 1 }),
    );
    const before = seen.length;
    const r = await call(["pr", "list", "-R", "acme/other", "--json", "number", "--jq", "length"]);
    expect(r.code).toBe(77);
    expect(r.err).toContain("approval 41 is waiting");
    expect(asked).toEqual([`repo https://${host}/acme/other`]);
    expect(seen.length).toBe(before);
    settings = withApproval(settings, parseSubject(asked[0]!)!);
    const ok = await call(["pr", "list", "-R", "acme/other", "--json", "number", "--jq", "length"]);
    expect(ok).toMatchObject({ code: 0, out: "2\n" });
    expect(seen.slice(before).find((q) => q.body.includes("PullRequestList"))!.body).toContain('"repo":"other"');
  });

  test("another repository by -R/--repo is refused before gh runs", async () => {
    const call = bridge();
    const before = seen.length;
    for (const args of [["pr", "list", "-R", "evil/other"], ["pr", "list", "--repo=evil/other"], ["repo", "view", "evil/other"]]) {
      const r = await call(args);
      expect(r.code).toBe(77);
    }
    expect(seen.length).toBe(before);
  });
});
