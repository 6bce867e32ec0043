// `sbx rebuild` (issue 23): a changed Dockerfile reaches the sandbox, said at start and applied on request; what the
// sandbox holds stays (its commits, its home's changes, its allowlist); a failed build changes nothing; an ignored
// --rebuild is an error; open sessions are not ended without --force.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Fixture } from "../docker/fixture";
import { BASE_IMAGE } from "../docker/fixture";
import { userRecipe } from "../../../src/workspace/init";
import { CLI } from "../docker/fixture";
import { acquireFixture, canRun, containerOf, dexec, docker, makeRepo, must, releaseFixture, removeRepoImages, skipReason, waitFor } from "./harness";

const tag = Math.random().toString(36).slice(2, 8);
let f: Fixture;
let repo = "";
const sbx = (args: string[]) => f.sbx(args, { cwd: repo });
const setDockerfile = (extra: string) => {
  writeFileSync(join(repo, "Dockerfile"), `FROM ${BASE_IMAGE}\n${extra}${userRecipe()}`);
};

describe.skipIf(!canRun)(`sbx rebuild on Docker${canRun ? "" : ` — skipped: ${skipReason}`}`, () => {
  beforeAll(() => {
    f = acquireFixture();
    repo = makeRepo(f, `rebuild-${tag}`);
    must(sbx(["create", "rb"]), "sbx create rb");
  }, 180_000);

  afterAll(() => {
    if (repo) {
      sbx(["rm", "--force", "rb"]);
      removeRepoImages(repo);
    }
    releaseFixture();
  }, 60_000);

  test("a changed Dockerfile is said at the next start (exec, shell, run) and by list, with the command that applies it", () => {
    const quiet = sbx(["exec", "rb", "--", "true"]);
    expect(quiet.stderr).not.toContain("Dockerfile changed");
    setDockerfile(`RUN echo v2 > /etc/sbx-test-version\n`);
    for (const verb of ["exec", "shell", "run"]) {
      const r = sbx([verb, "rb", "--", "true"]);
      expect({ verb, code: r.code }).toEqual({ verb, code: 0 });
      expect(r.stderr).toContain("note: the repo's Dockerfile changed since sandbox rb's image was built; `sbx rebuild rb` applies it");
    }
    const l = sbx(["list"]);
    expect(l.stderr).toContain("`sbx rebuild rb` applies it");
    const j = JSON.parse(sbx(["list", "--json"]).stdout) as Array<{ name: string; notes?: string[] }>;
    expect(j.find((s) => s.name === "rb")?.notes?.join("\n")).toContain("Dockerfile changed");
  }, 120_000);

  test("--overlay on an existing sandbox is refused too", () => {
    const r = sbx(["exec", "--overlay", "/tmp", "rb", "--", "true"]);
    expect(r.code).toBe(64);
    expect(r.stderr).toContain("--overlay set up a new sandbox, and rb exists");
  }, 60_000);

  test("--rebuild on an existing sandbox is refused (exit 64), never ignored", () => {
    const r = sbx(["exec", "--rebuild", "rb", "--", "true"]);
    expect(r.code).toBe(64);
    expect(r.stderr).toContain("--rebuild builds a new sandbox's image, and rb exists");
    expect(r.stderr).toContain("sbx rebuild rb");
  }, 60_000);

  test("rebuild: the new image runs; the clone's commits, the overlaid home dirs, the allowlist, published services and bridge switches stay; the rest of the home does not", () => {
    const ctr = containerOf(realpathSync(repo), "rb");
    must(dexec(f, ctr, ["sh", "-c", `echo kept > "$HOME/.claude/home-marker" && echo gone > "$HOME/layer-marker" && git -c user.email=a@b -c user.name=a commit -q --allow-empty -m inside-${tag}`], { workdir: realpathSync(repo) }), "inside");
    must(sbx(["allow", "example.org", "--sandbox", "rb"]), "allow");
    // What sbx keeps of the sandbox beside the driver's own record: a published host service, a bridge switch.
    must(sbx(["publish", "rb", "127.0.0.2:8443"]), "publish");
    must(sbx(["bridge", "rb", "--allow", "ci-files"]), "bridge");
    const r = sbx(["rebuild", "rb"]);
    expect({ code: r.code, err: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, err: "" });
    expect(r.stdout).toMatch(/^rebuilt rb on sbx-/m);
    expect(r.stderr).toContain("outside the clone and the overlaid dirs");
    const after = sbx(["exec", "rb", "--", "sh", "-c", 'cat /etc/sbx-test-version; cat "$HOME/.claude/home-marker"; git log --format=%s -1; test -e "$HOME/layer-marker" && echo kept-layer || echo no-layer']);
    expect(after.stdout).toBe(`v2\nkept\ninside-${tag}\nno-layer\n`);
    expect(after.stderr).not.toContain("Dockerfile changed");
    expect(sbx(["list"]).stderr).not.toContain("Dockerfile changed");
    expect(sbx(["allowlist", "--sandbox", "rb", "--json"]).stdout).toContain("example.org");
    expect(JSON.parse(must(sbx(["publish", "rb", "--json"]), "publish").stdout).published).toEqual(["127.0.0.2:8443"]);
    expect(must(sbx(["bridge", "rb", "--json"]), "bridge").stdout).toContain("ci-files");
    expect(containerOf(realpathSync(repo), "rb")).toBe(ctr); // same name, a new container
    expect(docker(["inspect", "--format", "{{.Config.Image}}", ctr]).stdout.trim()).toMatch(/^sbx-/);
  }, 300_000);

  test("a build that fails changes nothing: the sandbox keeps running on its image", () => {
    const ctr = containerOf(realpathSync(repo), "rb");
    const before = docker(["inspect", "--format", "{{.Id}} {{.Config.Image}}", ctr]).stdout.trim();
    setDockerfile(`RUN echo the-failing-step-said-this && exit 3\n`);
    const r = sbx(["rebuild", "rb"]);
    expect(r.code).not.toBe(0);
    // What failed, where, its last lines and the whole log's path (off a terminal: one progress line per step).
    expect(r.stderr).toMatch(/building the image: step \d+\/(\d+): RUN echo the-failing-step-said-this/);
    expect(r.stderr).toMatch(/failed \(exit 3\) at step \d+\/\d+ \(RUN echo the-failing-step-said-this && exit 3\); its last \d+ lines:/);
    expect(r.stderr).toContain("  the-failing-step-said-this\n");
    const logPath = /The whole log: (\S+\.log)/.exec(r.stderr)?.[1];
    expect(logPath).toBeDefined();
    expect(readFileSync(logPath!, "utf8")).toContain("the-failing-step-said-this");
    expect(docker(["inspect", "--format", "{{.Id}} {{.Config.Image}}", ctr]).stdout.trim()).toBe(before);
    expect(sbx(["exec", "rb", "--", "cat", "/etc/sbx-test-version"]).stdout).toBe("v2\n");
    setDockerfile(`RUN echo v2 > /etc/sbx-test-version\n`);
    expect(readFileSync(join(repo, "Dockerfile"), "utf8")).toContain("v2");
  }, 300_000);

  test("open sessions: refused (75) without --force, nothing rebuilt; with it each is told why it ends; the sessions' history stays", async () => {
    // A terminal session (script(1) gives sbx a terminal; its stdin kept open so the shell waits).
    const line = [...f.user.prefix({ TERM: "xterm-256color" }), "bun", CLI, "shell", "rb"].map((a) => `'${a}'`).join(" ");
    const term = Bun.spawn(["script", "-qfec", line, "/dev/null"], { cwd: repo, stdin: "pipe", stdout: "pipe", stderr: "pipe" });
    try {
      type Ps = { id: string; sandbox: string; exitCode: number | null }[];
      const id = await waitFor(() => (JSON.parse(sbx(["ps", "--json"]).stdout || "[]") as Ps).find((s) => s.sandbox === "rb" && s.exitCode === null)?.id, 20_000);
      expect(id).toBeDefined();
      const ctr = containerOf(realpathSync(repo), "rb");
      const before = docker(["inspect", "--format", "{{.Id}}", ctr]).stdout.trim();
      const refused = sbx(["rebuild", "rb"]);
      expect({ code: refused.code, err: refused.stderr }).toEqual({ code: 75, err: expect.stringContaining("sandbox 'rb' has 1 open session; rebuilding it ends it") });
      expect(refused.stderr).toContain("sbx rebuild --force rb");
      expect(docker(["inspect", "--format", "{{.Id}}", ctr]).stdout.trim()).toBe(before);
      const forced = sbx(["rebuild", "--force", "rb"]);
      expect({ code: forced.code, err: forced.code === 0 ? "" : forced.stderr }).toEqual({ code: 0, err: "" });
      expect(forced.stderr).toContain("ended 1 session(s) of rb (each was told why)");
      const ended = await Promise.race([term.exited.then(() => true), Bun.sleep(20_000).then(() => false)]);
      expect(ended).toBe(true);
      expect(await new Response(term.stdout).text()).toContain("sandbox rb is being rebuilt (sbx rebuild); this session ends.");
      const history = sbx(["logs", "--sandbox", "rb", "--kind", "session", "--json"]).stdout.trim().split("\n").map((l) => JSON.parse(l) as { action: string; detail: { session?: string } });
      expect(history.filter((e) => e.detail.session === id).map((e) => e.action)).toEqual(["session.start", "session.exit"]);
    } finally {
      term.kill();
    }
  }, 300_000);
});
