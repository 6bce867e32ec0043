// What `--backend` names on each OS.
import { describe, expect, test } from "bun:test";
import { userBackendKind } from "../../../src/core/backend-kind";

describe("userBackendKind (--backend flag)", () => {
  test("user is linux-user on Linux and macos on a Mac; macos only on a Mac; unknown names refused", () => {
    expect(userBackendKind("linux", "user")).toBe("linux-user");
    expect(userBackendKind("darwin", "user")).toBe("macos");
    expect(userBackendKind("darwin", "macos")).toBe("macos");
    expect(() => userBackendKind("linux", "macos")).toThrow(/only on macOS/);
    expect(() => userBackendKind("win32", "user")).toThrow(/not available/);
    expect(() => userBackendKind("linux", "vm")).toThrow(/unknown backend/);
  });
});
