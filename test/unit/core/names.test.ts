// Sandbox names: [a-z0-9][a-z0-9-]*, at most 63 characters, with an error that says what is wrong.
import { describe, expect, test } from "bun:test";
import { SbxError } from "../../../src/core/errors";
import { validateSandboxName } from "../../../src/core/names";

describe("validateSandboxName", () => {
  for (const ok of ["a", "demo", "fix-login", "0day", "a-b-c", "x".repeat(63)]) {
    test(`accepts ${JSON.stringify(ok.length > 10 ? ok.slice(0, 10) + "…" : ok)}`, () => expect(validateSandboxName(ok)).toBe(ok));
  }
  for (const [bad, why] of [
    ["", "empty"],
    ["Demo", "contains 'D'"],
    ["-lead", "must start with a letter or digit"],
    ["a_b", "contains '_'"],
    ["a.b", "contains '.'"],
    ["a/b", "contains '/'"],
    ["x".repeat(64), "at most 63"],
    ["../etc", "contains '.'"],
  ] as const) {
    test(`refuses ${JSON.stringify(bad.slice(0, 12))}: ${why}`, () => {
      let err: unknown;
      try {
        validateSandboxName(bad);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(SbxError);
      expect((err as SbxError).exitCode).toBe(64);
      expect((err as SbxError).message).toContain(why);
      expect((err as SbxError).hint).toContain("lowercase");
    });
  }
});

// Shell completion inserts sandbox names into command lines (quoted all the same): the validator lets in no character
// that bash, zsh or fish would interpret, nor a leading '-' or '~'.
describe("validateSandboxName refuses every character a shell interprets", () => {
  const SHELL_SPECIAL = [..." \t\n$`'\"\\;&|<>()[]{}*?!#~=%^,:@+"];
  test(`refuses each of ${JSON.stringify(SHELL_SPECIAL.join(""))} anywhere in a name, and a leading - or ~`, () => {
    for (const c of SHELL_SPECIAL) {
      for (const name of [`${c}ab`, `a${c}b`, `ab${c}`]) expect(() => validateSandboxName(name)).toThrow(SbxError);
    }
    expect(() => validateSandboxName("-rf")).toThrow(SbxError);
    expect(() => validateSandboxName("~root")).toThrow(SbxError);
  });
});
