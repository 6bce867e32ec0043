// Test-only: an interactive bash, zsh or fish on a PTY (Bun's own), its completion script loaded, typed into as a
// person would. `line(keys)` types keys (TAB included), then Ctrl-T, bound to write the edited command line to a file:
// what the shell inserted (Ctrl-T starts no longer binding, so the shell does not wait for one). zsh also writes the
// words each completion offered (a compadd wrapper).
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export type ShellName = "bash" | "zsh" | "fish";

export interface ShellSessionOptions {
  shell: ShellName;
  /** The completion script, as `sbx completion SHELL` printed it. */
  script: string;
  /** A private dir for the rc file, the script and the dumps. */
  dir: string;
  env: Record<string, string>;
  cwd: string;
}

export interface LineResult {
  /** The command line after the keys, as the shell holds it. */
  line: string;
  /** zsh: every word offered (after matching what was typed), in order. */
  offered: string[];
}

/** The rc each shell starts with: no user config, a plain prompt, the script, Ctrl-T bound to dump the line. */
function rcFor(shell: ShellName, scriptFile: string, lineFile: string, offeredFile: string): string {
  switch (shell) {
    case "bash":
      return [
        "PS1='$ '",
        "set -o emacs",
        `source '${scriptFile}'`,
        `bind -x '"\\C-t": printf "%s\\n" "$READLINE_LINE" > ${lineFile}'`,
        "",
      ].join("\n");
    case "zsh":
      return [
        "PS1='$ '",
        "bindkey -e",
        "autoload -U compinit && compinit -u -D",
        // Records what each completion offered: compadd -A computes the matches without adding them.
        "compadd() {",
        "  if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\\ * ]]; then builtin compadd \"$@\"; return; fi",
        "  local -a __hits",
        "  builtin compadd -A __hits \"$@\"",
        `  (( $#__hits )) && print -rl -- $__hits >> ${offeredFile}`,
        "  builtin compadd \"$@\"",
        "}",
        `source '${scriptFile}'`,
        `__dump() { print -r -- "$BUFFER" > ${lineFile} }`,
        "zle -N __dump",
        "bindkey '^T' __dump",
        "",
      ].join("\n");
    case "fish":
      return [
        "function fish_prompt; echo '$ '; end",
        "set -g fish_greeting ''",
        `source '${scriptFile}'`,
        `bind \\ct 'commandline > ${lineFile}'`,
        "",
      ].join("\n");
  }
}

export class ShellSession {
  private constructor(
    private readonly proc: Bun.Subprocess,
    private readonly lineFile: string,
    private readonly offeredFile: string,
  ) {}

  static async start(o: ShellSessionOptions): Promise<ShellSession> {
    const scriptFile = join(o.dir, `completion.${o.shell}`);
    const lineFile = join(o.dir, "line");
    const offeredFile = join(o.dir, "offered");
    const rcFile = join(o.dir, `rc.${o.shell}`);
    writeFileSync(scriptFile, o.script);
    writeFileSync(rcFile, rcFor(o.shell, scriptFile, lineFile, offeredFile));
    const argv = {
      bash: ["bash", "--noprofile", "--rcfile", rcFile, "-i"],
      zsh: ["zsh", "-f", "-i"],
      fish: ["fish", "--no-config", "-i", "-C", `source ${rcFile}`],
    }[o.shell];
    const proc = Bun.spawn(argv, {
      cwd: o.cwd,
      env: { ...o.env, TERM: "xterm" },
      terminal: { cols: 200, rows: 60, data: () => {} },
    });
    const s = new ShellSession(proc, lineFile, offeredFile);
    if (o.shell === "zsh") s.type(`source ${rcFile}\n`);
    // Ready once the dump key works.
    await s.line("");
    return s;
  }

  private type(keys: string): void {
    this.proc.terminal!.write(keys);
  }

  /** Types `keys`, dumps the line, clears it; resolves with the line and what zsh's completion offered. */
  async line(keys: string, timeoutMs = 15_000): Promise<LineResult> {
    rmSync(this.lineFile, { force: true });
    rmSync(this.offeredFile, { force: true });
    // Typed ahead: the shell runs each completion to its end before it reads the next key.
    this.type(`${keys}\x14`);
    const until = Date.now() + timeoutMs;
    while (!existsSync(this.lineFile) || !readFileSync(this.lineFile, "utf8").endsWith("\n")) {
      if (Date.now() > until) throw new Error(`the shell did not dump its line after ${JSON.stringify(keys)}`);
      await Bun.sleep(20);
    }
    const line = readFileSync(this.lineFile, "utf8").replace(/\n$/, "");
    const offered = existsSync(this.offeredFile) ? readFileSync(this.offeredFile, "utf8").split("\n").filter((w) => w !== "") : [];
    this.type("\x15"); // Ctrl-U: the line is empty again
    return { line, offered };
  }

  /** Ends the shell (an interactive bash ignores SIGTERM). */
  async close(): Promise<void> {
    this.proc.kill("SIGKILL");
    await this.proc.exited;
  }
}
