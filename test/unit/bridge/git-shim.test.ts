// The git shim's reading of the clone: one for-each-ref and one config call decide bridge-or-local and what each push source is.
import { describe, expect, test } from "bun:test";
import { needsBridge, parseSnapshot, resolveFromSnapshot } from "../../../shims/git.ts";

const A = "a".repeat(40), B = "b".repeat(40), C = "c".repeat(40), D = "d".repeat(40);
const refs = [`${A} * refs/heads/feature`, `${B}   refs/heads/main`, `${C}   refs/remotes/origin/main`, `${D}   refs/tags/v1`, `${B}   refs/heads/both`, `${C}   refs/tags/both`].join("\n");
const config = "remote.origin.url\nhttps://github.com/o/r.git\0remote.loc.url\n/srv/repo.git\0branch.feature.remote\nloc\0";

describe("git shim snapshot", () => {
  const s = parseSnapshot(refs, config);
  test("reads refs, the current branch (%(HEAD)) and remote/branch config", () => {
    expect(s.branch).toBe("feature");
    expect(s.refs.get("refs/remotes/origin/main")).toBe(C);
    expect(s.config.get("remote.origin.url")).toBe("https://github.com/o/r.git");
    expect(parseSnapshot(`${A}   refs/heads/x`, "").branch).toBeUndefined();
  });
  test("push sources resolve as git would, or go to git when the snapshot cannot be sure", () => {
    expect(resolveFromSnapshot(s, "main")).toEqual({ sha: B, ref: "refs/heads/main" });
    expect(resolveFromSnapshot(s, "HEAD")).toEqual({ sha: A, ref: "refs/heads/feature" });
    expect(resolveFromSnapshot(s, "refs/tags/v1")).toEqual({ sha: D, ref: "refs/tags/v1" });
    expect(resolveFromSnapshot(s, "origin/main")).toEqual({ sha: C, ref: "refs/remotes/origin/main" });
    expect(resolveFromSnapshot(s, "both")).toBeUndefined(); // ambiguous: tag and branch
    expect(resolveFromSnapshot(s, "main~1")).toBeUndefined();
    expect(resolveFromSnapshot(s, A)).toBeUndefined();
    expect(resolveFromSnapshot(s, "ORIG_HEAD")).toBeUndefined();
    expect(resolveFromSnapshot(s, "nope")).toBeUndefined();
  });
  test("bridge or local: by the remote's URL, the branch's remote when none is named", () => {
    expect(needsBridge(s, "push", ["origin"])).toBe(true);
    expect(needsBridge(s, "push", ["loc"])).toBe(false);
    expect(needsBridge(s, "push", [])).toBe(false); // feature's remote is loc
    expect(needsBridge(parseSnapshot(`${B} * refs/heads/main`, config), "fetch", [])).toBe(true);
    expect(needsBridge(s, "fetch", ["../other"])).toBe(false);
    expect(needsBridge(s, "clone", ["https://github.com/o/r.git"])).toBe(true);
  });
});
