// The names of sbx's stored secrets as the CLI's notes need them, without zod (`sbx run AGENT` reads them at every
// start): secrets/stored.ts's record of a vault (`secrets-vault.json`), else the keys of sbx's own file. Anything not as
// sbx writes it is null here; the verbs that use the values say what is wrong with it.
import { readFileSync } from "node:fs";
import { join } from "node:path";

/** A stored secret's name (store.ts SecretName's rule). */
const NAME = /^[A-Z][A-Z0-9_]{0,63}$/;

/** The stored names, sorted; null when a file is unreadable or not as sbx writes it. */
export function storedNamesQuick(configDir: string): string[] | null {
  const record = readJson(join(configDir, "secrets-vault.json"));
  if (record === null) return null;
  if (record !== undefined) {
    const names = (record as { names?: unknown; vault?: unknown }).names;
    const vault = (record as { vault?: unknown }).vault;
    if ((vault !== "keychain" && vault !== "secret-service") || typeof (record as { changedAt?: unknown }).changedAt !== "number" || !Array.isArray(names) || !names.every((n) => typeof n === "string" && NAME.test(n))) return null;
    return [...(names as string[])].sort();
  }
  const file = readJson(join(configDir, "secrets.json"));
  if (file === undefined) return [];
  if (file === null || typeof file !== "object" || Array.isArray(file) || !Object.values(file).every((v) => typeof v === "string")) return null;
  return Object.keys(file).sort();
}

/** A file's JSON; undefined when there is no file, null when it cannot be read or parsed. */
function readJson(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "ENOENT" ? undefined : null;
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}
