// Where a secret's value is kept on the host: the macOS Keychain, the Secret Service (GNOME Keyring, KeePassXC, KWallet)
// when a session bus answers, else sbx's 0600 file. Values never go on a command line: each tool reads them on stdin.
import { SbxError } from "../core/errors";
import type { Exec } from "../sys/exec";
import { readSecrets, removeSecret, setSecret } from "./store";

export type VaultKind = "keychain" | "secret-service" | "file";

export interface Vault {
  readonly kind: VaultKind;
  /** Where it is, for `sbx secret list` and doctor ("the login keychain", "the Secret Service", the file's path). */
  readonly where: string;
  /** The value, or null when the vault has none by that name. */
  get(name: string): Promise<string | null>;
  set(name: string, value: string): Promise<void>;
  /** Whether there was one. */
  remove(name: string): Promise<boolean>;
}

/** The service name every sbx item carries in a keychain or the Secret Service (the item is `sbx` + the secret's name). */
export const VAULT_SERVICE = "sbx";

/**
 * Which sbx an item belongs to: its config dir. Two sbx setups of one person (another SBX_HOME, a test's) share the
 * keychain and the Secret Service; each item says whose it is, so one never reads or removes another's.
 */
export interface VaultScope {
  /** sbx's config dir, absolute. */
  readonly dir: string;
}

/** Pure: the keychain's service for a scope: `sbx` for the default config dir's, `sbx:<dir>` for any other. */
export function keychainService(scope: VaultScope, defaultDir?: string): string {
  return scope.dir === defaultDir ? VAULT_SERVICE : `${VAULT_SERVICE}:${scope.dir}`;
}

/** sbx's own 0600 file (`<config>/secrets.json`). */
export function fileVault(file: string): Vault {
  return {
    kind: "file",
    where: file,
    get: async (name) => readSecrets(file)[name] ?? null,
    set: async (name, value) => setSecret(file, name, value),
    remove: async (name) => removeSecret(file, name),
  };
}

function failed(what: string, r: { exitCode: number; stderr: string }, hint: string): never {
  throw new SbxError("unavailable", `${what} failed (exit ${r.exitCode}): ${r.stderr.trim().split("\n").slice(-1)[0] ?? ""}`, { hint });
}

/** Pure: the `security -i` line that stores a value, as hex (`-X`): no quoting to get wrong, and never on argv. */
export function keychainAddLine(name: string, value: string, service = VAULT_SERVICE): string {
  const hex = Buffer.from(value, "utf8").toString("hex");
  // The service is quoted for `security -i`'s own word splitting; a config dir with a quote in it is refused first.
  return `add-generic-password -U -s "${service}" -a ${name} -l "sbx ${name}" -X ${hex}\n`;
}

function quotable(service: string): string {
  if (/["\\\n]/.test(service)) throw new SbxError("config", `sbx's config dir ${JSON.stringify(service)} holds a quote, backslash or newline: the keychain cannot name it`, { hint: "Use a config dir without those characters (SBX_HOME)." });
  return service;
}

/**
 * The person's login keychain (macOS). `o.keychain` names the keychain file, for a daemon that runs as root and reads
 * the person's (its own search list is the system's); without it, the caller's default search list.
 * runs: security find-generic-password -s SERVICE -a NAME -w [KEYCHAIN]; security -i (stdin: add-generic-password …
 *       -X HEX); security delete-generic-password -s SERVICE -a NAME [KEYCHAIN]
 */
export function keychainVault(exec: Exec, o: { service?: string; keychain?: string } = {}): Vault {
  const hint = "Unlock the login keychain (`security unlock-keychain`), or see `sbx doctor`.";
  const service = quotable(o.service ?? VAULT_SERVICE);
  const file = o.keychain ? [o.keychain] : [];
  return {
    kind: "keychain",
    where: "the login keychain",
    async get(name) {
      const r = await exec.run(["security", "find-generic-password", "-s", service, "-a", name, "-w", ...file], { check: false, timeoutMs: 10_000 });
      // 44: errSecItemNotFound's exit status.
      if (r.exitCode === 44) return null;
      if (r.exitCode !== 0) failed(`reading ${name} from the keychain`, r, hint);
      return r.stdout.replace(/\n$/, "");
    },
    async set(name, value) {
      const r = await exec.run(["security", "-i"], { stdin: keychainAddLine(name, value, service), check: false, timeoutMs: 10_000 });
      if (r.exitCode !== 0 || /error/i.test(r.stderr)) failed(`storing ${name} in the keychain`, r, hint);
    },
    async remove(name) {
      const r = await exec.run(["security", "delete-generic-password", "-s", service, "-a", name, ...file], { check: false, timeoutMs: 10_000 });
      if (r.exitCode === 44) return false;
      if (r.exitCode !== 0) failed(`removing ${name} from the keychain`, r, hint);
      return true;
    },
  };
}

/**
 * The Secret Service of the person's session (freedesktop.org; libsecret's `secret-tool`). Each item carries the
 * scope's config dir as the attribute `dir`, so an item of another sbx setup never matches.
 * runs: secret-tool lookup service sbx dir DIR name NAME; secret-tool store --label "sbx NAME" service sbx dir DIR
 *       name NAME (value on stdin); secret-tool clear service sbx dir DIR name NAME
 */
export function secretServiceVault(exec: Exec, scope?: VaultScope): Vault {
  const hint = "Is the keyring unlocked? (`secret-tool lookup service sbx name X` should answer at once.) See `sbx doctor`.";
  const attrs = (name: string) => ["service", VAULT_SERVICE, ...(scope ? ["dir", scope.dir] : []), "name", name];
  return {
    kind: "secret-service",
    where: "the Secret Service",
    async get(name) {
      const r = await exec.run(["secret-tool", "lookup", ...attrs(name)], { check: false, timeoutMs: 10_000 });
      // secret-tool prints nothing and exits 1 for an item that is not there.
      if (r.exitCode === 1 && r.stdout === "" && r.stderr.trim() === "") return null;
      if (r.exitCode !== 0) failed(`reading ${name} from the Secret Service`, r, hint);
      return r.stdout;
    },
    async set(name, value) {
      const r = await exec.run(["secret-tool", "store", "--label", `sbx ${name}`, ...attrs(name)], { stdin: value, check: false, timeoutMs: 10_000 });
      if (r.exitCode !== 0) failed(`storing ${name} in the Secret Service`, r, hint);
    },
    async remove(name) {
      const had = (await this.get(name)) !== null;
      const r = await exec.run(["secret-tool", "clear", ...attrs(name)], { check: false, timeoutMs: 10_000 });
      if (r.exitCode !== 0 && had) failed(`removing ${name} from the Secret Service`, r, hint);
      return had;
    },
  };
}

/**
 * The vault this host keeps secrets in: the keychain on a Mac; the Secret Service where a session bus is set and
 * `secret-tool` answers a lookup at once (a locked keyring that would prompt, or no service, does not count); else
 * the file. `why` says which and why, for doctor and `sbx secret list`.
 */
export async function chooseVault(exec: Exec, o: { platform: string; env: Readonly<Record<string, string>>; file: string; scope?: VaultScope; keychainService?: string }): Promise<{ vault: Vault; why: string }> {
  if (o.platform === "darwin") return { vault: keychainVault(exec, o.keychainService ? { service: o.keychainService } : {}), why: "macOS: the login keychain" };
  if (!o.env.DBUS_SESSION_BUS_ADDRESS) return { vault: fileVault(o.file), why: "no session bus (DBUS_SESSION_BUS_ADDRESS unset): sbx's 0600 file" };
  const probe = await exec.run(["secret-tool", "lookup", "service", VAULT_SERVICE, "name", "__sbx_probe__"], { check: false, timeoutMs: 3000 });
  if (probe.exitCode === 0 || (probe.exitCode === 1 && probe.stderr.trim() === "")) return { vault: secretServiceVault(exec, o.scope), why: "the session's Secret Service (secret-tool answered)" };
  const reason = probe.exitCode === 127 ? "secret-tool is not installed (apt-get install libsecret-tools)" : `secret-tool did not answer (${probe.stderr.trim().split("\n")[0] || `exit ${probe.exitCode}`})`;
  return { vault: fileVault(o.file), why: `${reason}: sbx's 0600 file` };
}

/**
 * Moves what sbx's file holds into another vault, once: every entry stored there and read back equal; then `recorded`
 * (the caller writes down that the vault now holds them); then they leave the file. A failure before `recorded` takes
 * back what was copied and leaves the file as it was, so the values are always in exactly one place a reader looks.
 * Returns the names moved (the caller says so).
 */
export async function moveFileSecrets(file: string, to: Vault, recorded: (names: string[]) => void = () => {}): Promise<string[]> {
  if (to.kind === "file") return [];
  const all = readSecrets(file);
  const copied: string[] = [];
  try {
    for (const [name, value] of Object.entries(all)) {
      await to.set(name, value);
      copied.push(name);
      if ((await to.get(name)) !== value) {
        throw new SbxError("unavailable", `${name} did not read back equal from ${to.where}: every secret stays in ${file}`, { hint: "See `sbx doctor`; the file keeps working meanwhile." });
      }
    }
  } catch (e) {
    for (const n of copied) await to.remove(n).catch(() => false);
    throw e;
  }
  recorded(copied);
  for (const n of copied) removeSecret(file, n);
  return copied;
}
