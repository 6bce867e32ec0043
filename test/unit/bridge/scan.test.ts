// The push scan's reading of `git log -p --cc -a -U0`: which lines count as added (merges included), and which blobs it must read whole.
import { describe, expect, test } from "bun:test";
import { scanLog, SCAN_LOG_ARGS } from "../../../src/bridge/scan";

const KEY = "ghp_" + "Ab12Cd34Ef".repeat(4).slice(0, 36);
const C1 = "1".repeat(40);
const C2 = "2".repeat(40);

describe("scanLog", () => {
  test("one parent, -U0: added lines are scanned with their new line numbers; removed lines are not", () => {
    const log = [
      `commit ${C1}`,
      "",
      "diff --git a/app.env b/app.env",
      "index 1111111111111111111111111111111111111111..2222222222222222222222222222222222222222 100644",
      "--- a/app.env",
      "+++ b/app.env",
      "@@ -2 +2,2 @@",
      `-OLD=${KEY}`,
      "+A=1",
      `+B=${KEY}`,
      "@@ -9,0 +10 @@",
      `+C=${KEY}`,
    ].join("\n");
    const r = scanLog(log);
    expect(r.findings.map((f) => [f.file, f.line, f.commit])).toEqual([
      ["app.env", 3, C1],
      ["app.env", 10, C1],
    ]);
    expect(r.unshown).toEqual([]);
  });

  test("a merge (combined diff): only lines in no parent (all '+') are the merge's own", () => {
    const log = [
      `commit ${C2}`,
      "",
      "diff --cc f.txt",
      "index 1111111111111111111111111111111111111111,2222222222222222222222222222222222222222..3333333333333333333333333333333333333333",
      "--- a/f.txt",
      "+++ b/f.txt",
      "@@@ -1,2 -1,2 +1,4 @@@",
      ` +from-second=${KEY}`,
      `+ from-first=${KEY}`,
      `- gone=${KEY}`,
      `++evil=${KEY}`,
      "  same",
    ].join("\n");
    const r = scanLog(log);
    expect(r.findings.map((f) => [f.file, f.line, f.commit])).toEqual([["f.txt", 3, C2]]);
  });

  test("a combined diff's 'Binary files differ' asks for the whole result blob", () => {
    const blob = "9".repeat(40);
    const log = [`commit ${C2}`, "", "diff --cc x.dat", `index ${"1".repeat(40)},${"2".repeat(40)}..${blob}`, "Binary files differ", "diff --cc gone.dat", `index ${"1".repeat(40)},${"2".repeat(40)}..${"0".repeat(40)}`, "Binary files differ"].join("\n");
    expect(scanLog(log).unshown).toEqual([{ commit: C2, file: "x.dat", blob }]);
  });

  test("added lines that look like headers stay content; a quoted path is unquoted", () => {
    const log = [
      `commit ${C1}`,
      "",
      'diff --git "a/we\\tird" "b/we\\tird"',
      '--- /dev/null',
      '+++ "b/we\\tird"',
      "@@ -0,0 +1,3 @@",
      `+commit ${C2}`,
      "+diff --git a/fake b/fake",
      `+K=${KEY}`,
    ].join("\n");
    expect(scanLog(log).findings.map((f) => [f.file, f.line, f.commit])).toEqual([["we\tird", 3, C1]]);
  });

  test("the git log arguments diff merges, binaries and renames as added text, with no drivers", () => {
    expect([...SCAN_LOG_ARGS]).toEqual(["log", "-p", "--cc", "-a", "-U0", "--full-index", "--no-color", "--no-textconv", "--no-ext-diff", "--no-renames", "--format=commit %H", "--stdin"]);
  });
});
