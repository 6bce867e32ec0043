// untrusted-by-origin: the one rule for which host refs are the person's own.
import { describe, expect, test } from "bun:test";
import { isUserRef } from "../../../src/core/user-refs";

describe("untrusted-by-origin: isUserRef", () => {
  test("the person's branches, tags, remotes' tracking refs, stash and notes are theirs", () => {
    for (const r of ["refs/heads/main", "refs/heads/sbx/demo/x", "refs/tags/v1", "refs/remotes/origin/main", "refs/remotes/fork/sandbox-x", "refs/stash", "refs/notes/commits"]) {
      expect(isUserRef(r)).toBe(true);
    }
  });
  test("what sbx keeps for sandboxes is not, in any case spelling; nor is anything outside refs/", () => {
    for (const r of [
      "refs/remotes/sandbox-demo/main",
      "refs/remotes/Sandbox-demo/main",
      "refs/sbx-retired/demo/20260101T000000Z/main",
      "refs/SBX-Retired/demo/x",
      "refs/sbx-seen/abc",
      "refs/sbx-created/origin/heads/x",
      "refs/sbx/anything",
      "HEAD",
      "sbx-retired/x",
    ]) {
      expect(isUserRef(r)).toBe(false);
    }
  });
});
