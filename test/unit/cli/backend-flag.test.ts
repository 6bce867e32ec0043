// Which backend `sbx create|run` uses without --backend: Docker on Linux, the hidden-account backend on macOS; Docker-only options say which backend they do not apply to.
import { describe, expect, test } from "bun:test";
import { backendFlag } from "../../../src/cli/commands/create";
import { SbxError } from "../../../src/core/errors";

describe("--backend", () => {
  test("the default: docker on Linux, macos on macOS; user is this OS's account backend", () => {
    expect(backendFlag({}, "linux")).toBe("docker");
    expect(backendFlag({}, "darwin")).toBe("macos");
    expect(backendFlag({ backend: "docker" }, "darwin")).toBe("docker");
    expect(backendFlag({ backend: "user" }, "linux")).toBe("linux-user");
  });

  test("a Docker-only option with a user-account backend is a usage error naming both, and whether the backend was the default", () => {
    const err = (() => {
      try {
        backendFlag({ overlay: ["/x"] }, "darwin");
      } catch (e) {
        return e as SbxError;
      }
    })();
    expect(err?.code).toBe("usage");
    expect(err?.message).toBe("--overlay applies to Docker sandboxes, not --backend macos (the default here)");
    expect(err?.hint).toContain("--backend docker");
  });
});
