// How the CLI starts the daemon (auto-start, systemd unit, LaunchAgent): Bun with the flags that keep it from reading the current directory's bunfig.toml and .env.
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { defaultDaemonArgv } from "../../../src/client/autostart";
import { BUN_NO_CWD_CONFIG } from "../../../src/sys/bun-args";

describe("defaultDaemonArgv", () => {
  test("under Bun: bun, the flags, the CLI's entry, daemon", () => {
    const main = join(import.meta.dir, "../../../src/cli/main.ts");
    expect(defaultDaemonArgv("/usr/local/bin/bun")).toEqual(["/usr/local/bin/bun", "--no-env-file", "--config=/dev/null", main, "daemon"]);
    expect(BUN_NO_CWD_CONFIG).toEqual(["--no-env-file", "--config=/dev/null"]);
  });

  test("a compiled sbx binary is its own entry", () => {
    expect(defaultDaemonArgv("/usr/local/bin/sbx")).toEqual(["/usr/local/bin/sbx", "daemon"]);
  });
});
