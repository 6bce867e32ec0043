// The daemon's log lines are key=value and never carry a secret or an auth header.
import { describe, expect, test } from "bun:test";
import { createLogger, formatLine, redact, redactString } from "../../../src/sys/log";

describe("daemon log", () => {
  test("a line is ts, level, msg, then fields as key=value, quoted only when needed", () => {
    const line = formatLine(new Date(0), "info", "guards up", { sandbox: "demo", n: 2, why: "two words" });
    expect(line).toBe('ts=1970-01-01T00:00:00.000Z level=info msg="guards up" sandbox=demo n=2 why="two words"');
  });

  test("secret-named fields are redacted at any depth", () => {
    expect(redact({ token: "abc", headers: { Authorization: "Bearer x", accept: "*/*" }, api_key: "k", GH_TOKEN: "t" })).toEqual({
      token: "[redacted]",
      headers: { Authorization: "[redacted]", accept: "*/*" },
      api_key: "[redacted]",
      GH_TOKEN: "[redacted]",
    });
  });

  test("secret-looking values are redacted wherever they appear", () => {
    const cases: [string, string][] = [
      ["curl -H 'Authorization: Bearer abcdefghijklmnop' x", "curl -H 'Authorization: [redacted] [redacted]' x"],
      ["push with ghp_abcdefghijklmnopqrstuvwxyz0123", "push with [redacted]"],
      ["key sk-ant-api03-abcdefghijklmnopqrst", "key [redacted]"],
      ["https://user:hunter2@github.com/o/r", "https://user:[redacted]@github.com/o/r"],
      ["x-api-key=supersecretvalue rest", "x-api-key=[redacted] rest"],
    ];
    for (const [input, want] of cases) expect(redactString(input)).toBe(want);
    expect(redactString("token abcdefghijkl")).toBe("token [redacted]");
    expect(redactString("nothing to see")).toBe("nothing to see");
  });

  test("the logger applies level and base fields, and redacts on the way out", () => {
    const lines: string[] = [];
    const log = createLogger((l) => lines.push(l), "info", { pid: 1 }, () => new Date(0)).with({ sandbox: "demo" });
    log.debug("hidden");
    log.warn("bridge call", { argv: ["git", "push", "https://x:ghp_abcdefghijklmnopqrstuvwxyz0123@github.com/o/r"], password: "p" });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("level=warn");
    expect(lines[0]).toContain("pid=1 sandbox=demo");
    expect(lines[0]).toContain("password=[redacted]");
    expect(lines[0]).not.toContain("ghp_");
    expect(lines[0]!.endsWith("\n")).toBe(true);
  });
});
