// The renderer's tables fit the terminal: on a terminal no line is wider than it (the free-text columns give way
// first: a path keeps its end, a list wraps), off a terminal nothing is cut; times and --json as sbx shows them.
import { describe, expect, test } from "bun:test";
import { createRender, cutCell, layoutTable, wrapCell, type Io } from "../../../src/cli/render";

const REPO = "/home/someone/src/github.com/acme/a-rather-long-repository-name";

function render(o: { tty: boolean; columns?: number; now?: number }) {
  let stdout = "";
  const io: Io = { stdout: (s) => void (stdout += s), stderr: () => {}, stdoutIsTTY: o.tty, stderrIsTTY: o.tty, ...(o.columns !== undefined ? { stdoutColumns: o.columns } : {}) };
  const r = createRender(io, { NO_COLOR: "1" }, () => o.now ?? 0);
  return { r, out: () => stdout };
}

const width = (l: string) => Bun.stringWidth(l);

describe("cutCell and wrapCell", () => {
  test("a cut is marked with …, at the start for a path, at the end for text; what fits is untouched", () => {
    expect(cutCell("/a/b/c/repo", 8, "start")).toBe("…/c/repo");
    expect(cutCell("a long note here", 8, "end")).toBe("a long …");
    expect(cutCell("short", 8, "end")).toBe("short");
    expect(cutCell("日本語のパス", 5, "end")).toBe("日本…");
  });

  test("wrap breaks at spaces, and inside a word longer than a line; no line is wider than asked", () => {
    expect(wrapCell("api.anthropic.com statsig.anthropic.com sentry.io", 20)).toEqual(["api.anthropic.com", "statsig.anthropic.co", "m sentry.io"]);
    expect(wrapCell("one two three", 7)).toEqual(["one two", "three"]);
    for (const l of wrapCell("x".repeat(45), 10)) expect(l.length).toBeLessThanOrEqual(10);
  });
});

describe("layoutTable", () => {
  const columns = ["NAME", "REPO", "STATE", "NOTE"];
  const rows = [
    ["agent", REPO, "running", "memory limit (8 GiB) hit: 2 killed"],
    ["b", "/r", "stopped", "-"],
  ];
  const fit = { REPO: "start", NOTE: "wrap" } as const;

  test("off a terminal nothing is cut: every cell whole, columns lined up", () => {
    const lines = layoutTable(columns, rows, fit);
    expect(lines[1]).toContain(REPO);
    expect(lines[1]).toContain("memory limit (8 GiB) hit: 2 killed");
    expect(lines[0]!.indexOf("STATE")).toBe(lines[1]!.indexOf("running"));
  });

  test("on a terminal every line fits; the widest free-text column gives way first; fixed columns stay whole", () => {
    for (const max of [100, 80, 60, 50]) {
      const lines = layoutTable(columns, rows, fit, max);
      for (const l of lines) expect({ max, l, fits: width(l) <= max }).toEqual({ max, l, fits: true });
      const text = lines.join("\n");
      for (const whole of ["agent", "running", "stopped", "NAME", "STATE"]) expect(text).toContain(whole);
      // The path keeps its end (the repo's name); the note is all there, over more lines.
      expect(text).toMatch(/…[\w/.-]*name/);
      expect(text.replace(/\s+/g, " ")).toContain("memory limit (8 GiB) hit: 2 killed");
      expect(lines[0]!.indexOf("STATE")).toBe(lines[1]!.indexOf("running"));
    }
  });

  test("a table that fits is not touched", () => {
    expect(layoutTable(columns, rows, fit, 200)).toEqual(layoutTable(columns, rows, fit));
  });

  test("when the columns that give way are not enough, lines are cut at the width", () => {
    const lines = layoutTable(["A", "B"], [["x".repeat(50), "y".repeat(50)]], {}, 40);
    for (const l of lines) expect(width(l)).toBeLessThanOrEqual(40);
    expect(lines[1]!.endsWith("…")).toBe(true);
  });
});

describe("createRender", () => {
  test("table: fits the terminal's width on a terminal, whole off one", () => {
    const t = render({ tty: true, columns: 50 });
    t.r.table(["NAME", "REPO"], [["demo", REPO]], { REPO: "start" });
    for (const l of t.out().trimEnd().split("\n")) expect(width(l)).toBeLessThanOrEqual(50);
    const p = render({ tty: false, columns: 50 });
    p.r.table(["NAME", "REPO"], [["demo", REPO]], { REPO: "start" });
    expect(p.out()).toContain(REPO);
  });

  test("when: relative on a terminal, ISO 8601 off one, - for none; json: times as ISO 8601", () => {
    const now = Date.UTC(2026, 10, 26, 12, 0, 0);
    expect(render({ tty: true, now }).r.when(now - 3 * 60_000)).toBe("3 min ago");
    expect(render({ tty: false, now }).r.when(now - 3 * 60_000)).toBe("2026-11-26T11:57:00Z");
    expect(render({ tty: true }).r.when(null)).toBe("-");
    const j = render({ tty: false });
    j.r.json({ createdAt: now, count: 2 });
    expect(JSON.parse(j.out())).toEqual({ createdAt: "2026-11-26T12:00:00Z", count: 2 });
  });
});
