// Sandbox names for completion come from the running daemon, for this repo only, and only names sbx's validator accepts;
// with no repo, no daemon, or a daemon that does not answer in time, there are none (and no daemon is started).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { namesIn, sandboxNamesHere } from "../../../src/client/names";
import { serveInprocDaemon, type InprocDaemon } from "../../support/inproc-daemon";
import { FakeExec } from "../../fakes/exec";

describe("namesIn", () => {
  const answer = (rows: object[]) => ({ sandboxes: rows });
  test("this repo's names, not deleted ones, sorted, each once", () => {
    const json = answer([
      { name: "b", repo: "/r", state: "active" },
      { name: "a", repo: "/r", state: "stopped" },
      { name: "gone", repo: "/r", state: "deleted" },
      { name: "other", repo: "/elsewhere", state: "active" },
      { name: "a", repo: "/r", state: "active" },
    ]);
    expect(namesIn(json, "/r")).toEqual(["a", "b"]);
  });

  // The store refuses such a name too (a CHECK constraint); this is the client's own guard against any daemon.
  test("a name the validator would refuse is left out: no completed word carries what a shell interprets", () => {
    const bad = ["$(touch x)", "`x`", "a b", "a;b", "-rf", "~root", "A", "a\nb", "x".repeat(64), ""];
    expect(namesIn(answer([...bad.map((name) => ({ name, repo: "/r", state: "active" })), { name: "ok-1", repo: "/r", state: "active" }]), "/r")).toEqual(["ok-1"]);
  });

  test("anything that is not the list gives none", () => {
    for (const json of [null, "x", 3, {}, { sandboxes: "x" }, { sandboxes: [null, 1, { name: 2, repo: "/r" }] }]) expect(namesIn(json, "/r")).toEqual([]);
  });
});

describe("sandboxNamesHere", () => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "sbx-names-")));
  const vars = { HOME: join(root, "home"), XDG_STATE_HOME: join(root, "state"), XDG_RUNTIME_DIR: join(root, "run"), XDG_CACHE_HOME: join(root, "cache") };
  const repo = join(root, "repo");
  const paths = { controlSocket: join(root, "run", "sbx", "control.sock") };
  let daemon: InprocDaemon;

  beforeAll(() => {
    mkdirSync(join(repo, ".git"), { recursive: true });
    writeFileSync(join(repo, ".git", "HEAD"), "ref: refs/heads/main\n");
    mkdirSync(join(repo, "sub"));
    daemon = serveInprocDaemon(vars, new FakeExec());
    daemon.store.createSandbox({ name: "demo", repo, backend: "fake" });
    daemon.store.createSandbox({ name: "other", repo: "/somewhere/else", backend: "fake" });
  });
  afterAll(async () => {
    await daemon.stop();
    rmSync(root, { recursive: true, force: true });
  });

  test("from the repo around the directory, or --repo's", async () => {
    expect(await sandboxNamesHere(paths, { cwd: join(repo, "sub"), vars: {} })).toEqual(["demo"]);
    expect(await sandboxNamesHere(paths, { cwd: root, repoFlag: "repo", vars: {} })).toEqual(["demo"]);
  });

  test("none outside a repo, or where only git could say which repo (GIT_DIR set)", async () => {
    expect(await sandboxNamesHere(paths, { cwd: root, vars: {} })).toEqual([]);
    expect(await sandboxNamesHere(paths, { cwd: repo, vars: { GIT_DIR: join(repo, ".git") } })).toEqual([]);
  });

  test("none when no daemon listens, and none is started", async () => {
    const none = { controlSocket: join(root, "run", "nobody", "control.sock") };
    expect(await sandboxNamesHere(none, { cwd: repo, vars: {} })).toEqual([]);
    expect(existsSync(none.controlSocket)).toBe(false);
  });

  test("none when the daemon does not answer in time", async () => {
    const sock = join(root, "mute.sock");
    const mute = Bun.listen({ unix: sock, socket: { data() {} } });
    try {
      // A mute daemon would hold it for ever without the 200 ms bound: the race says it ended by itself.
      const names = sandboxNamesHere({ controlSocket: sock }, { cwd: repo, vars: {} }, 200);
      expect(await Promise.race([names, Bun.sleep(10_000).then(() => "held")])).toEqual([]);
    } finally {
      mute.stop(true);
    }
  });
});
