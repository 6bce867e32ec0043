// No silent failure: a push, fetch or ls-remote to a remote that asks for a login the host has no token for fails with
// the secret's exact name and the command that sets it, never git's raw "could not read Username … terminal prompts
// disabled". Real bridge, real shim, a real token-demanding git server.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { commitOn, makeHarness, type Harness } from "./harness";

let h: Harness;
beforeAll(async () => {
  h = await makeHarness({ noToken: true });
});
afterAll(async () => {
  await h.stop();
});

const port = () => new URL(h.upstream.repoUrl("proj")).port;

describe("no silent failure: the host has no token for the remote", () => {
  for (const [what, args] of [
    ["push", ["push", "origin", "HEAD:refs/heads/sbx/demo/x"]],
    ["fetch", ["fetch", "origin"]],
    ["ls-remote", ["ls-remote", "origin"]],
  ] as const) {
    test(`${what}: names the secret and the command that sets it`, async () => {
      if (what === "push") await commitOn(h.clone, "work", { "f.txt": "x\n" });
      const r = await h.shim([...args]);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain(`sbx secret set GIT_TOKEN_127_0_0_1_${port()}`);
      expect(r.stderr).not.toContain("terminal prompts disabled");
    });
  }
});
