// One resolver of a sandbox's name (sandboxes/resolve.ts): the caller's repo's first, then the one of that name in any
// repo; two elsewhere is a usage error naming --repo; none is one not-found error, the same from every route.
import { afterEach, describe, expect, test } from "bun:test";
import { SbxError } from "../../../src/core/errors";
import { resolveSandbox, type SandboxQuery } from "../../../src/sandboxes/resolve";
import { Store } from "../../../src/store/store";
import { ErrorBodySchema } from "../../../src/daemon/protocol";
import { lifecycle, makeHarness, post, type Harness } from "../../support/daemon-harness";

let store: Store;
afterEach(() => store?.close());

/** git's answer for a cwd: the repo it is in (a prefix match over the repos this world has), or none. */
const repoOf = async (q: SandboxQuery & { cwd: string }): Promise<string> => {
  const at = q.repoFlag ?? q.cwd;
  const hit = ["/a", "/b", "/c"].find((r) => at === r || at.startsWith(`${r}/`));
  if (!hit) throw new SbxError("usage", `not inside a git repository (${at})`, { hint: "Run sbx from inside the repo." });
  return hit;
};

function world(rows: [string, string][]): Store {
  store = new Store(":memory:");
  for (const [repo, name] of rows) store.createSandbox({ name, repo, backend: "fake" });
  return store;
}

const err = (p: Promise<unknown>) => p.then(() => null, (e: unknown) => e as SbxError);

describe("the one resolver", () => {
  test("the caller's repo's sandbox wins over one of the same name in another repo", async () => {
    world([["/a", "demo"], ["/b", "demo"]]);
    expect((await resolveSandbox(store, repoOf, "demo", { cwd: "/b/src" })).repo).toBe("/b");
  });

  test("none in the caller's repo: the one of that name anywhere", async () => {
    world([["/a", "demo"]]);
    expect((await resolveSandbox(store, repoOf, "demo", { cwd: "/c" })).repo).toBe("/a");
    // From outside any repo too.
    expect((await resolveSandbox(store, repoOf, "demo", { cwd: "/tmp" })).repo).toBe("/a");
    expect((await resolveSandbox(store, repoOf, "demo", {})).repo).toBe("/a");
  });

  test("two of that name elsewhere and none here: a usage error (64) that names --repo and both repos", async () => {
    world([["/a", "demo"], ["/b", "demo"]]);
    const e = await err(resolveSandbox(store, repoOf, "demo", { cwd: "/c" }));
    expect(e?.code).toBe("usage");
    expect(e?.exitCode).toBe(64);
    expect(e?.message).toContain("/a, /b");
    expect(e?.hint).toContain("--repo");
  });

  test("a repo the caller names (--repo, or the repo itself) is the only place looked: never another repo's of that name", async () => {
    world([["/a", "demo"]]);
    const flagged = await err(resolveSandbox(store, repoOf, "demo", { cwd: "/", repoFlag: "/b" }));
    expect(flagged?.code).toBe("not_found");
    expect(flagged?.message).toBe("no sandbox 'demo' in /b");
    expect((await err(resolveSandbox(store, repoOf, "demo", { repo: "/c" })))?.code).toBe("not_found");
    // A --repo that is no repo says so (never falls back to anywhere).
    expect((await err(resolveSandbox(store, repoOf, "demo", { cwd: "/", repoFlag: "/nowhere" })))?.message).toContain("not inside a git repository");
  });

  test("the repo the caller found without git stands for its cwd: that repo first, then anywhere", async () => {
    world([["/a", "demo"], ["/b", "other"]]);
    expect((await resolveSandbox(store, async () => { throw new Error("git must not run"); }, "demo", { cwd: "/b", foundRepo: "/b" })).repo).toBe("/a");
    expect((await resolveSandbox(store, async () => { throw new Error("git must not run"); }, "other", { cwd: "/b", foundRepo: "/b" })).repo).toBe("/b");
  });

  test("a removed sandbox is never found, and a name that is no sandbox name is refused before any lookup", async () => {
    const s = world([["/a", "demo"]]);
    s.setSandboxState(s.findSandbox("/a", "demo")!.id, "deleted");
    expect((await err(resolveSandbox(store, repoOf, "demo", { cwd: "/a" })))?.message).toBe("no sandbox 'demo' in /a or any other repo");
    for (const bad of ["../demo", "Demo", "demo/x", "-demo", "x".repeat(64)]) {
      expect((await err(resolveSandbox(store, repoOf, bad, { cwd: "/a" })))?.code).toBe("invalid_name");
    }
  });
});

describe("one not-found error from every route that names a sandbox", () => {
  let h: Harness;
  afterEach(async () => h?.close());

  test("lifecycle, sessions, policy and logs say a missing sandbox the same way, with the same hint", async () => {
    h = makeHarness();
    const bodies = [
      (await lifecycle(h, "stop", { name: "ghost", cwd: "/" })).error,
      (await lifecycle(h, "bridge", { name: "ghost", cwd: "/" })).error,
      ErrorBodySchema.parse(await (await post(h, "/v1/sessions", { name: "ghost", cwd: "/tmp" })).json()),
      ErrorBodySchema.parse(await (await post(h, "/v1/policy/allow", { cwd: "/", sandbox: "ghost", global: false, patterns: ["example.org"] })).json()),
      ErrorBodySchema.parse(await (await h.app.request("/v1/logs?sandbox=ghost")).json()),
    ];
    expect(bodies.map((b) => [b?.error, b?.message, b?.hint])).toEqual(Array(bodies.length).fill(["not_found", "no sandbox 'ghost'", bodies[0]!.hint]));
    expect(bodies[0]!.hint).toContain("sbx list");
  });

  test("two of a name in other repos: every route asks for --repo", async () => {
    h = makeHarness();
    h.store.createSandbox({ name: "demo", repo: "/a", backend: "fake" });
    h.store.createSandbox({ name: "demo", repo: "/b", backend: "fake" });
    const start = (await lifecycle(h, "start", { name: "demo", cwd: "/" })).error;
    const session = ErrorBodySchema.parse(await (await post(h, "/v1/sessions", { name: "demo", cwd: "/tmp" })).json());
    const policy = ErrorBodySchema.parse(await (await post(h, "/v1/policy/allow", { cwd: "/", sandbox: "demo", global: false, patterns: ["example.org"] })).json());
    for (const b of [start, session, policy]) expect([b?.error, b?.hint]).toEqual(["usage", "Say which with --repo, e.g. --repo /a."]);
  });
});
