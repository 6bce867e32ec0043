// Named allowlist bundles a user adds with `sbx allow --preset NAME`; data only.
import { SbxError } from "./errors";

export const PRESETS = {
  github: ["github.com", "*.github.com", "*.githubusercontent.com", "*.githubassets.com", "ghcr.io"],
  npm: ["registry.npmjs.org", "registry.yarnpkg.com", "npmjs.com", "www.npmjs.com"],
  pypi: ["pypi.org", "*.pypi.org", "files.pythonhosted.org"],
  openai: ["api.openai.com", "auth.openai.com", "chatgpt.com"],
  google: [
    "generativelanguage.googleapis.com",
    "cloudcode-pa.googleapis.com",
    "oauth2.googleapis.com",
    "www.googleapis.com",
    "accounts.google.com",
  ],
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
