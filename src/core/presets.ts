// Named allowlist bundles a user adds with `sbx allow --preset NAME`; data only.
import { SbxError } from "./errors";

/**
 * What each named agent or tool needs on its first run, and nothing more (error reporting such as Sentry is left out:
 * the agents work without it; a refused report is one line in `sbx logs`).
 */
export const PRESETS = {
  /** Claude Code: the API is built in; logging in (OAuth) and the console need these. */
  claude: ["claude.ai", "platform.claude.com", "console.anthropic.com", "statsig.anthropic.com"],
  /** Codex CLI and the OpenAI API, with ChatGPT sign-in. */
  openai: ["api.openai.com", "auth.openai.com", "chatgpt.com"],
  /** Gemini CLI and the Gemini API, with Google sign-in. */
  google: [
    "generativelanguage.googleapis.com",
    "cloudcode-pa.googleapis.com",
    "oauth2.googleapis.com",
    "www.googleapis.com",
    "accounts.google.com",
  ],
  /** OpenCode: its model list and its own site (sharing is off in sbx's settings for it). */
  opencode: ["models.dev", "opencode.ai"],
  github: ["github.com", "*.github.com", "*.githubusercontent.com", "*.githubassets.com", "ghcr.io"],
  /** Release downloads from GitHub only (no API, no git): where `gh release download` and install scripts fetch from. */
  "github-releases": ["github.com", "objects.githubusercontent.com", "release-assets.githubusercontent.com"],
  npm: ["registry.npmjs.org", "registry.yarnpkg.com", "npmjs.com", "www.npmjs.com"],
  pypi: ["pypi.org", "*.pypi.org", "files.pythonhosted.org"],
  crates: ["crates.io", "index.crates.io", "static.crates.io", "static.rust-lang.org"],
  go: ["proxy.golang.org", "sum.golang.org", "go.dev", "dl.google.com"],
  rubygems: ["rubygems.org", "index.rubygems.org"],
  maven: ["repo.maven.apache.org", "repo1.maven.org", "plugins.gradle.org", "services.gradle.org"],
  debian: ["deb.debian.org", "security.debian.org"],
  ubuntu: ["archive.ubuntu.com", "security.ubuntu.com", "ports.ubuntu.com"],
} as const satisfies Record<string, readonly string[]>;

export type PresetName = keyof typeof PRESETS;

export const PRESET_NAMES = Object.keys(PRESETS) as PresetName[];

export function isPresetName(s: string): s is PresetName {
  return Object.hasOwn(PRESETS, s);
}

/** The patterns of a preset; an unknown name is a usage error listing the known ones. */
export function presetPatterns(name: string): readonly string[] {
  if (!isPresetName(name)) {
    throw new SbxError("usage", `unknown preset '${name}'`, { hint: `Presets: ${PRESET_NAMES.join(", ")}.` });
  }
  return PRESETS[name];
}
