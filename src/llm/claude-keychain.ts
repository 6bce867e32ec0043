// Claude Code's login on macOS lives in the login Keychain (item "Claude Code-credentials"), not in a file. The daemon
// reads it through the executor (`security find-generic-password … -w`), keeps it a minute, and the LLM proxy adds its
// token on the way out as it does the Linux credentials file's. It never leaves the host.
import type { Exec } from "../sys/exec";

export const CLAUDE_KEYCHAIN_SERVICE = "Claude Code-credentials";

/** How long a read is kept: a login renewed by Claude Code on the host is picked up within this. */
const TTL_MS = 60_000;

export class ClaudeKeychain {
  private text: string | undefined;
  private at = -Infinity;
  private inflight: Promise<void> | null = null;

  constructor(
    private readonly exec: Exec,
    private readonly account: string,
    private readonly now: () => number = Date.now,
  ) {}

  /** The item's text as last read (the credentials file's JSON), or undefined. */
  value(): string | undefined {
    return this.text;
  }

  /** Reads the item again when the last read is older than a minute; a missing item or a locked Keychain is "none". */
  async load(): Promise<void> {
    if (this.now() - this.at < TTL_MS) return;
    this.inflight ??= this.exec
      .run(["security", "find-generic-password", "-a", this.account, "-s", CLAUDE_KEYCHAIN_SERVICE, "-w"], { check: false })
      .then((r) => {
        this.text = r.exitCode === 0 && r.stdout.trim() !== "" ? r.stdout.trim() : undefined;
        this.at = this.now();
      })
      .catch(() => {
        this.text = undefined;
        this.at = this.now();
      })
      .finally(() => {
        this.inflight = null;
      });
    return this.inflight;
  }
}
