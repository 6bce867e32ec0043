// secret-bound and the push scan: a sandbox's own placeholders for its bound secrets (shaped like real keys, meaningless
// anywhere else, and what its code is told to use) do not refuse its push; a real key beside one, or another sandbox's
// placeholder, still does. Real bridge, real shim, real git.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { commitOn, git, makeHarness, refIn, type Harness } from "./harness";

const OWN = "sk_live_Ab3dEf6hIj9kLm2nOp5qRs8t";
const OTHERS = "sk_live_Qq1wEe2rTt3yUu4iOo5pAa6s";
let h: Harness;
beforeAll(async () => {
  h = await makeHarness({ placeholders: () => [OWN] });
});
afterAll(async () => {
  await h.stop();
});

async function pushOf(branch: string, files: Record<string, string>) {
  await git(h.clone, "checkout", "-q", "-B", branch, await refIn(h.upstreamRepo, "refs/heads/main"));
  await commitOn(h.clone, branch, files);
  return h.shim(["push", "origin", branch]);
}

describe("secret-bound: the push scan and a sandbox's placeholders", () => {
  test("its own placeholder in a config file goes out", async () => {
    const r = await pushOf("sbx/t/own", { "config/stripe.env": `STRIPE_KEY=${OWN}\n` });
    expect({ code: r.code, err: r.stderr.includes("looks like") ? r.stderr : "" }).toEqual({ code: 0, err: "" });
    expect(await refIn(h.upstreamRepo, "refs/heads/sbx/t/own")).not.toBe("");
  });

  test("another sandbox's placeholder (any key of that shape) is refused, and so is a real key beside its own", async () => {
    expect((await pushOf("sbx/t/other", { "a.env": `K=${OTHERS}\n` })).code).toBe(77);
    const r = await pushOf("sbx/t/beside", { "b.env": `K=${OWN}\nJ=${OTHERS}\n` });
    expect(r.code).toBe(77);
    expect(r.stderr).toContain("b.env:2");
    expect(await refIn(h.upstreamRepo, "refs/heads/sbx/t/beside")).toBe("");
  });
});
