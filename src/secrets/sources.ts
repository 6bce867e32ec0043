// Where a secret's value comes from when it is needed: the vault, a command the person gave (`gh auth token`), or a
// password manager's reference (`op://vault/item/field`, 1Password's CLI), each read on the host and kept no longer than
// its time to live.
import { SbxError } from "../core/errors";
import { EXIT_NOT_FOUND, type Exec } from "../sys/exec";
import type { Vault } from "./vault";
import { DEFAULT_TTL_MS } from "../core/secret-sources";

export type SecretSource =
  | { kind: "vault" }
  /** A command run on the host as the person, through `/bin/sh -c` (they wrote it as a shell line); stdout is the value. */
  | { kind: "command"; command: string; ttlMs: number }
  /** A 1Password reference, read with `op read`. */
  | { kind: "ref"; ref: string; ttlMs: number };

/** A command or `op` that takes longer is stopped and the request refused. */
export const SOURCE_TIMEOUT_MS = 30_000;

export { DEFAULT_TTL_MS, isOpRef, parseTtl } from "../core/secret-sources";

/** Reads values from their sources, keeping a command's or reference's answer for its time to live. */
export class SecretResolver {
  private readonly cache = new Map<string, { value: string; until: number }>();
  private readonly inflight = new Map<string, Promise<string>>();

  constructor(
    private readonly d: {
      vault: Vault;
      /** Runs as the person whose secrets these are (a root daemon passes sudo's caller's executor). */
      exec: Exec;
      now?: () => number;
    },
  ) {}

  private now(): number {
    return this.d.now?.() ?? Date.now();
  }

  /** Forgets what was kept (a secret changed or was removed): the next request reads the source again. */
  forget(name?: string): void {
    if (name === undefined) this.cache.clear();
    else for (const k of [...this.cache.keys()]) if (k.startsWith(`${name}\0`)) this.cache.delete(k);
  }

  /** The value of secret `name` from `source`; an SbxError naming the secret and the fix when it cannot be read. */
  async value(name: string, source: SecretSource): Promise<string> {
    if (source.kind === "vault") {
      const v = await this.d.vault.get(name);
      if (v === null || v === "") {
        throw new SbxError("not_found", `secret ${name} has no value in ${this.d.vault.where}`, { hint: `Set it: \`sbx secret set ${name}\` (the value is asked for, or read from stdin).` });
      }
      return v;
    }
    const key = `${name}\0${source.kind === "command" ? source.command : source.ref}`;
    const kept = this.cache.get(key);
    if (kept && kept.until > this.now()) return kept.value;
    // Requests that arrive together share one run of the command.
    let p = this.inflight.get(key);
    if (!p) {
      p = (source.kind === "command" ? this.runCommand(name, source.command) : this.readRef(name, source.ref)).finally(() => this.inflight.delete(key));
      this.inflight.set(key, p);
    }
    const value = await p;
    this.cache.set(key, { value, until: this.now() + source.ttlMs });
    return value;
  }

  /** runs: /bin/sh -c COMMAND (the person's own line), as the person, with a timeout. */
  private async runCommand(name: string, command: string): Promise<string> {
    const r = await this.d.exec.run(["/bin/sh", "-c", command], { check: false, timeoutMs: SOURCE_TIMEOUT_MS });
    const value = r.stdout.replace(/\r?\n$/, "");
    if (r.exitCode !== 0) {
      throw new SbxError("unavailable", `secret ${name}: \`${command}\` exited ${r.exitCode}${r.stderr.trim() ? `: ${r.stderr.trim().split("\n").slice(-1)[0]}` : ""}`, {
        hint: `Run \`${command}\` yourself to see why; \`sbx secret set ${name} --command …\` changes it.`,
      });
    }
    if (value === "" || value.includes("\n")) {
      throw new SbxError("unavailable", `secret ${name}: \`${command}\` printed ${value === "" ? "nothing" : "more than one line"}`, {
        hint: "The command must print the value alone, on one line (e.g. `gh auth token`).",
      });
    }
    return value;
  }

  /** runs: op read --no-newline REF */
  private async readRef(name: string, ref: string): Promise<string> {
    const r = await this.d.exec.run(["op", "read", "--no-newline", ref], { check: false, timeoutMs: SOURCE_TIMEOUT_MS });
    if (r.exitCode === EXIT_NOT_FOUND) {
      throw new SbxError("unavailable", `secret ${name} is read from 1Password (${ref}), and its CLI (op) is not installed`, {
        hint: "Install 1Password's CLI and sign in (`op signin`), or store the value itself: `sbx secret set NAME`.",
      });
    }
    if (r.exitCode !== 0 || r.stdout === "") {
      throw new SbxError("unavailable", `secret ${name}: \`op read ${ref}\` failed${r.stderr.trim() ? `: ${r.stderr.trim().split("\n").slice(-1)[0]}` : ""}`, {
        hint: "Sign in to 1Password's CLI (`op signin`) and check the reference with `op read`.",
      });
    }
    return r.stdout;
  }
}
