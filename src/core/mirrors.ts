// Package mirrors: what the host's npm, pip (and uv), Go and cargo settings name instead of the public registries, read
// from their files' text and the environment, judged for what may cross into a sandbox (no credential, no address that
// means something else inside), and what a sandbox then gets (variables, npm and cargo config lines) and which hosts it
// needs (the mirror offered in place of a preset's public registry). Pure: the host side (secrets/host-mirrors.ts) reads
// the files by the copy-in door's rules and scans what this carries.
import { z } from "zod";
import { classify, parseIp } from "./addresses";
import { normalizeHost } from "./allowlist";
import { urlWithoutCredentials } from "./copy-in";
import { patternFor } from "./egress";
import { PRESETS } from "./presets";

/** The tools whose mirrors are carried, and the preset each one's public registry is in. */
export const MIRROR_TOOLS = { npm: "npm", pip: "pypi", go: "go", cargo: "crates" } as const;
export type MirrorTool = keyof typeof MIRROR_TOOLS;
export type MirrorPreset = (typeof MIRROR_TOOLS)[MirrorTool];

/** Of each preset, the hosts that are the public registry a mirror stands in for (the rest: sites, toolchains). */
export const REGISTRY_HOSTS: Record<MirrorPreset, readonly string[]> = {
  npm: ["registry.npmjs.org", "registry.yarnpkg.com"],
  pypi: ["pypi.org", "*.pypi.org", "files.pythonhosted.org"],
  go: ["proxy.golang.org"],
  crates: ["crates.io", "index.crates.io", "static.crates.io"],
};

/** One setting carried into a sandbox, credential-free. */
export const MirrorSettingSchema = z
  .object({
    tool: z.enum(["npm", "pip", "go", "cargo"]),
    /** As the tool names it: `registry`, `@corp:registry`, `index-url`, `GOPROXY`, `source.crates-io.replace-with`. */
    key: z.string().min(1),
    value: z.string(),
    /** Where it was read, as a person knows it: `~/.npmrc`, `$PIP_INDEX_URL`. */
    from: z.string(),
    /** How the sandbox gets it: the variable of that name, a line of sbx's npm config, cargo's config. */
    via: z.enum(["env", "npmrc", "cargo"]),
    /** The allowlist patterns it needs (host, or host:port off 443 and 80). */
    hosts: z.array(z.string()),
    /** It stands in for the tool's public registry (whose preset hosts are then not needed for it). */
    replaces: z.boolean(),
  })
  .strict();
export type MirrorSetting = z.infer<typeof MirrorSettingSchema>;

/** What a sandbox's identity keeps of the host's mirrors (read at create). */
export const MirrorsSchema = z.object({ settings: z.array(MirrorSettingSchema) }).strict();
export type Mirrors = z.infer<typeof MirrorsSchema>;

/** A setting left on the host (or a part of one taken out), why, and the command that does it sbx's way. */
export interface MirrorNote {
  tool: MirrorTool;
  from: string;
  key: string;
  why: string;
  /** What to run instead (a `sbx secret set …` that binds the credential, a `sbx publish …`), or null. */
  hint: string | null;
}

export interface MirrorPlan {
  settings: MirrorSetting[];
  notes: MirrorNote[];
}

/** A text the host side read: as a person names it, and its content (null: not there; a string reason: not read). */
export interface HostText {
  shown: string;
  text: string | null;
}

type Judged = { ok: true; value: string; hosts: string[]; removed: string[]; userinfo: boolean; host: string } | { ok: false; why: string; hint: string | null };

/** Pure: a secret's name from a host (`npm.corp.example` → `NPM_TOKEN_NPM_CORP_EXAMPLE`), within the store's rules. */
export function secretNameFor(prefix: string, host: string | null): string {
  const tail = host === null ? "" : `_${host.replace(/:\d+$/, "").toUpperCase().replace(/[^A-Z0-9]+/g, "_")}`;
  return `${prefix}${tail}`.slice(0, 64).replace(/_+$/, "");
}

/** The command that binds a user and password as HTTP Basic for a host: the value never in argv, never in the sandbox. */
function basicHint(name: string, host: string): string {
  return `printf %s 'USER:PASSWORD' | base64 | tr -d '\\n' | sbx secret set ${name} --host ${host} --header 'Authorization: Basic {}'`;
}

/**
 * Pure: one registry address as a sandbox may be given it. Refused: a path on this machine (`file:`, a bare path), a
 * scheme other than http(s), this machine's loopback (inside, it is the sandbox's own), an address whose path holds
 * a key. Taken out (and said): a user and password, key-named query parameters, a fragment. `prefix` is kept as
 * written (cargo's `sparse+`); `bare` takes a scheme-less address as https (Go's rule).
 */
export function judgeRegistryUrl(raw: string, opts: { bare?: boolean } = {}): Judged {
  const s = raw.trim();
  const m = /^(sparse\+|registry\+)?(.*)$/s.exec(s)!;
  const prefix = m[1] ?? "";
  let rest = m[2]!;
  if (rest.startsWith("/") || rest.startsWith("~") || /^\.\.?\//.test(rest)) return { ok: false, why: "a path on this machine: a sandbox cannot read the host's files", hint: null };
  if (opts.bare && !/^[a-z][a-z0-9+.-]*:/i.test(rest)) rest = `https://${rest}`;
  let u: URL;
  try {
    u = new URL(rest);
  } catch {
    return { ok: false, why: "not an address sbx can read", hint: null };
  }
  if (u.protocol === "file:") return { ok: false, why: "a path on this machine (file:): a sandbox cannot read the host's files", hint: null };
  if (u.protocol !== "https:" && u.protocol !== "http:") return { ok: false, why: `a ${u.protocol.slice(0, -1)} address: only http and https go through sbx's proxy`, hint: null };
  const host = normalizeHost(u.hostname);
  if (host === null) return { ok: false, why: "its host is not a valid name or address", hint: null };
  const port = u.port === "" ? (u.protocol === "https:" ? 443 : 80) : Number(u.port);
  if (host === "localhost" || host.endsWith(".localhost") || (parseIp(host) !== null && ["loopback", "unspecified"].includes(classify(host)))) {
    return {
      ok: false,
      why: `this machine's loopback (${host}:${port}): inside a sandbox that address is the sandbox's own`,
      hint: `sbx publish NAME ${port} lets a sandbox reach it, as host.sbx.internal:${port}; set the sandbox's own setting to that address`,
    };
  }
  const userinfo = u.username !== "" || u.password !== "";
  const clean = urlWithoutCredentials(u.toString());
  if (clean.url === null) return { ok: false, why: "its path holds what looks like a key: it cannot be carried without it", hint: null };
  // The address as it was judged (WHATWG's reading: a `\` is a `/`, the host lower-cased), so the tool inside reads
  // the authority that was checked, never another parser's idea of the text.
  // A bare authority stays bare (the parser's added `/` would change how some tools join paths onto it).
  const bare = /^[a-z][a-z0-9+.-]*:\/\/[^/?#\\]*$/i.test(rest) && clean.url.endsWith("/") ? clean.url.slice(0, -1) : clean.url;
  const value = `${prefix}${bare}`;
  return { ok: true, value, hosts: [patternFor(host, port)], removed: clean.removed, userinfo, host };
}

/**
 * Records a judged address: a refusal as a note, a part taken out as a note with the way to bind it (a user and
 * password: as HTTP Basic, under a secret named `authPrefix` and the host).
 */
function take(p: MirrorPlan, base: Omit<MirrorSetting, "value" | "hosts">, raw: string, authPrefix: string, opts: { bare?: boolean } = {}): MirrorSetting | null {
  const j = judgeRegistryUrl(raw, opts);
  if (!j.ok) {
    p.notes.push({ tool: base.tool, from: base.from, key: base.key, why: `not carried: ${j.why}`, hint: j.hint });
    return null;
  }
  if (j.removed.length > 0) {
    p.notes.push({
      tool: base.tool,
      from: base.from,
      key: base.key,
      why: `carried without ${j.removed.join(", ")}: a credential never enters a sandbox`,
      hint: j.userinfo ? basicHint(secretNameFor(authPrefix, j.host), j.host) : null,
    });
  }
  const s: MirrorSetting = { ...base, value: j.value, hosts: j.hosts };
  p.settings.push(s);
  return s;
}

const empty = (): MirrorPlan => ({ settings: [], notes: [] });

/** `key = value` lines of an ini-like text (npm's), comments and sections aside; values unquoted, inline comments cut. */
function iniLines(text: string): { key: string; value: string; line: number }[] {
  const out: { key: string; value: string; line: number }[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const l = raw.trim();
    if (l === "" || l.startsWith(";") || l.startsWith("#") || l.startsWith("[")) return;
    const eq = l.indexOf("=");
    if (eq <= 0) return;
    const key = l.slice(0, eq).trim();
    let value = l.slice(eq + 1).trim();
    if (/^"(?:[^"\\]|\\.)*"$/.test(value)) {
      try {
        value = JSON.parse(value) as string;
      } catch {
        /* as written */
      }
    } else if (/^'.*'$/.test(value)) value = value.slice(1, -1);
    else value = value.replace(/\s[;#].*$/, "").trim();
    out.push({ key, value, line: i + 1 });
  });
  return out;
}

/** npm's `${VAR}` in a config value, from the host's environment (npm expands them the same way). */
function expandEnv(v: string, env: Readonly<Record<string, string | undefined>>): string {
  return v.replace(/(\\*)\$\{([^}]+)\}/g, (all, esc: string, name: string) => (esc.length % 2 === 1 ? all : `${esc}${env[name] ?? ""}`));
}

/** The credential keys of npm's config (alone, or after a `//host/path/:` prefix). */
const NPM_CREDENTIAL = /^(?:_authToken|_auth|_password|certfile|keyfile)$/;

/**
 * Pure: npm's mirror settings from the user config (`~/.npmrc` or `$NPM_CONFIG_USERCONFIG`) and the environment
 * (`npm_config_registry`, `npm_config_@scope:registry`, any case). The default and scoped registries are carried; a
 * credential (`//host/:_authToken`, `_auth`, `_password`, a client certificate) never is, and its note says how to bind it.
 */
export function npmMirrors(file: HostText | null, env: Readonly<Record<string, string | undefined>>): MirrorPlan {
  const p = empty();
  const fromFile = file?.text == null ? [] : iniLines(file.text);
  let defaultHost: string | null = null;
  const registries: { key: string; value: string; from: string; via: "env" | "npmrc" }[] = [];
  for (const l of fromFile) {
    if (l.key === "registry" || /^@[^:\s]+:registry$/.test(l.key)) registries.push({ key: l.key, value: expandEnv(l.value, env), from: file!.shown, via: "npmrc" });
  }
  for (const [k, v] of Object.entries(env)) {
    const m = /^npm_config_(registry|@[^:\s]+:registry)$/i.exec(k);
    if (m && v !== undefined && v !== "") registries.push({ key: m[1]!.toLowerCase() === "registry" ? "registry" : m[1]!, value: v, from: `$${k}`, via: "env" });
  }
  // The variable wins over the file, as in npm.
  const chosen = new Map<string, (typeof registries)[number]>();
  for (const r of registries) if (!chosen.has(r.key) || r.via === "env") chosen.set(r.key, r);
  for (const r of chosen.values()) {
    const envName = r.via === "env" ? r.from.slice(1) : null;
    const s = take(p, { tool: "npm", key: envName ?? r.key, from: r.from, via: r.via, replaces: r.key === "registry" }, r.value, "NPM_AUTH");
    if (s && r.key === "registry") defaultHost = s.hosts[0] ?? null;
  }
  for (const l of fromFile) {
    const nerf = /^\/\/([^/]+)(?:\/.*)?:([^:]+)$/.exec(l.key);
    const bare = NPM_CREDENTIAL.test(l.key) ? l.key : null;
    const cred = nerf && NPM_CREDENTIAL.test(nerf[2]!) ? nerf[2]! : bare;
    if (cred === null) continue;
    const host = nerf ? nerf[1]! : defaultHost;
    const where = `${file!.shown} line ${l.line}`;
    const key = nerf ? `//${nerf[1]}/…:${cred}` : cred;
    const h = host ?? "REGISTRY_HOST";
    const hint =
      cred === "_authToken"
        ? `sbx secret set ${secretNameFor("NPM_TOKEN", host)} --host ${h.replace(/:\d+$/, "")} --npmrc`
        : cred === "_auth"
          ? `sbx secret set ${secretNameFor("NPM_AUTH", host)} --host ${h.replace(/:\d+$/, "")} --header 'Authorization: Basic {}' (its value is the _auth line's)`
          : cred === "_password"
            ? basicHint(secretNameFor("NPM_AUTH", host), h.replace(/:\d+$/, ""))
            : null;
    p.notes.push({ tool: "npm", from: where, key, why: `not carried: npm's ${cred === "certfile" || cred === "keyfile" ? "client certificate" : "credential"} for ${h}`, hint });
  }
  return p;
}

/** configparser's view of a pip.conf: section → key (lower case, `_` as `-`) → value, continuation lines joined. */
function pipSections(text: string): Map<string, Map<string, { value: string; line: number }>> {
  const out = new Map<string, Map<string, { value: string; line: number }>>();
  let section: Map<string, { value: string; line: number }> | null = null;
  let last: { value: string; line: number } | null = null;
  text.split(/\r?\n/).forEach((raw, i) => {
    if (/^\s*(?:[#;].*)?$/.test(raw)) return;
    if (/^\s/.test(raw) && last) {
      last.value += `\n${raw.trim()}`;
      return;
    }
    const sec = /^\[([^\]]+)\]/.exec(raw.trim());
    if (sec) {
      const name = sec[1]!.trim().toLowerCase();
      section = out.get(name) ?? new Map();
      out.set(name, section);
      last = null;
      return;
    }
    const kv = /^([^=:]+)[=:](.*)$/.exec(raw);
    if (!kv || !section) return;
    last = { value: kv[2]!.trim(), line: i + 1 };
    section.set(kv[1]!.trim().toLowerCase().replace(/_/g, "-"), last);
  });
  return out;
}

/** The variables pip and uv read for their indexes: which replace the public one, which add to it. */
const PIP_VARS: readonly { name: string; key: "index-url" | "extra-index-url"; list: boolean }[] = [
  { name: "PIP_INDEX_URL", key: "index-url", list: false },
  { name: "PIP_EXTRA_INDEX_URL", key: "extra-index-url", list: true },
  { name: "UV_DEFAULT_INDEX", key: "index-url", list: false },
  { name: "UV_INDEX_URL", key: "index-url", list: false },
  { name: "UV_EXTRA_INDEX_URL", key: "extra-index-url", list: true },
];

/**
 * Pure: pip's (and uv's) index settings. `files` in pip's order (global, then user, then `$PIP_CONFIG_FILE`): a later
 * one's key wins, `[install]` over `[global]`; the variables win over every file. Carried as pip's variables (so the
 * sandbox's own files stay its own): the index, the extra indexes, and `trusted-host` for the carried hosts only.
 */
export function pipMirrors(files: readonly HostText[], env: Readonly<Record<string, string | undefined>>): MirrorPlan {
  const p = empty();
  const found = new Map<string, { value: string; from: string }>();
  for (const f of files) {
    if (f.text == null) continue;
    const secs = pipSections(f.text);
    for (const sec of ["global", "install"]) {
      for (const [k, v] of secs.get(sec) ?? []) {
        if (k === "index-url" || k === "extra-index-url" || k === "trusted-host") found.set(k, { value: v.value, from: `${f.shown} line ${v.line}` });
      }
    }
  }
  const urls = (v: string) => v.split(/\s+/).filter(Boolean);
  const carried: MirrorSetting[] = [];
  const fileIndex = found.get("index-url");
  if (env.PIP_INDEX_URL) carried.push(...takeAll(p, "PIP_INDEX_URL", "$PIP_INDEX_URL", [env.PIP_INDEX_URL.trim()], true));
  else if (fileIndex) carried.push(...takeAll(p, "PIP_INDEX_URL", fileIndex.from, urls(fileIndex.value).slice(0, 1), true));
  const fileExtra = found.get("extra-index-url");
  if (env.PIP_EXTRA_INDEX_URL) carried.push(...takeAll(p, "PIP_EXTRA_INDEX_URL", "$PIP_EXTRA_INDEX_URL", urls(env.PIP_EXTRA_INDEX_URL), false));
  else if (fileExtra) carried.push(...takeAll(p, "PIP_EXTRA_INDEX_URL", fileExtra.from, urls(fileExtra.value), false));
  // uv reads no pip.conf: only its own variables, carried as they are.
  for (const v of PIP_VARS.filter((x) => x.name.startsWith("UV_") && env[x.name])) carried.push(...takeAll(p, v.name, `$${v.name}`, v.list ? urls(env[v.name]!) : [env[v.name]!.trim()], v.key === "index-url"));
  // trusted-host turns certificate checks off for a host: only for the hosts carried, never another.
  const trusted = env.PIP_TRUSTED_HOST ? { value: env.PIP_TRUSTED_HOST, from: "$PIP_TRUSTED_HOST" } : found.get("trusted-host");
  if (trusted) {
    const carriedHosts = new Set(carried.flatMap((s) => s.hosts.map((h) => h.replace(/:\d+$/, ""))));
    const keep = urls(trusted.value).filter((h) => carriedHosts.has(h.replace(/:\d+$/, "").toLowerCase()));
    if (keep.length > 0) p.settings.push({ tool: "pip", key: "PIP_TRUSTED_HOST", value: keep.join(" "), from: trusted.from, via: "env", hosts: [], replaces: false });
  }
  return p;
}

/** Each address of a list judged on its own; what is carried is one setting of the list's variable. */
function takeAll(p: MirrorPlan, name: string, from: string, list: readonly string[], replaces: boolean): MirrorSetting[] {
  const kept: MirrorSetting[] = [];
  for (const u of list) take({ settings: kept, notes: p.notes }, { tool: "pip", key: name, from, via: "env", replaces }, u, "PIP_INDEX_AUTH");
  if (kept.length === 0) return [];
  const one: MirrorSetting = { ...kept[0]!, value: kept.map((s) => s.value).join(" "), hosts: [...new Set(kept.flatMap((s) => s.hosts))] };
  p.settings.push(one);
  return [one];
}

/** Go's variables that say where modules come from and how they are checked. */
export const GO_VARS = ["GOPROXY", "GOSUMDB", "GOPRIVATE", "GONOPROXY", "GONOSUMDB"] as const;

/** `KEY=VALUE` lines of Go's env file (`go env -w` writes them). */
function goEnvFile(text: string): Map<string, { value: string; line: number }> {
  const out = new Map<string, { value: string; line: number }>();
  text.split(/\r?\n/).forEach((l, i) => {
    const m = /^([A-Z0-9_]+)=(.*)$/.exec(l.trim());
    if (m) out.set(m[1]!, { value: m[2]!, line: i + 1 });
  });
  return out;
}

/**
 * Pure: Go's module settings from its env file (`$GOENV`, else the user config dir's `go/env`) and the environment (which
 * wins). GOPROXY's list is judged element by element (`direct` and `off` kept; a refused element left out, said);
 * GOSUMDB's address, when it names one, too; the private-module patterns are carried as they are.
 */
export function goMirrors(file: HostText | null, env: Readonly<Record<string, string | undefined>>): MirrorPlan {
  const p = empty();
  const fromFile = file?.text == null ? new Map<string, { value: string; line: number }>() : goEnvFile(file.text);
  for (const name of GO_VARS) {
    const e = env[name];
    const f = fromFile.get(name);
    const v = e !== undefined && e !== "" ? { value: e, from: `$${name}` } : f && f.value !== "" ? { value: f.value, from: `${file!.shown} line ${f.line}` } : null;
    if (v === null) continue;
    const base = { tool: "go" as const, key: name, from: v.from, via: "env" as const };
    if (name === "GOPROXY") {
      const parts = v.value.split(/([,|])/);
      const kept: string[] = [];
      const hosts: string[] = [];
      for (let i = 0; i < parts.length; i += 2) {
        const el = parts[i]!.trim();
        if (el === "") continue;
        if (el === "direct" || el === "off") {
          kept.push(el, parts[i + 1] ?? ",");
          continue;
        }
        const scratch: MirrorPlan = { settings: [], notes: p.notes };
        const s = take(scratch, { ...base, replaces: true }, el, "GOPROXY_AUTH", { bare: true });
        if (s === null) continue;
        kept.push(s.value, parts[i + 1] ?? ",");
        hosts.push(...s.hosts);
      }
      const value = kept.slice(0, -1).join("");
      if (value === "") continue;
      // The public proxy named in the list is still the public registry: the mirror stands in only for what it replaces.
      p.settings.push({ ...base, value, hosts: [...new Set(hosts)], replaces: !hosts.includes("proxy.golang.org") });
      continue;
    }
    if (name === "GOSUMDB") {
      const words = v.value.trim().split(/\s+/);
      if (words[0] === "off" || words.length === 1) {
        const host = words[0] === "off" ? null : normalizeHost(words[0]!.split("+")[0]!);
        p.settings.push({ ...base, value: v.value.trim(), hosts: host ? [host] : [], replaces: false });
        continue;
      }
      const scratch: MirrorPlan = { settings: [], notes: p.notes };
      const s = take(scratch, { ...base, replaces: false }, words[1]!, "GOSUMDB_AUTH", { bare: true });
      if (s) p.settings.push({ ...s, value: `${words[0]} ${s.value}` });
      continue;
    }
    p.settings.push({ ...base, value: v.value, hosts: [], replaces: false });
  }
  return p;
}

const CargoTable = z.record(z.string(), z.unknown());
const str = (v: unknown): string | null => (typeof v === "string" ? v : null);

/** A cargo registry's name as its variables spell it (`my-corp` → `MY_CORP`). */
export function cargoVarName(name: string): string {
  return name.toUpperCase().replace(/-/g, "_");
}

/**
 * Pure: cargo's settings from `$CARGO_HOME/config.toml` (already parsed) and its variables. crates.io's source
 * replacement (`[source.crates-io] replace-with`, followed to the registry it names) is carried as cargo's config (cargo
 * reads the `[source]` table from no variable); named registries (`[registries.X] index`) and `registry.default` as
 * cargo's variables. A token (`[registries.X] token`, `[registry] token`, `CARGO_REGISTRIES_X_TOKEN`) never is;
 * a directory or local-registry source is a path on this machine, and is said.
 */
export function cargoMirrors(file: { shown: string; value: unknown } | null, env: Readonly<Record<string, string | undefined>>): MirrorPlan {
  const p = empty();
  const cfg = CargoTable.safeParse(file?.value ?? {});
  const root = cfg.success ? cfg.data : {};
  const table = (v: unknown) => {
    const r = CargoTable.safeParse(v);
    return r.success ? r.data : {};
  };
  const shown = file?.shown ?? "cargo's config";
  const sources = table(root.source);
  const registries = table(root.registries);
  const index = (name: string): { url: string; from: string; key: string } | null => {
    const fromEnv = env[`CARGO_REGISTRIES_${cargoVarName(name)}_INDEX`];
    if (fromEnv) return { url: fromEnv, from: `$CARGO_REGISTRIES_${cargoVarName(name)}_INDEX`, key: `registries.${name}.index` };
    const i = str(table(registries[name]).index);
    return i === null ? null : { url: i, from: shown, key: `registries.${name}.index` };
  };
  const token = (name: string) => `CARGO_REGISTRIES_${cargoVarName(name)}_TOKEN`;
  // crates.io's replacement: the chain of `replace-with` to the source (or named registry) at its end.
  let name = str(table(sources["crates-io"])["replace-with"]);
  const seen = new Set<string>(["crates-io"]);
  while (name !== null && !seen.has(name)) {
    seen.add(name);
    const src = table(sources[name]);
    const next = str(src["replace-with"]);
    if (next !== null) {
      name = next;
      continue;
    }
    const base = { tool: "cargo" as const, from: shown, via: "cargo" as const, replaces: true };
    const reg = str(src.registry);
    const idx = reg === null ? index(name) : null;
    if (reg !== null || idx !== null) {
      const s = take(p, { ...base, key: reg !== null ? `source.${name}.registry` : `registries.${name}.index`, from: idx?.from ?? shown }, reg ?? idx!.url, "CARGO_INDEX_AUTH");
      if (s) p.settings.push({ tool: "cargo", key: "source.crates-io.replace-with", value: name, from: shown, via: "cargo", hosts: [], replaces: false });
    } else {
      const kind = ["directory", "local-registry", "git"].find((k) => src[k] !== undefined) ?? "source";
      p.notes.push({ tool: "cargo", from: shown, key: `source.${name}`, why: kind === "git" ? "not carried: a git source stands in for crates.io (only registries are carried)" : `not carried: a ${kind} on this machine stands in for crates.io, and a sandbox cannot read the host's files`, hint: null });
    }
    name = null;
  }
  // Named registries: by cargo's variables, which it reads beside any config the sandbox has.
  const names = new Set([...Object.keys(registries), ...Object.keys(env).flatMap((k) => /^CARGO_REGISTRIES_([A-Z0-9_]+)_INDEX$/.exec(k)?.[1]?.toLowerCase() ?? [])]);
  for (const n of names) {
    if (n === "crates-io") continue;
    const i = index(n);
    if (i === null) continue;
    const v = `CARGO_REGISTRIES_${cargoVarName(n)}_INDEX`;
    take(p, { tool: "cargo", key: v, from: i.from, via: "env", replaces: false }, i.url, "CARGO_INDEX_AUTH");
  }
  const def = env.CARGO_REGISTRY_DEFAULT ?? str(table(root.registry).default);
  if (def !== null && def !== "" && def !== "crates-io") p.settings.push({ tool: "cargo", key: "CARGO_REGISTRY_DEFAULT", value: def, from: env.CARGO_REGISTRY_DEFAULT ? "$CARGO_REGISTRY_DEFAULT" : shown, via: "env", hosts: [], replaces: false });
  // Tokens: said with the variable cargo reads, which sbx fills with a placeholder the proxy swaps on that host alone.
  const hostOf = (n: string) => {
    const s = p.settings.find((x) => x.key === `CARGO_REGISTRIES_${cargoVarName(n)}_INDEX` || x.key.startsWith(`source.${n}.`) || x.key === `registries.${n}.index`);
    return s?.hosts[0]?.replace(/:\d+$/, "") ?? "REGISTRY_HOST";
  };
  for (const [n, r] of Object.entries(registries)) {
    if (str(table(r).token) !== null) p.notes.push({ tool: "cargo", from: shown, key: `registries.${n}.token`, why: `not carried: cargo's token for ${n}`, hint: `sbx secret set ${token(n)} --host ${hostOf(n)}` });
  }
  if (str(table(root.registry).token) !== null) p.notes.push({ tool: "cargo", from: shown, key: "registry.token", why: "not carried: cargo's token for crates.io", hint: "sbx secret set CARGO_REGISTRY_TOKEN --host crates.io" });
  for (const k of Object.keys(env)) {
    const m = /^CARGO_REGISTRIES_([A-Z0-9_]+)_TOKEN$/.exec(k) ?? (k === "CARGO_REGISTRY_TOKEN" ? [k, "CRATES_IO"] : null);
    if (m) p.notes.push({ tool: "cargo", from: `$${k}`, key: k, why: "not carried: a token", hint: `sbx secret set ${k} --host ${m[1] === "CRATES_IO" ? "crates.io" : hostOf(m[1]!.toLowerCase())}` });
  }
  return p;
}

/** Pure: the plans of every tool as one. */
export function mergePlans(...plans: readonly MirrorPlan[]): MirrorPlan {
  return { settings: plans.flatMap((x) => x.settings), notes: plans.flatMap((x) => x.notes) };
}

/** What a sandbox gets of its mirrors: the variables, npm's config lines, cargo's config text (null: none). */
export interface MirrorDelivery {
  env: Record<string, string>;
  npmrc: string[];
  cargoToml: string | null;
}

/** TOML's basic string. */
const toml = (s: string) => JSON.stringify(s);

/** Pure: how the settings reach a sandbox. */
export function mirrorDelivery(m: Mirrors): MirrorDelivery {
  const env: Record<string, string> = {};
  const npmrc: string[] = [];
  const cargo: string[] = [];
  for (const s of m.settings) {
    if (s.via === "env") env[s.key] = s.value;
    else if (s.via === "npmrc") npmrc.push(`${s.key}=${s.value}`);
  }
  const replace = m.settings.find((s) => s.via === "cargo" && s.key === "source.crates-io.replace-with");
  const target = m.settings.find((s) => s.via === "cargo" && s !== replace);
  if (replace && target) {
    cargo.push("[source.crates-io]", `replace-with = ${toml(replace.value)}`, "");
    if (target.key.startsWith("source.")) cargo.push(`[source.${toml(replace.value)}]`, `registry = ${toml(target.value)}`);
    else cargo.push(`[registries.${toml(replace.value)}]`, `index = ${toml(target.value)}`);
  }
  return { env, npmrc, cargoToml: cargo.length ? `# carried by sbx from the host's cargo config: crates.io's mirror\n${cargo.join("\n")}\n` : null };
}

/** What `sbx allow --preset` adds on a host with mirrors: the patterns, and each mirror that changed them. */
export interface PresetOffer {
  patterns: string[];
  /** The preset's public registry hosts left out because a mirror stands in for them. */
  replaced: string[];
  /** The mirrors' hosts added, with where each was read. */
  mirrors: { host: string; from: string }[];
}

/**
 * Pure: a preset as this host would use it. For npm, pypi, go and crates: a mirror that stands in for the public
 * registry replaces the preset's registry hosts (its site and toolchain hosts stay), and every mirror host the tool's
 * settings name is added; GOSUMDB=off drops the checksum database. Any other preset, or no mirror: as it is.
 */
export function presetOffer(name: string, patterns: readonly string[], m: Mirrors | null): PresetOffer {
  const tool = (Object.keys(MIRROR_TOOLS) as MirrorTool[]).find((t) => MIRROR_TOOLS[t] === name);
  const mine = tool && m ? m.settings.filter((s) => s.tool === tool) : [];
  if (!tool || mine.length === 0) return { patterns: [...patterns], replaced: [], mirrors: [] };
  const registry = REGISTRY_HOSTS[MIRROR_TOOLS[tool]];
  const replaced = mine.some((s) => s.replaces) ? patterns.filter((p) => registry.includes(p)) : [];
  if (tool === "go" && mine.some((s) => s.key === "GOSUMDB")) replaced.push(...patterns.filter((p) => p === "sum.golang.org"));
  const kept = patterns.filter((p) => !replaced.includes(p));
  const mirrors: { host: string; from: string }[] = [];
  for (const s of mine) for (const h of s.hosts) if (!mirrors.some((x) => x.host === h) && !kept.includes(h)) mirrors.push({ host: h, from: s.from });
  return { patterns: [...kept, ...mirrors.map((x) => x.host)], replaced: replaced.filter((r) => !mirrors.some((x) => x.host === r)), mirrors };
}

/** Pure: the hosts a sandbox's mirrors need, each once, with the setting that first named it. */
export function mirrorHosts(m: Mirrors): { host: string; tool: MirrorTool; from: string }[] {
  const out: { host: string; tool: MirrorTool; from: string }[] = [];
  for (const s of m.settings) for (const h of s.hosts) if (!out.some((x) => x.host === h)) out.push({ host: h, tool: s.tool, from: s.from });
  return out;
}

/** The preset names a tool's public registry is in (`sbx allow --preset npm`). */
export function presetOf(tool: MirrorTool): MirrorPreset {
  return MIRROR_TOOLS[tool];
}

/** Every preset's registry hosts are in the preset (a rename in presets.ts would otherwise drop the swap silently). */
export function registryHostsInPresets(): string[] {
  return (Object.keys(REGISTRY_HOSTS) as MirrorPreset[]).flatMap((k) => REGISTRY_HOSTS[k].filter((h) => !(PRESETS[k] as readonly string[]).includes(h)).map((h) => `${k}: ${h}`));
}
