// The host-side secrets file (`sbx secret set`): a 0600 JSON map under the sbx config dir, read at request time.
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { randomBytes } from "node:crypto";
import { z } from "zod";
import { SbxError } from "../core/errors";

export const SecretName = z
  .string()
  .regex(/^[A-Z][A-Z0-9_]{0,63}$/, "secret names are upper-case letters, digits and _ (e.g. ANTHROPIC_API_KEY), starting with a letter");

const SecretsFile = z.record(z.string(), z.string());

export function secretsFile(configDir: string): string {
  return join(configDir, "secrets.json");
}

/** Reads every secret; a missing file is an empty map, a malformed one an error that says where. */
export function readSecrets(file: string): Record<string, string> {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return {};
    throw e;
  }
  const parsed = SecretsFile.safeParse(JSON.parse(text));
  if (!parsed.success) throw new SbxError("config", `${file} is not a JSON map of names to strings`, { hint: "Fix or remove the file, then `sbx secret set NAME` again." });
  return parsed.data;
}

/** Writes atomically with mode 0600 (written to a 0600 temp file, then renamed). */
function writeSecrets(file: string, data: Record<string, string>): void {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${randomBytes(6).toString("hex")}.tmp`;
  writeFileSync(tmp, JSON.stringify(data, null, 2) + "\n", { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
}

export function setSecret(file: string, name: string, value: string): void {
  SecretName.parse(name);
  if (value === "") throw new SbxError("usage", "empty secret value", { hint: "Pipe the value on stdin: `printf %s \"$TOKEN\" | sbx secret set NAME`." });
  writeSecrets(file, { ...readSecrets(file), [name]: value });
}

/** Removes a secret; returns whether it existed. */
export function removeSecret(file: string, name: string): boolean {
  const all = readSecrets(file);
  if (!(name in all)) return false;
  delete all[name];
  writeSecrets(file, all);
  return true;
}

export function listSecretNames(file: string): string[] {
  return Object.keys(readSecrets(file)).sort();
}
