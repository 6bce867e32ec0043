// forOutput: a session's terminal variables for where its output goes (plain-output; the CLI end to end is
// test/integration/daemon/plain-output.test.ts).
import { describe, expect, test } from "bun:test";
import { forOutput } from "../../../src/core/terminal-vars";

const term = { TERM: "xterm-256color", COLORTERM: "truecolor", LANG: "C.UTF-8", LC_ALL: "C.UTF-8" };

describe("plain-output: forOutput", () => {
  test("to a terminal: unchanged", () => {
    expect(forOutput(term, true)).toEqual(term);
  });

  test("to a pipe or a file: NO_COLOR=1 and TERM=dumb, COLORTERM and FORCE_COLOR gone, the locale kept", () => {
    expect(forOutput(term, false)).toEqual({ TERM: "dumb", NO_COLOR: "1", LANG: "C.UTF-8", LC_ALL: "C.UTF-8" });
    // FORCE_COLOR=0 (or false) means no colour: dropped, never passed on, since rich reads any FORCE_COLOR as "force".
    for (const v of ["0", "false"]) expect(forOutput({ ...term, FORCE_COLOR: v }, false)).not.toHaveProperty("FORCE_COLOR");
  });

  test("a FORCE_COLOR the person set (1, 2, 3, true, empty): their colour stays in the pipe, untouched", () => {
    for (const v of ["1", "2", "3", "true", ""]) expect(forOutput({ ...term, FORCE_COLOR: v }, false)).toEqual({ ...term, FORCE_COLOR: v });
  });
});
