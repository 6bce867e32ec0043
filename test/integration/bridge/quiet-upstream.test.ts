// A bridge call outlives a quiet upstream: a fetch whose remote says nothing for 75 s (far longer than Bun's default
// 10 s idle limit, which cut such calls) finishes, and so does a push held up the same way. A bridge runs one call
// per sandbox at a time, so each test has its own sandbox (harness) and the two run side by side.
import { afterAll, describe, expect, test } from "bun:test";
import { commitOn, git, makeHarness, refIn, type Harness } from "./harness";

const QUIET_MS = 75_000;

const harnesses: Harness[] = [];
async function harness(): Promise<Harness> {
  const h = await makeHarness();
  harnesses.push(h);
  return h;
}
afterAll(async () => {
  await Promise.all(harnesses.map((h) => h.stop()));
});

describe("long bridge calls", () => {
  test.concurrent(`git fetch through the bridge from an upstream that stays quiet for ${QUIET_MS / 1000} s completes`, async () => {
    const h = await harness();
    // Something new upstream, so the fetch has objects to bring.
    const other = await commitOn(h.host, "upstream-side", { "u.txt": "u\n" });
    await git(h.host, "push", "-q", h.upstream.repoUrl("proj").replace("http://", `http://x:${h.token}@`), "upstream-side");
    h.upstream.holdNext(QUIET_MS, "service=git-upload-pack");
    const started = Date.now();
    const r = await h.shim(["fetch", "origin", "upstream-side"]);
    expect({ code: r.code, stderr: r.stderr }).toMatchObject({ code: 0 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(QUIET_MS);
    expect(await git(h.clone, "rev-parse", "refs/remotes/origin/upstream-side")).toBe(other);
  }, QUIET_MS * 2);

  test.concurrent(`git push through the bridge to an upstream that stays quiet for ${QUIET_MS / 1000} s completes`, async () => {
    const h = await harness();
    await git(h.clone, "checkout", "-q", "main");
    const sha = await commitOn(h.clone, "slow", { "slow.txt": "slow\n" });
    h.upstream.holdNext(QUIET_MS, "service=git-receive-pack");
    const started = Date.now();
    const r = await h.shim(["push", "origin", "slow"]);
    expect({ code: r.code, stderr: r.stderr }).toMatchObject({ code: 0 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(QUIET_MS);
    expect(await refIn(h.upstreamRepo, "refs/heads/slow")).toBe(sha);
  }, QUIET_MS * 2);
});
