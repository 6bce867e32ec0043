// aider's install inside real Docker sandboxes, where the image decides: sbx's offline base image is Debian's python3
// without python3-venv (the issue's `ensurepip is not available`), and an image built from it with python3 removed has
// none. Each gets sbx's own message with the Dockerfile line to add and the rebuild, never Debian's raw text. (The
// refused package index is tested with the real pip and sbx's real proxy: test/integration/agents/aider-pip.test.ts.)
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { userRecipe } from "../../../src/workspace/init";
import type { Fixture } from "../docker/fixture";
import { acquireFixture, BASE_IMAGE, canRun, done, makeRepo, must, putFile, releaseFixture, removeRepoImages, skipReason } from "./harness";

const tag = Math.random().toString(36).slice(2, 8);
let f: Fixture;
let venvless = "";
let pythonless = "";

describe.skipIf(!canRun)(`aider in Docker sandboxes whose image lacks what it needs${canRun ? "" : ` (skipped: ${skipReason})`}`, () => {
  beforeAll(() => {
    f = acquireFixture();
    venvless = makeRepo(f, `aider-venv-${tag}`);
    pythonless = makeRepo(f, `aider-nopy-${tag}`);
    // The same base with its Python taken out (a team image without one).
    putFile(f, pythonless, "Dockerfile", `FROM ${BASE_IMAGE}\nRUN rm -f /usr/bin/python3 /usr/bin/python3.*\n${userRecipe()}`);
    must(f.git(["commit", "-qam", "no python"], pythonless), "git commit");
    // sbx runs an agent only with a login it can add; this one is never sent anywhere (the install fails first).
    must(f.sbx(["secret", "set", "ANTHROPIC_API_KEY"], { cwd: venvless, stdin: `sk-ant-api03-aider${tag}${"a".repeat(24)}` }), "secret set");
  }, 120_000);

  afterAll(async () => {
    if (venvless) f.sbx(["secret", "rm", "ANTHROPIC_API_KEY"], { cwd: venvless });
    for (const [repo, name] of [[venvless, "a"], [pythonless, "b"]] as const) {
      if (!repo) continue;
      f.sbx(["rm", "--force", name], { cwd: repo });
      removeRepoImages(repo);
    }
    if (f) releaseFixture();
  }, 120_000);

  test("Debian's python3 without python3-venv: sbx's message, the Dockerfile line and the rebuild; Debian's text never shown", async () => {
    const r = await done(f.spawnSbx(["run", "aider", "a", "--", "--version"], { cwd: venvless }));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("sbx: aider is installed into a Python venv, and this sandbox's Python has no venv module with ensurepip (Debian and Ubuntu ship it as python3-venv): add to the sandbox's Dockerfile: RUN apt-get update && apt-get install -y --no-install-recommends python3-venv, then `sbx rebuild a` on the host");
    expect(r.stderr).not.toContain("The virtual environment was not created successfully");
    expect(r.stderr).not.toContain("apt install python3.11-venv");
  }, 300_000);

  test("an image without python3: exit 127, the Dockerfile line for python3 and python3-venv", async () => {
    const r = await done(f.spawnSbx(["run", "aider", "b", "--", "--version"], { cwd: pythonless }));
    expect(r.code).toBe(127);
    expect(r.stderr).toContain("sbx: aider needs python3 (3.10 or newer), which this sandbox lacks: add to the sandbox's Dockerfile: RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-venv, then `sbx rebuild b` on the host");
  }, 300_000);
});
