// Reads the user's config file once per create; missing means defaults, unreadable or invalid refuses.
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { parseConfig, ConfigSchema, type Config } from "../core/config";
import { DEFAULT_PRICES, pricesWith, type Prices } from "../core/llm-budget";
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

/**
 * The LLM price table in force (sbx's list prices, the config file's `llmPrices` over them), read again only when the
 * file changed (the daemon asks at every model call). A file that cannot be read gives sbx's own table, said once per
 * change: a model only the file priced then counts at the dearest price against a usd budget, never as free.
 */
export function priceReader(paths: Paths, env: Env, warn: (m: string, f?: Record<string, unknown>) => void = () => undefined): () => Prices {
  let seen = "";
  let prices: Prices = DEFAULT_PRICES;
  return () => {
    let stamp = "none";
    try {
      const st = statSync(paths.configFile);
      stamp = `${st.mtimeMs}:${st.size}:${st.ino}`;
    } catch {
      // no file: sbx's own table
    }
    if (stamp === seen) return prices;
    seen = stamp;
    try {
      prices = pricesWith(loadConfig(paths, env).llmPrices);
    } catch (e) {
      prices = DEFAULT_PRICES;
      warn("LLM prices: the config file cannot be read; using sbx's own table", { err: (e as Error).message });
    }
    return prices;
  };
}
