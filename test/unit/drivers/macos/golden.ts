// Golden-file check for the macOS backend tests: compare to test/golden/macos/<name>, rewrite when UPDATE_GOLDEN=1.
import { expect } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const DIR = join(import.meta.dir, "../../../golden/macos");

export function golden(name: string, actual: string): void {
  const file = join(DIR, name);
  if (process.env.UPDATE_GOLDEN === "1") {
    mkdirSync(DIR, { recursive: true });
    writeFileSync(file, actual);
    return;
  }
  if (!existsSync(file)) throw new Error(`golden file ${file} is missing; run with UPDATE_GOLDEN=1 to create it`);
  expect(actual).toBe(readFileSync(file, "utf8"));
}
