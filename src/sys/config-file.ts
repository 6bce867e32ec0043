// Reads the user's config file once per create; missing means defaults, unreadable or invalid refuses.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseConfig, ConfigSchema, type Config } from "../core/config";
import type { Env } from "./env";
import type { Paths } from "./paths";

/** Host variables whose values are secrets by convention (their values are refused in the config). */
const SECRET_VARS = /(TOKEN|SECRET|PASSWORD|API_?KEY|PRIVATE_?KEY|CREDENTIAL)/i;

export function loadConfig(paths: Paths, env: Env): Config {
  let text: string;
  try {
    text = readFileSync(paths.configFile, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return ConfigSchema.parse({});
    throw e;
  }
  const known = Object.entries(env.raw).filter(([k]) => SECRET_VARS.test(k)).map(([, v]) => v);
  return parseConfig(text, paths.configFile, known);
}

/** `~/x` → `<home>/x`; other paths as given (relative ones are resolved later against the cwd). */
export function expandHome(p: string, home: string): string {
  return p === "~" ? home : p.startsWith("~/") ? join(home, p.slice(2)) : p;
}
