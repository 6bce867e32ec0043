// Test preload: keeps tests from touching the real user's state by pointing XDG dirs at a throwaway root.
import { afterAll } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

// sbx reads env only through sys/env.ts, so this is a guard for tests that spawn the CLI, not a requirement of import order.
const root = mkdtempSync(join(tmpdir(), "sbx-test-"));
process.env.SBX_TEST_ROOT = root;
// Removed once every test file has run (a preload's afterAll is global; bun test runs no process "exit" handlers).
afterAll(() => rmSync(root, { recursive: true, force: true }));
process.env.XDG_STATE_HOME = join(root, "state");
process.env.XDG_CONFIG_HOME = join(root, "config");
process.env.XDG_CACHE_HOME = join(root, "cache");
process.env.NO_COLOR = "1";
