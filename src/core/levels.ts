// Policy levels (`sbx create --policy LEVEL`): named bundles of presets a sandbox's egress starts from, what each holds
// for one sandbox, and what `balanced` reads in a repo (its package files, its .npmrc, its remotes); pure.
import { z } from "zod";
import { canonicalIp } from "./addresses";
import { AGENTS } from "./agents";
import { isAgentName } from "./agent-names";
import { normalizeHost, parsePattern } from "./allowlist";
import { SbxError } from "./errors";
import { MirrorsSchema, presetOffer, type Mirrors } from "./mirrors";
import { PRESETS, type PresetName } from "./presets";

/**
 * The levels, from least to most. Whatever the level, sbx's own routes work (the LLM proxy, the git/gh bridge,
 * `sbx-egress`: none of them is egress), the person's own entries (the sandbox's list, the global list, published
 * services of the host) apply on top, and no level ever reaches the host's loopback or its own addresses, or a
 * private, link-local, CGNAT or metadata address (the proxy's address check after every allow).
 */
export const LEVELS = {
  locked: "nothing but sbx's own routes (the LLM proxy, the git/gh bridge, sbx-egress) and what you allow yourself",
  balanced: "the agent's own API and login hosts, the package registries the repo uses, and the forge of its remotes",
  open: "every public host and address, on any port; never the host's loopback or own addresses, nor private, link-local, CGNAT or metadata ones",
} as const;

export type LevelName = keyof typeof LEVELS;
export const LEVEL_NAMES = Object.keys(LEVELS) as LevelName[];

export function isLevelName(s: string): s is LevelName {
  return Object.hasOwn(LEVELS, s);
}

/** A level named by a person (`--policy`, `--level`, the config's `policy`); anything else is a usage error listing them. */
export function levelNamed(raw: string, flag: string): LevelName {
  const s = raw.trim().toLowerCase();
  if (!isLevelName(s)) throw new SbxError("usage", `${flag} ${raw}: not a level`, { hint: `Levels: ${LEVEL_NAMES.map((n) => `${n} (${LEVELS[n]})`).join("; ")}.` });
  return s;
}

/** What `balanced` found in the host repo (never in a sandbox's clone), kept with the sandbox: each with where it was seen. */
export const RepoFactsSchema = z.object({
  registries: z.array(z.object({ preset: z.string(), file: z.string() })).default([]),
  /** Registry hosts the repo's own .npmrc names (`registry=`, `@scope:registry=`). */
  registryHosts: z.array(z.object({ host: z.string(), file: z.string() })).default([]),
  forges: z.array(z.object({ host: z.string(), remote: z.string() })).default([]),
});
export type RepoFacts = z.infer<typeof RepoFactsSchema>;

/** A sandbox's level as stored in its identity (`identity.policy`). */
export const LevelSettingSchema = z.object({ level: z.enum(LEVEL_NAMES as [LevelName, ...LevelName[]]), repo: RepoFactsSchema.default({ registries: [], registryHosts: [], forges: [] }), at: z.number().default(0) });
export type LevelSetting = z.infer<typeof LevelSettingSchema>;

export const NO_FACTS: RepoFacts = { registries: [], registryHosts: [], forges: [] };

/**
 * A stored identity's level: null when it has none (a sandbox made without --policy and no config default: the
 * built-in list, as before levels). A level that does not read back is `locked`, never open (fail closed).
 */
export function levelOf(identity: Record<string, unknown>): LevelSetting | null {
  if (identity.policy === undefined || identity.policy === null) return null;
  const r = LevelSettingSchema.safeParse(identity.policy);
  return r.success ? r.data : { level: "locked", repo: NO_FACTS, at: 0 };
}

/** One pattern a level allows, and why (shown by `sbx policy show`, named in explanations as source `level`). */
export interface LevelPart {
  pattern: string;
  why: string;
}

/** A level for one sandbox: its patterns, and whether it opens every public host. */
export interface LevelLists {
  name: LevelName;
  parts: LevelPart[];
  open: boolean;
}

/**
 * The hosts of each agent's own API beyond its preset (the preset holds its login and console hosts). Model calls go
 * through sbx's LLM proxy whatever the level; these are for what an agent sends its API directly (Claude Code's
 * telemetry and first-run checks go to api.anthropic.com).
 */
const AGENT_API: Readonly<Record<string, readonly string[]>> = { claude: ["api.anthropic.com"] };

/** Web hosts of the forges sbx knows, by the host a remote names; any other forge is its remote's host alone. */
const FORGE_HOSTS: Readonly<Record<string, readonly string[]>> = {
  "github.com": PRESETS.github,
  "gitlab.com": ["gitlab.com", "registry.gitlab.com"],
  "bitbucket.org": ["bitbucket.org", "api.bitbucket.org"],
  "codeberg.org": ["codeberg.org"],
};

/**
 * The agents a level's `balanced` part is for: those the sandbox runs (`sbx run AGENT` records them), else Claude
 * Code's (the built-in list is its API, and a sandbox made with `sbx create` runs it by hand most often).
 */
export function levelAgents(identity: Record<string, unknown>): string[] {
  const v = identity.agents;
  const ran = v && typeof v === "object" && !Array.isArray(v) ? Object.keys(v).filter(isAgentName).sort() : [];
  return ran.length > 0 ? ran : ["claude"];
}

/** The package mirrors a sandbox's identity keeps (sandboxes/mirrors.ts), for its level's registries. */
export function levelMirrors(identity: Record<string, unknown>): Mirrors | null {
  const r = MirrorsSchema.safeParse(identity.mirrors);
  return r.success ? r.data : null;
}

/**
 * What levelLists made, by its input: the proxy reads a sandbox's level on every request, and validating its forty-odd
 * patterns each time cost about 0.14 ms a request (measured). Pure, so a memo; bounded, so it never grows.
 */
const made = new Map<string, LevelLists>();
const MADE_MAX = 256;

/**
 * Pure: what a level allows a sandbox, each pattern with its reason; patterns the allowlist would refuse are left out.
 * A registry the repo uses is the host's mirror where the sandbox carried one (`mirrors`), as `sbx allow --preset` offers.
 */
export function levelLists(setting: LevelSetting, agents: readonly string[], mirrors: Mirrors | null = null): LevelLists {
  const key = JSON.stringify([setting.level, setting.repo, agents, mirrors]);
  const had = made.get(key);
  if (had) return had;
  const out = makeLevelLists(setting, agents, mirrors);
  if (made.size >= MADE_MAX) made.clear();
  made.set(key, out);
  return out;
}

function makeLevelLists(setting: LevelSetting, agents: readonly string[], mirrors: Mirrors | null): LevelLists {
  const parts: LevelPart[] = [];
  const seen = new Set<string>();
  const add = (patterns: readonly string[], why: string) => {
    for (const p of patterns) {
      const r = parsePattern(p);
      // A level names hosts, never an address: an address is reached only through an entry the person made.
      if (!r.ok || (r.pattern.kind !== "exact" && r.pattern.kind !== "wildcard") || seen.has(r.canonical)) continue;
      seen.add(r.canonical);
      parts.push({ pattern: r.canonical, why });
    }
  };
  if (setting.level === "balanced") {
    for (const a of agents) {
      if (!isAgentName(a)) continue;
      add(AGENT_API[a] ?? [], `agent ${a}: its API`);
      add(PRESETS[AGENTS[a].preset], `agent ${a}: the ${AGENTS[a].preset} preset`);
    }
    for (const r of setting.repo.registries) {
      if (!Object.hasOwn(PRESETS, r.preset)) continue;
      const offer = presetOffer(r.preset, PRESETS[r.preset as PresetName], mirrors);
      add(offer.patterns, offer.mirrors.length > 0 ? `${r.preset} registry (${r.file}), through this machine's mirror (${[...new Set(offer.mirrors.map((m) => m.from))].join(", ")})` : `${r.preset} registry (${r.file})`);
    }
    for (const r of setting.repo.registryHosts) add([r.host], `npm registry (${r.file})`);
    for (const f of setting.repo.forges) add(FORGE_HOSTS[f.host] ?? [f.host], `forge of remote ${f.remote} (${f.host})`);
  }
  return { name: setting.level, parts, open: setting.level === "open" };
}

/** Package files and the registry preset each means; matched on a file's name, anywhere in the repo. */
const REGISTRY_FILES: readonly [RegExp, PresetName][] = [
  [/^(package\.json|package-lock\.json|npm-shrinkwrap\.json|yarn\.lock|pnpm-lock\.yaml|bun\.lockb?)$/, "npm"],
  [/^(requirements[^/]*\.txt|pyproject\.toml|setup\.py|setup\.cfg|Pipfile(\.lock)?|poetry\.lock|uv\.lock)$/, "pypi"],
  [/^Cargo\.(toml|lock)$/, "crates"],
  [/^go\.(mod|sum)$/, "go"],
  [/^(Gemfile(\.lock)?|[^/]+\.gemspec)$/, "rubygems"],
  [/^(pom\.xml|build\.gradle(\.kts)?|settings\.gradle(\.kts)?)$/, "maven"],
];

/** The pathspecs `git ls-files` is asked for (each `*` matches `/` too: any depth); the names are checked again here. */
export const REGISTRY_PATHSPECS: readonly string[] = [
  "*package.json", "*package-lock.json", "*npm-shrinkwrap.json", "*yarn.lock", "*pnpm-lock.yaml", "*bun.lock", "*bun.lockb", "*.npmrc",
  "*requirements*.txt", "*pyproject.toml", "*setup.py", "*setup.cfg", "*Pipfile", "*Pipfile.lock", "*poetry.lock", "*uv.lock",
  "*Cargo.toml", "*Cargo.lock", "*go.mod", "*go.sum", "*Gemfile", "*Gemfile.lock", "*.gemspec",
  "*pom.xml", "*build.gradle", "*build.gradle.kts", "*settings.gradle", "*settings.gradle.kts",
];

/** Pure: the registries a repo's files say it uses, each with the first file that says so (shortest path first). */
export function registriesOf(files: readonly string[]): RepoFacts["registries"] {
  const out = new Map<PresetName, string>();
  const sorted = [...files].sort((a, b) => a.split("/").length - b.split("/").length || a.localeCompare(b));
  for (const f of sorted) {
    // A dependency's own files (vendored, installed) say nothing of what this repo uses.
    if (/(^|\/)(node_modules|vendor|\.venv|venv|site-packages|target)\//.test(f)) continue;
    const name = f.slice(f.lastIndexOf("/") + 1);
    for (const [re, preset] of REGISTRY_FILES) if (re.test(name) && !out.has(preset)) out.set(preset, f);
  }
  return [...out].map(([preset, file]) => ({ preset, file }));
}

/** Pure: the hosts an .npmrc's `registry=` and `@scope:registry=` lines name (by name only; an address is left out). */
export function npmrcRegistryHosts(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split(/\r?\n/)) {
    const m = /^\s*(?:@[a-z0-9._-]+:)?registry\s*=\s*(\S+)\s*$/i.exec(line);
    if (!m) continue;
    let host: string;
    try {
      const u = new URL(m[1]!);
      if (u.protocol !== "https:" && u.protocol !== "http:") continue;
      host = u.port === "" || u.port === "443" || u.port === "80" ? u.hostname : `${u.hostname}:${u.port}`;
    } catch {
      continue;
    }
    const h = normalizeHost(host.replace(/:\d+$/, ""));
    if (h === null || canonicalIp(h) !== null || out.includes(host)) continue;
    out.push(host.replace(/^[^:]+/, h));
  }
  return out;
}

/**
 * Pure: the forge host of each network remote (`https://host/…`, `ssh://[user@]host[:port]/…`, `git://host/…`,
 * `user@host:path`); local paths, `file://` and address literals are not forges.
 */
export function forgesOf(remotes: Readonly<Record<string, string>>): RepoFacts["forges"] {
  const out: RepoFacts["forges"] = [];
  for (const [remote, url] of Object.entries(remotes).sort(([a], [b]) => a.localeCompare(b))) {
    let host: string | null = null;
    const scp = /^(?:[^@/\s]+@)?([^:/\s]+):(?!\/\/)/.exec(url);
    try {
      if (/^(https?|ssh|git|git\+ssh|ssh\+git):\/\//i.test(url)) host = new URL(url).hostname;
      else if (scp && !url.startsWith("/")) host = scp[1]!;
    } catch {
      host = null;
    }
    const h = host === null ? null : normalizeHost(host);
    if (h === null || canonicalIp(h) !== null || !h.includes(".") || out.some((f) => f.host === h)) continue;
    out.push({ host: h, remote });
  }
  return out;
}
