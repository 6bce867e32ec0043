// The service definitions are pure renders, golden-tested: systemd user unit, systemd system unit, launchd LaunchAgent plist.
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { renderLaunchAgentPlist, renderSystemdSystemUnit, renderSystemdUserUnit, systemdQuote, type ServiceSpec } from "../../../src/os-service/render";

const GOLDEN = join(import.meta.dir, "..", "..", "golden", "service");

/** Compares with the golden file; `UPDATE_GOLDEN=1 bun test …` rewrites it (review the diff). */
function golden(name: string, actual: string): void {
  const file = join(GOLDEN, name);
  if (process.env.UPDATE_GOLDEN === "1" || !existsSync(file)) {
    mkdirSync(GOLDEN, { recursive: true });
    if (process.env.UPDATE_GOLDEN !== "1") throw new Error(`golden file ${file} is missing: run with UPDATE_GOLDEN=1 and review it`);
    writeFileSync(file, actual);
  }
  expect(actual).toBe(readFileSync(file, "utf8"));
}

const spec: ServiceSpec = {
  argv: ["/home/ada/.bun/bin/bun", "/opt/sbx/src/cli/main.ts", "daemon"],
  env: { PATH: "/home/ada/.bun/bin:/usr/local/bin:/usr/bin:/bin" },
  logPath: "/home/ada/.local/state/sbx/daemon.log",
  home: "/home/ada",
};

describe("service renders", () => {
  test("systemd user unit", () => golden("sbx.user.service", renderSystemdUserUnit(spec)));
  test("systemd system unit (Linux-user backend, root)", () =>
    golden("sbx.system.service", renderSystemdSystemUnit({ ...spec, argv: ["/usr/local/bin/sbx", "daemon"], home: "/root" })));
  test("launchd LaunchAgent", () =>
    golden(
      "dev.sbx.daemon.plist",
      renderLaunchAgentPlist({
        ...spec,
        argv: ["/Users/ada/.bun/bin/bun", "/Users/ada/src/sbx & co/src/cli/main.ts", "daemon"],
        logPath: "/Users/ada/.local/state/sbx/daemon.log",
        home: "/Users/ada",
        env: { PATH: "/opt/homebrew/bin:/usr/bin:/bin" },
      }),
    ));

  test("systemd quoting: spaces quoted, % and $ doubled, quotes and backslashes escaped", () => {
    const cases: [string, string][] = [
      ["/usr/bin/bun", "/usr/bin/bun"],
      ["/home/a b/x", '"/home/a b/x"'],
      ["100%", "100%%"],
      ["$HOME", "$$HOME"],
      ['say "hi"\\', '"say \\"hi\\"\\\\"'],
      ["PATH=/a:/b", "PATH=/a:/b"],
    ];
    for (const [input, want] of cases) expect(systemdQuote(input)).toBe(want);
  });

  test("the plist escapes XML and keeps KeepAlive, RunAtLoad and the log paths", () => {
    const xml = renderLaunchAgentPlist({ ...spec, argv: ["/a&b/<bun>", "daemon"] });
    expect(xml).toContain("<string>/a&amp;b/&lt;bun&gt;</string>");
    expect(xml).toMatch(/<key>KeepAlive<\/key>\s*<true\/>/);
    expect(xml).toMatch(/<key>RunAtLoad<\/key>\s*<true\/>/);
    expect(xml.match(/daemon\.log/g)).toHaveLength(2);
  });
});
