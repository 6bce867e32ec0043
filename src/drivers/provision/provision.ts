// OS-neutral provisioning of a sandbox user's home: rc files that put ~/bin first and set sbx's env, and the shims to link.
//
// Pure: everything here returns text or data; the macOS and Linux user backends write it as the guest user.
import { shQuote } from "../../core/sh";

export { shQuote };

/** Shells sbx writes rc files for. */
export type ShellKind = "zsh" | "bash" | "fish";

/** One file to write in the guest's home (path relative to that home). */
export interface HomeFile {
  path: string;
  content: string;
  mode: number;
}

export interface ShellRcInput {
  shell: ShellKind;
  /** Absolute path of the guest's bin dir (shims), put first on PATH. */
  binDir: string;
  /** Variables exported to every shell of the guest (already free of host secrets). */
  env: Record<string, string>;
  /** Sandbox name shown in the prompt. */
  sandbox: string;
  /** A dir put last on PATH (the agent launchers of `sbx run AGENT`, after the system's own). */
  lastDir?: string;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;


/** fish single-quoting: only `\` and `'` are special inside. */
export function fishQuote(s: string): string {
  return `'${s.replaceAll("\\", "\\\\").replaceAll("'", "\\'")}'`;
}

function sortedEnv(env: Record<string, string>): [string, string][] {
  const entries = Object.entries(env).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [k, v] of entries) {
    if (!ENV_NAME.test(k)) throw new Error(`provision: invalid environment variable name ${JSON.stringify(k)}`);
    if (v.includes("\0")) throw new Error(`provision: value of ${k} contains a NUL byte`);
  }
  return entries;
}

const HEADER = "# Written by sbx; rewritten on every apply. Local changes are lost.";

/**
 * Options lists a session adds to: a session with secrets bound to hosts gets the JVM's trust store after the
 * sandbox's proxy properties (sandboxes/secret-env.ts). The rc runs after the session's environment is set (bash -l,
 * every zsh), so it keeps an inherited value that begins with sbx's own and puts anything else back to sbx's.
 */
const EXTENDED = new Set(["JAVA_TOOL_OPTIONS"]);

/** sh/bash/zsh: export k=v, or, for an options list, keep an inherited `v` or `v …` (the quoted parts match literally). */
function shExport(k: string, v: string): string {
  if (!EXTENDED.has(k)) return `export ${k}=${shQuote(v)}`;
  return `case "\${${k}-}" in ${shQuote(v)}|${shQuote(`${v} `)}*) ;; *) export ${k}=${shQuote(v)} ;; esac`;
}

/** fish: as shExport, comparing the inherited value's head as a string (fish's patterns would read v's `*` as a wildcard). */
function fishExport(k: string, v: string): string {
  if (!EXTENDED.has(k)) return `set -gx ${k} ${fishQuote(v)}`;
  const q = fishQuote(v);
  const head = fishQuote(`${v} `);
  return `if test "$${k}" != ${q}; and test (string sub -l ${[...`${v} `].length} -- "$${k}") != ${head}\n    set -gx ${k} ${q}\nend`;
}

/**
 * What every guest shell starts with: files only the guest can read (umask 077; the host user's ACL entries still
 * apply where a directory has them), and a temp dir of its own, mode 700, instead of the machine's shared /tmp.
 */
const PRIVATE_SH = 'umask 077\n[ -d "$HOME/.tmp" ] || mkdir -m 700 "$HOME/.tmp"\nexport TMPDIR="$HOME/.tmp"';
const PRIVATE_FISH = "umask 077\ntest -d $HOME/.tmp; or mkdir -m 700 $HOME/.tmp\nset -gx TMPDIR $HOME/.tmp";

/**
 * The rc files for one shell kind. zsh: `.zshenv` (every zsh, including `zsh -c`) sets the env and PATH;
 * `.zprofile` puts ~/bin first again because macOS's /etc/zprofile runs path_helper, which moves system
 * dirs ahead of what .zshenv set (so /usr/bin/git would win over the shim); `.zshrc` sets the prompt.
 * bash: `.bash_profile` sources `.bashrc`, which does both. fish: one conf.d file.
 */
export function renderShellRc(input: ShellRcInput): HomeFile[] {
  const env = sortedEnv(input.env);
  const { binDir, sandbox } = input;
  if (!binDir.startsWith("/")) throw new Error(`provision: bin dir must be absolute, got ${binDir}`);
  switch (input.shell) {
    case "zsh": {
      const exports = env.map(([k, v]) => shExport(k, v)).join("\n");
      // typeset -U keeps the first of each: the shims first, the agent launchers (lastDir) after everything else.
      const path = `typeset -U path\npath=(${shQuote(binDir)} $path${input.lastDir ? ` ${shQuote(input.lastDir)}` : ""})\nexport PATH`;
      return [
        { path: ".zshenv", mode: 0o644, content: `${HEADER}\n# Read by every zsh: sbx's proxy and LLM variables, and the git/gh shims first on PATH.\n${exports}\n${path}\n${PRIVATE_SH}\n` },
        { path: ".zprofile", mode: 0o644, content: `${HEADER}\n# /etc/zprofile's path_helper reorders PATH for login shells: put the shims first again.\n${path}\n` },
        { path: ".zshrc", mode: 0o644, content: `${HEADER}\nPROMPT=${shQuote(`[sbx:${sandbox}] %~ %# `)}\n` },
      ];
    }
    case "bash": {
      const exports = env.map(([k, v]) => shExport(k, v)).join("\n");
      const last = input.lastDir ? `case ":$PATH:" in *:${shQuote(input.lastDir)}:*) ;; *) PATH="$PATH":${shQuote(input.lastDir)} ;; esac\n` : "";
      const path = `case ":$PATH:" in *:${shQuote(binDir)}:*) ;; *) PATH=${shQuote(binDir)}:"$PATH" ;; esac\n${last}export PATH`;
      return [
        { path: ".bash_profile", mode: 0o644, content: `${HEADER}\n[ -f ~/.bashrc ] && . ~/.bashrc\n` },
        { path: ".bashrc", mode: 0o644, content: `${HEADER}\n${exports}\n${path}\n${PRIVATE_SH}\nPS1=${shQuote(`[sbx:${sandbox}] \\w \\$ `)}\n` },
      ];
    }
    case "fish": {
      const exports = env.map(([k, v]) => fishExport(k, v)).join("\n");
      return [
        {
          path: ".config/fish/conf.d/sbx.fish",
          mode: 0o644,
          content: `${HEADER}\n${exports}\nfish_add_path --global --move --path ${fishQuote(binDir)}\n${input.lastDir ? `fish_add_path --global --append --path ${fishQuote(input.lastDir)}\n` : ""}${PRIVATE_FISH}\n`,
        },
      ];
    }
  }
}

/** A shim the sandbox gets in ~/bin: `name` runs `script` (relative to the sbx install's shim dir) on the host's Bun. */
export interface ShimFile {
  name: string;
  script: string;
  /** One line on what it does, for the wrapper's comment. */
  does: string;
}

/** The shims every user-account sandbox gets (written by the shims engineer under `shims/`). */
/** The in-sandbox setup `sbx run AGENT` runs before the agent (not a command on PATH: run by its absolute path). */
export const AGENT_SETUP_SCRIPT = "agent-setup.ts";

export const SHIM_FILES: readonly ShimFile[] = [
  { name: "git", script: "git.ts", does: "git network operations go to the host's command bridge" },
  { name: "gh", script: "gh.ts", does: "gh network operations go to the host's command bridge" },
  { name: "sbx-egress", script: "sbx-egress.ts", does: "this sandbox's egress policy, and asking the person for a host, through its own proxy" },
];

export interface ShimWrapperInput {
  /** Absolute path of a Bun binary the guest can execute (read-only to it). */
  runtime: string;
  /** Absolute dir holding the installed shim scripts (read-only to the guest). */
  shimDir: string;
  /**
   * The dir the wrappers are written to (~/bin). When given, each wrapper names it in SBX_SHIM_DIR, so the git shim
   * skips it when it looks for the real git on PATH (else it would find its own wrapper and call itself forever).
   */
  binDir?: string;
}

/** The ~/bin entries: tiny sh wrappers that exec the installed shim on the installed Bun (no copy of sbx inside). */
export function renderShimWrappers(input: ShimWrapperInput): HomeFile[] {
  for (const p of [input.runtime, input.shimDir, ...(input.binDir !== undefined ? [input.binDir] : [])]) {
    if (!p.startsWith("/")) throw new Error(`provision: ${p} must be absolute`);
  }
  const own = input.binDir !== undefined ? `SBX_SHIM_DIR=${shQuote(input.binDir)} ` : "";
  return SHIM_FILES.map((s) => ({
    path: `bin/${s.name}`,
    mode: 0o755,
    content: `#!/bin/sh\n# sbx shim: ${s.does}.\n${own}exec ${shQuote(input.runtime)} ${shQuote(`${input.shimDir}/${s.script}`)} "$@"\n`,
  }));
}
