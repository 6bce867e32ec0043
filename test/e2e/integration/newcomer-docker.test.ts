// A newcomer's first session, end to end as a person would run it (issue 23): a fresh repo whose dev image has an
// ENTRYPOINT and knows nothing of the user, set up by a devcontainer.json; create with the working tree's changes,
// change the Dockerfile and rebuild, reach the dev server from the host, a shell in tmux that detaches and is joined
// again, then rm. Each step asserts what the person would check by eye. Real CLI, real engine, a real second uid.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import type { Fixture } from "../docker/fixture";
import { BASE_IMAGE, CLI } from "../docker/fixture";
import { acquireFixture, canRun, putFile, docker, makeRepo, must, releaseFixture, removeRepoImages, skipReason } from "./harness";

const hasTmux = Bun.spawnSync(["sh", "-c", "command -v tmux"]).exitCode === 0;
const why = !canRun ? skipReason : "tmux is not installed";
const tag = Math.random().toString(36).slice(2, 8);
const TMUX = `sbx-newcomer-${tag}`;
let f: Fixture;
let repo = "";
const sbx = (args: string[]) => f.sbx(args, { cwd: repo });
const put = (rel: string, data: string | Uint8Array) => putFile(f, repo, rel, data);
const tmux = (...args: string[]) => Bun.spawnSync(["tmux", "-L", TMUX, ...args], { stdout: "pipe", stderr: "pipe" }).stdout.toString();
const pane = (s: string) => tmux("capture-pane", "-p", "-J", "-t", s);
const q = (a: string) => `'${a.replace(/'/g, "'\\''")}'`;

async function until(pred: () => boolean, ms = 20_000): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await Bun.sleep(100)) if (pred()) return true;
  return pred();
}

/** sbx as the test user in a tmux window of its own (a real terminal), its exit code written after it. */
function inTmux(win: string, args: string[], env: Record<string, string> = {}): void {
  const inner = [...f.user.prefix({ TERM: "xterm-256color", ...env }), "bun", CLI, ...args].map(q).join(" ");
  tmux("new-session", "-d", "-s", win, "-x", "160", "-y", "40", "sh", "-c", `cd ${q(repo)} && ${inner}; echo "EXIT=$?"; sleep 60`);
}

describe.skipIf(!canRun || !hasTmux)(`a newcomer's first session on Docker${canRun && hasTmux ? "" : ` — skipped: ${why}`}`, () => {
  let port = 0;
  beforeAll(async () => {
    f = acquireFixture();
    repo = makeRepo(f, `newcomer-${tag}`);
    rmSync(join(repo, "Dockerfile"));
    const probe = createServer();
    port = await new Promise<number>((r) => probe.listen(0, "127.0.0.1", () => r((probe.address() as { port: number }).port)));
    await new Promise<void>((r) => probe.close(() => r()));
    // The dev image a newcomer brings: an ENTRYPOINT of its own, no user of theirs in it.
    // It copies from the repo, so its image's tag moves with the repo: a start compares the Dockerfile itself.
    put(".devcontainer/Dockerfile", `FROM ${BASE_IMAGE}\nCOPY .devcontainer/devcontainer.json /etc/dev-container.json\nRUN echo v1 > /etc/dev-version\nENTRYPOINT ["/bin/false"]\n`);
    put(
      ".devcontainer/devcontainer.json",
      JSON.stringify({ name: "newcomer", build: { dockerfile: "Dockerfile", context: ".." }, forwardPorts: [port], postCreateCommand: "echo set up as $(id -un)" }, null, 2),
    );
    must(f.git(["rm", "-q", "--cached", "Dockerfile"], repo), "git rm");
    must(f.git(["add", "-A"], repo), "git add");
    must(f.git(["commit", "-qm", "devcontainer"], repo), "git commit");
    // Work in progress the newcomer expects to find inside.
    put("NOTES.md", "half-written plan\n");
  }, 60_000);

  afterAll(() => {
    Bun.spawnSync(["tmux", "-L", TMUX, "kill-server"]);
    if (repo) {
      sbx(["rm", "--force", "nc"]);
      removeRepoImages(repo);
    }
    releaseFixture();
  }, 60_000);

  test("create --with-changes: built from devcontainer.json (its ENTRYPOINT no obstacle), the postCreateCommand ran as them, their notes are inside", () => {
    const c = sbx(["create", "--with-changes", "nc"]);
    expect({ code: c.code, err: c.code === 0 ? "" : c.stderr }).toEqual({ code: 0, err: "" });
    expect(c.stdout).toContain("created sandbox nc");
    expect(c.stderr).toContain("image: built from .devcontainer/Dockerfile (from devcontainer.json)");
    expect(c.stderr).toMatch(/building the image: step 1\/\d+: FROM /);
    expect(c.stderr).toContain("carried in 1 changed file as uncommitted changes");
    expect(c.stderr).toContain(`set up as ${f.user.name}`);
    const r = must(sbx(["exec", "nc", "--", "sh", "-c", "cat /etc/dev-version NOTES.md; git status --short; id -un"]), "exec");
    expect(r.stdout).toBe(`v1\nhalf-written plan\n?? NOTES.md\n${f.user.name}\n`);
  }, 300_000);

  test("the Dockerfile changes: the next command says so and how to apply it; rebuild applies it, the notes stay", () => {
    // An edit elsewhere in the repo is not a Dockerfile change (nothing said); the Dockerfile's own edit is.
    put("README", "edited\n");
    expect(sbx(["exec", "nc", "--", "true"]).stderr).not.toContain("sbx rebuild");
    put(".devcontainer/Dockerfile", `FROM ${BASE_IMAGE}\nCOPY .devcontainer/devcontainer.json /etc/dev-container.json\nRUN echo v2 > /etc/dev-version\nENTRYPOINT ["/bin/false"]\n`);
    const r = sbx(["exec", "nc", "--", "true"]);
    expect(r.stderr).toContain("`sbx rebuild nc` applies it");
    must(sbx(["rebuild", "--force", "nc"]), "rebuild");
    expect(must(sbx(["exec", "nc", "--", "cat", "/etc/dev-version", "NOTES.md"]), "exec").stdout).toBe("v2\nhalf-written plan\n");
  }, 300_000);

  test("the dev server inside answers in the host's browser at 127.0.0.1 (forwardPorts)", async () => {
    must(sbx(["exec", "nc", "--", "sh", "-c", `mkdir -p /tmp/site && echo dev-server-up > /tmp/site/index.html && cd /tmp/site && setsid -f python3 -m http.server ${port} >/dev/null 2>&1 </dev/null; sleep 1`]), "serve");
    const body = await fetch(`http://127.0.0.1:${port}/index.html`, { signal: AbortSignal.timeout(5000) }).then((r) => r.text());
    expect(body).toBe("dev-server-up\n");
    expect(must(sbx(["port", "nc"]), "port").stdout).toContain(`127.0.0.1:${port}`);
  }, 120_000);

  test("a shell in a real terminal: an unknown TERM is said and replaced; Ctrl-P Ctrl-Q detaches with the shell running on; --attach joins it again and its exit code comes back", async () => {
    inTmux("first", ["shell", "nc"], { TERM: "xterm-kitty" });
    const said = await until(() => pane("first").includes("TERM=xterm-kitty is not known in this sandbox; using xterm-256color"));
    expect({ said, screen: said ? "" : pane("first") }).toEqual({ said: true, screen: "" });
    // The test user's shell is fish: a line both fish and sh read, whose output differs from what is typed.
    tmux("send-keys", "-t", "first", 'echo IN_4"2" $TERM; sleep 600', "Enter");
    const inSession = await until(() => pane("first").includes("IN_42 xterm-256color"));
    expect({ inSession, screen: inSession ? "" : pane("first") }).toEqual({ inSession: true, screen: "" });
    tmux("send-keys", "-t", "first", "C-p", "C-q");
    expect(await until(() => pane("first").includes("EXIT=0"))).toBe(true);
    const id = /session (\S+) goes on running/.exec(pane("first"))?.[1];
    expect(id).toBeDefined();
    expect(must(sbx(["ps"]), "ps").stdout).toContain(id!);
    inTmux("second", ["shell", "--attach", id!]);
    expect(await until(() => pane("second").includes("IN_42"))).toBe(true); // the recent screen, replayed
    tmux("send-keys", "-t", "second", "C-c");
    tmux("send-keys", "-t", "second", "exit 5", "Enter");
    expect(await until(() => pane("second").includes("EXIT=5"))).toBe(true);
  }, 120_000);

  test("rm: the sandbox, its container and its forward are gone; the notes are still in the working tree", async () => {
    must(sbx(["rm", "--force", "nc"]), "rm");
    expect(docker(["ps", "--all", "--quiet", "--filter", `label=sbx.repo=${repo}`]).stdout.trim()).toBe("");
    const refused = await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(3000) }).then(() => false, () => true);
    expect(refused).toBe(true);
    expect(must(f.git(["status", "--short"], repo), "status").stdout).toBe(" M .devcontainer/Dockerfile\n M README\n?? NOTES.md\n");
  }, 120_000);
});
