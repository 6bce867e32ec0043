// sbx's stored secrets (`sbx secret set NAME`), wherever their values are kept: the macOS Keychain, the session's
// Secret Service, or sbx's 0600 file. Which one is recorded once, beside the config (`secrets-vault.json`: the vault
// and the names, never a value), so every reader agrees and a shell without a session bus does not quietly start a
// second store: the CLI (`Shelf`) writes values and the record; the daemon (`StoredValues`) keeps the values in
// memory, read again when the record changes, so its synchronous readers (the LLM proxy, the bridge) cost nothing.
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { randomBytes } from "node:crypto";
import { z } from "zod";
import { SbxError } from "../core/errors";
import type { Exec } from "../sys/exec";
import { listSecretNames, readSecrets, SecretName, secretsFile } from "./store";
import { chooseVault, fileVault, keychainService, keychainVault, moveFileSecrets, secretServiceVault, type Vault, type VaultKind } from "./vault";

const VaultRecordSchema = z.object({
  vault: z.enum(["keychain", "secret-service"]),
  names: z.array(SecretName),
  /** Bumped on every change, so the record's file changes even when only a value did: the daemon's cue to read again. */
  changedAt: z.number(),
});
export type VaultRecord = z.infer<typeof VaultRecordSchema>;

export function vaultRecordFile(configDir: string): string {
  return join(configDir, "secrets-vault.json");
}

/** The record, or null while the values are in sbx's file (no record: the file is the vault). */
export function readVaultRecord(configDir: string): VaultRecord | null {
  const file = vaultRecordFile(configDir);
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw e;
  }
  let parsed: VaultRecord | null = null;
  try {
    const p = VaultRecordSchema.safeParse(JSON.parse(text));
    if (p.success) parsed = p.data;
  } catch {}
  if (parsed === null) throw new SbxError("config", `${file} is not sbx's record of where its secrets are`, { hint: "Remove it and set the secrets again (`sbx secret set NAME`); the values themselves are in your keychain or keyring." });
  return parsed;
}

function writeVaultRecord(configDir: string, r: VaultRecord): void {
  const file = vaultRecordFile(configDir);
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${randomBytes(6).toString("hex")}.tmp`;
  writeFileSync(tmp, JSON.stringify(r, null, 2) + "\n", { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
}

/** The names sbx has stored, from the record or the file: no vault is asked (nothing can prompt). */
export function storedNames(configDir: string): string[] {
  const r = readVaultRecord(configDir);
  return r ? [...r.names].sort() : listSecretNames(secretsFile(configDir));
}

/** How a vault of a kind is reached by whoever reads it (the CLI as the person; the daemon, maybe as root, for them). */
export interface VaultAccess {
  exec: Exec;
  platform: string;
  env: Readonly<Record<string, string>>;
  configDir: string;
  /** The person's home (the default config dir's keychain service is plain `sbx`). */
  home: string;
  /** The person's uid: where their session bus is when the environment does not say. */
  uid: number;
  /** Their login keychain's file, for a daemon that is not them (root). */
  keychainFile?: string;
}

/** The session bus the Secret Service answers on: the environment's, else the person's systemd user bus. */
export function sessionBus(env: Readonly<Record<string, string>>, uid: number, exists: (p: string) => boolean = existsSync): string | null {
  if (env.DBUS_SESSION_BUS_ADDRESS) return env.DBUS_SESSION_BUS_ADDRESS;
  const bus = `/run/user/${uid}/bus`;
  return exists(bus) ? `unix:path=${bus}` : null;
}

/** Where a vault of a kind keeps values, as said to a person. */
export function whereOf(kind: VaultKind, configDir: string): string {
  return kind === "keychain" ? "the login keychain" : kind === "secret-service" ? "the Secret Service" : secretsFile(configDir);
}

/** The vault of a recorded kind, reached as `a` says. */
export function vaultOf(kind: VaultKind, a: VaultAccess): Vault {
  const scope = { dir: a.configDir };
  if (kind === "keychain") return keychainVault(a.exec, { service: keychainService(scope, join(a.home, ".config", "sbx")), ...(a.keychainFile ? { keychain: a.keychainFile } : {}) });
  if (kind === "file") return fileVault(secretsFile(a.configDir));
  const bus = sessionBus(a.env, a.uid);
  if (bus === null) {
    throw new SbxError("unavailable", "sbx keeps its secrets in the Secret Service, and no session bus is known here (DBUS_SESSION_BUS_ADDRESS is unset)", {
      hint: `Run sbx from your desktop session, or set DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/${a.uid}/bus.`,
    });
  }
  const exec: Exec = {
    ...a.exec,
    run: (argv, o = {}) => a.exec.run(argv, { ...o, env: { ...o.env, DBUS_SESSION_BUS_ADDRESS: bus } }),
  };
  return secretServiceVault(exec, scope);
}

/** Every stored value, read now as `a` says, without moving anything (doctor's token report). */
export async function readStored(a: VaultAccess): Promise<Record<string, string>> {
  const r = readVaultRecord(a.configDir);
  if (r === null) return readSecrets(secretsFile(a.configDir));
  const vault = vaultOf(r.vault, a);
  const out: Record<string, string> = {};
  for (const n of r.names) {
    const v = await vault.get(n);
    if (v !== null) out[n] = v;
  }
  return out;
}

/** The CLI's door to stored secrets: values go to the vault, names to the record. */
export class Shelf {
  private constructor(
    private readonly configDir: string,
    readonly vault: Vault,
    /** Why this vault (for `sbx secret list` and doctor). */
    readonly why: string,
  ) {}

  /**
   * The recorded vault; with none, the one this host offers (chooseVault), and what sbx's file held moves there once.
   * `moved` names what moved (the caller says so). A recorded vault that does not answer is an error, never the file.
   */
  static async open(a: VaultAccess): Promise<{ shelf: Shelf; moved: string[] }> {
    const recorded = readVaultRecord(a.configDir);
    if (recorded) return { shelf: new Shelf(a.configDir, vaultOf(recorded.vault, a), `recorded in ${vaultRecordFile(a.configDir)}`), moved: [] };
    const file = secretsFile(a.configDir);
    // SBX_SECRETS_VAULT=file keeps them in sbx's own file though a keychain or keyring is on offer (a throwaway setup,
    // `sbx demo`'s, must leave nothing in the person's keychain).
    if (a.env.SBX_SECRETS_VAULT === "file") return { shelf: new Shelf(a.configDir, fileVault(file), "SBX_SECRETS_VAULT=file: sbx's 0600 file"), moved: [] };
    const scope = { dir: a.configDir };
    // The first choice goes by this shell's own session bus only (a shell with none keeps the file); once recorded,
    // the vault is reached through the person's systemd bus as well (vaultOf), from any shell.
    const { vault: chosen, why } = await chooseVault(a.exec, {
      platform: a.platform,
      env: a.env,
      file,
      scope,
      keychainService: keychainService(scope, join(a.home, ".config", "sbx")),
    });
    const kind = chosen.kind;
    if (kind === "file") return { shelf: new Shelf(a.configDir, chosen, why), moved: [] };
    const vault = vaultOf(kind, a);
    // The record is written once every value is in the vault, and before the file lets go of them.
    const moved = await moveFileSecrets(file, vault, (names) => writeVaultRecord(a.configDir, { vault: kind, names: names.sort(), changedAt: Date.now() }));
    return { shelf: new Shelf(a.configDir, vault, why), moved };
  }

  names(): string[] {
    return storedNames(this.configDir);
  }

  async get(name: string): Promise<string | null> {
    return this.vault.get(name);
  }

  /** Every stored value, by name (doctor's token report; `import` compares). */
  async all(): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    for (const n of this.names()) {
      const v = await this.vault.get(n);
      if (v !== null) out[n] = v;
    }
    return out;
  }

  async set(name: string, value: string): Promise<void> {
    SecretName.parse(name);
    if (value === "") throw new SbxError("usage", "empty secret value", { hint: "Pipe the value on stdin: `printf %s \"$TOKEN\" | sbx secret set NAME`." });
    await this.vault.set(name, value);
    this.record((names) => [...new Set([...names, name])]);
  }

  /** Whether there was one. */
  async remove(name: string): Promise<boolean> {
    const had = await this.vault.remove(name);
    this.record((names) => names.filter((n) => n !== name));
    return had;
  }

  private record(change: (names: string[]) => string[]): void {
    const kind = this.vault.kind;
    if (kind === "file") return;
    const r = readVaultRecord(this.configDir);
    writeVaultRecord(this.configDir, { vault: kind, names: change(r?.names ?? []).sort(), changedAt: Math.max(Date.now(), (r?.changedAt ?? 0) + 1) });
  }
}

/**
 * The daemon's stored values. With no record, sbx's file, read when asked (as before any vault). With one, the values
 * as last read from the vault, read again when the record's file changes (every `sbx secret set`/`rm` changes it, and
 * then asks the daemon to `reload` and waits, so the next request uses the new value) and every `maxAgeMs` (a value
 * changed in the keyring by hand).
 */
export class StoredValues {
  private values: Record<string, string> = {};
  /** The record's file as last read: mtime and size; null before the first read. */
  private seen: string | null = null;
  private readAt = -Infinity;
  private loading: Promise<void> | null = null;

  constructor(
    private readonly d: {
      access: VaultAccess;
      log?: (message: string, fields: Record<string, unknown>) => void;
      now?: () => number;
      /** How long values read from a vault are kept before they are read again (default 5 min). */
      maxAgeMs?: number;
    },
  ) {}

  private now(): number {
    return this.d.now?.() ?? Date.now();
  }

  private stamp(): string | null {
    try {
      const s = statSync(vaultRecordFile(this.d.access.configDir));
      return `${s.mtimeMs}:${s.size}`;
    } catch {
      return null;
    }
  }

  /** Every stored value by name, now; a read from the vault started when the record changed or the values aged. */
  all(): Record<string, string> {
    const stamp = this.stamp();
    if (stamp === null) {
      this.values = {};
      this.seen = null;
      return readSecrets(secretsFile(this.d.access.configDir));
    }
    if (stamp !== this.seen || this.now() - this.readAt > (this.d.maxAgeMs ?? 5 * 60_000)) void this.reload();
    return this.values;
  }

  async get(name: string): Promise<string | null> {
    if (this.stamp() !== this.seen) await this.reload();
    return this.all()[name] ?? null;
  }

  /** Reads every recorded value from the vault (one read at a time for concurrent callers); failures are logged by name. */
  reload(): Promise<void> {
    this.loading ??= this.load().finally(() => {
      this.loading = null;
    });
    return this.loading;
  }

  private async load(): Promise<void> {
    const stamp = this.stamp();
    const record = readVaultRecord(this.d.access.configDir);
    if (record === null) {
      this.values = {};
      this.seen = null;
      return;
    }
    const vault = vaultOf(record.vault, this.d.access);
    const next: Record<string, string> = {};
    for (const n of record.names) {
      try {
        const v = await vault.get(n);
        if (v !== null) next[n] = v;
        else this.d.log?.("a stored secret is not in its vault", { secret: n, vault: vault.where });
      } catch (e) {
        // Kept as last read: a keyring locked for a moment costs no request its key.
        if (this.values[n] !== undefined) next[n] = this.values[n]!;
        this.d.log?.("a stored secret cannot be read from its vault", { secret: n, vault: vault.where, err: (e as Error).message });
      }
    }
    this.values = next;
    this.seen = stamp;
    this.readAt = this.now();
  }

  /** A Vault over these values, for the bound secrets' resolver (it reads, never writes). */
  asVault(): Vault {
    const dir = this.d.access.configDir;
    return {
      get kind() {
        return readVaultRecord(dir)?.vault ?? "file";
      },
      get where() {
        return whereOf(readVaultRecord(dir)?.vault ?? "file", dir);
      },
      get: (name) => this.get(name),
      set: () => Promise.reject(new SbxError("internal", "the daemon does not store secrets")),
      remove: () => Promise.reject(new SbxError("internal", "the daemon does not store secrets")),
    };
  }
}

/** The daemon's StoredValues, one per config dir, opened once with how the vault is reached (`openStoredValues`). */
const opened = new Map<string, StoredValues>();

/**
 * Opens (or gives back) a config dir's stored values, reached as `access` says: the daemon calls this at start, as the
 * person (a root daemon passes an executor that runs as them), and waits for the first read.
 */
export async function openStoredValues(access: VaultAccess, log?: (message: string, fields: Record<string, unknown>) => void): Promise<StoredValues> {
  let s = opened.get(access.configDir);
  if (!s) {
    s = new StoredValues({ access, ...(log ? { log } : {}) });
    opened.set(access.configDir, s);
  }
  await s.reload();
  return s;
}

/**
 * Every stored value of a config dir, now, for the synchronous readers (LLM keys, the copy-in scan, the bridge): the
 * opened StoredValues'; in a process that opened none, sbx's file when there is no record, else nothing but a note
 * (a vault is read only by a process that knows as whom).
 */
export function storedValues(configDir: string): Record<string, string> {
  const s = opened.get(configDir);
  if (s) return s.all();
  return readVaultRecord(configDir) === null ? readSecrets(secretsFile(configDir)) : {};
}

/** Reads a config dir's stored values again, when this process holds them (the daemon), and waits. */
export async function reloadStored(configDir: string): Promise<void> {
  await opened.get(configDir)?.reload();
}
