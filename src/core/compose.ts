// Pure: a devcontainer's compose file (`dockerComposeFile`, `service`, `runServices`) as sbx runs it: the sandbox's own
// service gives the sandbox's image and variables, the others become the sandbox's services. The file is repo content
// the agent may have written, so it is held to what sbx gives every service: each key is honoured as sbx does it,
// ignored and listed, or refused with its reason; none is honoured as Docker would (no privilege, no host namespace,
// no host path, no variable of the host's: interpolation sees an empty environment).
import { SbxError } from "./errors";
import { IMAGE_REF, MAX_SERVICES, SERVICE_NAME, serviceEnvRefusal, servicesProblem, ServiceSpecSchema, DURATION, USER_SPEC, VOLUME_KEY, type Healthcheck, type ServiceSpec } from "./services";

/** How much of a parsed compose document sbx walks at most (YAML aliases repeat a node wherever they stand). */
export const COMPOSE_BOUNDS = { nodes: 20_000, depth: 32, files: 4 } as const;

/** What the compose planning needs of the file system, handed in (checked paths, bounded reads). */
export interface ComposeContext {
  /** The compose file as the person names it (in messages). */
  file: string;
  /** A path the compose file names (relative to its dir), resolved; it must exist and stay inside the repo (config error naming `key` otherwise). */
  inside(path: string, key: string): string;
  /** An env_file's text (its path from `inside`); a config error when it cannot be read or is too large. */
  readEnvFile(path: string, key: string): string;
  /** Whether a path exists (env_file `required: false`). */
  exists(path: string): boolean;
  /** The host's secret values: a variable holding one is not set. */
  knownSecrets: readonly string[];
}

/** The sandbox's own service in the compose file: where its image comes from, and its variables. */
export interface ComposeSandbox {
  image?: string;
  build?: { dockerfile: string; context: string; args?: Record<string, string> };
  env: Record<string, string>;
}

export interface ComposePlan {
  sandbox: ComposeSandbox;
  services: ServiceSpec[];
  notes: string[];
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

function refuse(ctx: Pick<ComposeContext, "file">, what: string, why: string, hint?: string): never {
  throw new SbxError("config", `${ctx.file}: ${what}: ${why}`, {
    hint: hint ?? "sbx runs each service as a container of the sandbox's: its network, no capability, no host path or host namespace, nothing of your environment. Change the compose file, or pass --service yourself.",
  });
}

/**
 * Pure: a parsed YAML value copied within bounds: at most `nodes` nodes (an alias counts each time it stands) and
 * `depth` levels; a `__proto__` key (an object's prototype, not a key) is refused; anything but objects, arrays,
 * strings, numbers, booleans and null is refused.
 */
export function boundedCopy(v: unknown, file: string, bounds: { nodes: number; depth: number } = COMPOSE_BOUNDS): unknown {
  let nodes = 0;
  const walk = (x: unknown, depth: number, at: string): unknown => {
    if (++nodes > bounds.nodes) throw new SbxError("config", `${file}: more than ${bounds.nodes} values (aliases counted where they stand): sbx reads no compose file this large`, { hint: "Write the services out plainly." });
    if (depth > bounds.depth) throw new SbxError("config", `${file}: nested more than ${bounds.depth} deep at ${at}`, { hint: "Write the services out plainly." });
    if (x === null || typeof x === "string" || typeof x === "boolean") return x;
    if (typeof x === "number") return Number.isFinite(x) ? x : String(x);
    if (Array.isArray(x)) return x.map((e, i) => walk(e, depth + 1, `${at}[${i}]`));
    if (isObj(x) && (Object.getPrototypeOf(x) === Object.prototype || Object.getPrototypeOf(x) === null)) {
      const out: Obj = {};
      for (const k of Object.keys(x)) {
        if (k === "__proto__") throw new SbxError("config", `${file}: a key __proto__ at ${at}`, { hint: "Remove it." });
        out[k] = walk(x[k], depth + 1, `${at}.${k}`);
      }
      return out;
    }
    throw new SbxError("config", `${file}: a value of a kind sbx does not read at ${at}`, { hint: "Write plain YAML: mappings, lists, strings, numbers." });
  };
  return walk(v, 0, "");
}

/**
 * Pure: compose's `${VAR}` interpolation with an EMPTY environment (sbx never reads yours, nor a .env file): `$$` is
 * `$`; `${VAR:-d}` and `${VAR-d}` are d; `${VAR}`, `$VAR`, `${VAR:+a}` are empty; `${VAR:?e}` is refused. Each variable
 * read is said once in `notes`.
 */
export function interpolate(s: string, where: string, notes: Set<string>, ctx: Pick<ComposeContext, "file">): string {
  if (!s.includes("$")) return s;
  let out = "";
  let i = 0;
  while (i < s.length) {
    const c = s[i]!;
    if (c !== "$") {
      out += c;
      i++;
      continue;
    }
    const next = s[i + 1];
    if (next === "$") {
      out += "$";
      i += 2;
      continue;
    }
    const bare = /^[A-Za-z_][A-Za-z0-9_]*/.exec(s.slice(i + 1));
    if (bare) {
      notes.add(`${where}: $${bare[0]} is empty (sbx never reads your environment or a .env file)`);
      i += 1 + bare[0].length;
      continue;
    }
    if (next === "{") {
      // The matching brace, counting nested ${…} in a default.
      let depth = 1;
      let j = i + 2;
      while (j < s.length && depth > 0) {
        if (s[j] === "$" && s[j + 1] === "{") {
          depth++;
          j += 2;
          continue;
        }
        if (s[j] === "}") depth--;
        j++;
      }
      if (depth !== 0) refuse(ctx, where, `an unclosed \${ in ${JSON.stringify(s.slice(0, 80))}`);
      const body = s.slice(i + 2, j - 1);
      const m = /^([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-+?])([\s\S]*))?$/.exec(body);
      if (!m) refuse(ctx, where, `\${${body}} is not a variable compose knows`);
      const [, name, op, word = ""] = m;
      if (op === ":-" || op === "-") out += interpolate(word, where, notes, ctx);
      else if (op === ":?" || op === "?") refuse(ctx, where, `it requires ${name} (\${${name}${op}…}), which sbx never reads from your environment`, `Give it a default in the compose file (\${${name}:-value}), or set the variable with --service-env.`);
      else notes.add(`${where}: \${${name}} is empty (sbx never reads your environment or a .env file)`);
      i = j;
      continue;
    }
    out += "$";
    i++;
  }
  return out;
}

/** Pure: every string of a document interpolated (keys stay as written). */
function interpolateAll(v: unknown, where: string, notes: Set<string>, ctx: Pick<ComposeContext, "file">): unknown {
  if (typeof v === "string") return interpolate(v, where, notes, ctx);
  if (Array.isArray(v)) return v.map((e, i) => interpolateAll(e, `${where}[${i}]`, notes, ctx));
  if (isObj(v)) return Object.fromEntries(Object.entries(v).map(([k, e]) => [k, interpolateAll(e, where === "" ? k : `${where}.${k}`, notes, ctx)]));
  return v;
}

/** Pure: a command line split into words as compose splits a string `command:` (POSIX shell quoting, no expansion). */
export function splitWords(s: string): string[] | null {
  const out: string[] = [];
  let cur = "";
  let has = false;
  let i = 0;
  while (i < s.length) {
    const c = s[i]!;
    if (/\s/.test(c)) {
      if (has) out.push(cur);
      cur = "";
      has = false;
      i++;
    } else if (c === "'") {
      const end = s.indexOf("'", i + 1);
      if (end < 0) return null;
      cur += s.slice(i + 1, end);
      has = true;
      i = end + 1;
    } else if (c === '"') {
      i++;
      has = true;
      for (;;) {
        if (i >= s.length) return null;
        const d = s[i]!;
        if (d === '"') break;
        if (d === "\\" && i + 1 < s.length && '"\\$`\n'.includes(s[i + 1]!)) {
          cur += s[i + 1];
          i += 2;
          continue;
        }
        cur += d;
        i++;
      }
      i++;
    } else if (c === "\\") {
      if (i + 1 < s.length) cur += s[i + 1];
      has = true;
      i += 2;
    } else {
      cur += c;
      has = true;
      i++;
    }
  }
  if (has) out.push(cur);
  return out;
}

/** Pure: words quoted for /bin/sh (a healthcheck's exec form given to docker, which takes a shell command). */
export function shellQuote(words: readonly string[]): string {
  return words.map((w) => (/^[A-Za-z0-9_@%+=:,./-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`)).join(" ");
}

const scalar = (v: unknown): string | null => (typeof v === "string" ? v : typeof v === "number" || typeof v === "boolean" ? String(v) : null);

/** Service keys sbx honours (as sbx does them); everything else is ignored and listed, or refused (PRIVILEGED). */
const HONOURED = new Set(["image", "build", "environment", "env_file", "command", "entrypoint", "healthcheck", "volumes", "depends_on", "user"]);
/** Keys ignored without a word: sbx does what they ask anyway, or they say nothing of the container. */
const QUIET = new Set(["cap_drop", "init", "stop_signal", "stop_grace_period"]);

/** Pure: why a service key asks for more than sbx gives (a privilege, a host namespace, the engine), or null. */
function privilegeAsked(key: string, v: unknown): string | null {
  const list = (x: unknown) => (Array.isArray(x) ? x.map((e) => scalar(e) ?? JSON.stringify(e)) : isObj(x) ? Object.keys(x) : [scalar(x) ?? ""]).filter((e) => e !== "");
  switch (key) {
    case "privileged":
      return v === true || v === "true" ? "privileged: every capability and every device of the host" : null;
    case "cap_add":
      return list(v).length ? `cap_add ${list(v).join(", ")}: sbx drops every capability of a service and adds none` : null;
    case "devices":
    case "device_cgroup_rules":
    case "gpus":
      return list(v).length ? `${key}: the host's devices are not a service's` : null;
    case "security_opt": {
      const off = list(v).filter((o) => /unconfined|disable|systempaths/i.test(o));
      return off.length ? `security_opt ${off.join(", ")}: sbx never switches a confinement off` : null;
    }
    case "pid":
    case "ipc":
    case "uts":
    case "cgroup":
    case "userns_mode":
    case "network_mode": {
      const s = scalar(v) ?? "";
      if (s === "host") return `${key}: host: the host's own ${key === "network_mode" ? "network" : key === "userns_mode" ? "user namespace" : `${key} namespace`}`;
      if (/^(container|service):/.test(s) && key !== "network_mode") return `${key}: ${s}: another container's namespace`;
      return null;
    }
    case "volumes_from":
      return list(v).length ? "volumes_from: another container's volumes" : null;
    case "extends":
      return "extends: sbx reads the compose file named, not others it points to (write the service out)";
    case "cgroup_parent":
      return scalar(v) ? "cgroup_parent: a cgroup of the host's" : null;
    default:
      return null;
  }
}

/** Pure: compose's service name as sbx names a service (lower case, `_` and `.` as `-`); null when it cannot be one. */
export function serviceNameOf(composeName: string): string | null {
  const n = composeName.toLowerCase().replace(/[_.]/g, "-");
  return SERVICE_NAME.test(n) ? n : null;
}

/** `environment:` (a mapping or KEY=VALUE list) and `env_file:` as variables; what cannot be set is said in `notes`. */
function envOf(svc: Obj, where: string, ctx: ComposeContext, notes: Set<string>): Record<string, string> {
  const out: Record<string, string> = {};
  const set = (k: string, v: string | null, from: string) => {
    if (v === null) {
      notes.add(`${where}.${from}.${k} not set: it takes its value from your environment, which sbx never reads`);
      return;
    }
    const why = serviceEnvRefusal(k, v, ctx.knownSecrets);
    if (why !== null) notes.add(`${where}.${from}.${k} not set: ${why}`);
    else out[k] = v;
  };
  const files = svc.env_file === undefined ? [] : Array.isArray(svc.env_file) ? svc.env_file : [svc.env_file];
  for (const f of files) {
    const path = scalar(isObj(f) ? f.path : f);
    const required = isObj(f) ? f.required !== false : true;
    if (path === null) refuse(ctx, `${where}.env_file`, "not a path");
    if (!required && !ctx.exists(path)) {
      notes.add(`${where}.env_file ${path} not read: it does not exist (required: false)`);
      continue;
    }
    const abs = ctx.inside(path, `${where}.env_file`);
    const text = ctx.readEnvFile(abs, `${where}.env_file`);
    for (const line of text.split(/\r?\n/)) {
      const t = line.trim();
      if (t === "" || t.startsWith("#")) continue;
      const eq = t.indexOf("=");
      const k = (eq < 0 ? t : t.slice(0, eq)).replace(/^export\s+/, "").trim();
      const raw = eq < 0 ? null : t.slice(eq + 1).trim();
      const v = raw === null ? null : /^"(.*)"$|^'(.*)'$/.exec(raw) ? raw.slice(1, -1) : raw.replace(/\s+#.*$/, "");
      set(k, v === null ? null : interpolate(v, `${where}.env_file`, notes, ctx), "env_file");
    }
  }
  const env = svc.environment;
  if (Array.isArray(env)) {
    for (const e of env) {
      const s = scalar(e);
      if (s === null) refuse(ctx, `${where}.environment`, "an entry that is not KEY=VALUE");
      const eq = s.indexOf("=");
      set(eq < 0 ? s : s.slice(0, eq), eq < 0 ? null : s.slice(eq + 1), "environment");
    }
  } else if (isObj(env)) {
    for (const [k, v] of Object.entries(env)) set(k, v === null ? null : scalar(v), "environment");
  } else if (env !== undefined) {
    refuse(ctx, `${where}.environment`, "not a mapping or a list");
  }
  return out;
}

/** A build's context and Dockerfile, inside the repo; a context that is a URL (git, http) is refused. */
function buildOf(b: unknown, where: string, ctx: ComposeContext, notes: Set<string>): { dockerfile: string; context: string; args?: Record<string, string> } {
  const o: Obj = typeof b === "string" ? { context: b } : isObj(b) ? b : refuse(ctx, `${where}.build`, "not a path or a mapping");
  const context = scalar(o.context) ?? ".";
  if (/^[a-z][a-z0-9+.-]*:\/\/|^git@|^github\.com\//i.test(context)) refuse(ctx, `${where}.build.context`, `${context} is not a dir of the repo (sbx builds only from the repo's last commit)`);
  if (o.dockerfile_inline !== undefined) refuse(ctx, `${where}.build.dockerfile_inline`, "not supported: put the Dockerfile in the repo and name it");
  const contextAbs = ctx.inside(context, `${where}.build.context`);
  const df = scalar(o.dockerfile) ?? "Dockerfile";
  const dockerfile = ctx.inside(df.startsWith("/") ? df : `${contextAbs}/${df}`, `${where}.build.dockerfile`);
  const args: Record<string, string> = {};
  const rawArgs = o.args;
  const putArg = (k: string, v: string | null) => {
    if (v === null) notes.add(`${where}.build.args.${k} not set: it takes its value from your environment, which sbx never reads`);
    else if (serviceEnvRefusal(k, v, ctx.knownSecrets) !== null) notes.add(`${where}.build.args.${k} not set: ${serviceEnvRefusal(k, v, ctx.knownSecrets)}`);
    else args[k] = v;
  };
  if (Array.isArray(rawArgs)) for (const e of rawArgs) {
    const s = scalar(e) ?? "";
    const eq = s.indexOf("=");
    putArg(eq < 0 ? s : s.slice(0, eq), eq < 0 ? null : s.slice(eq + 1));
  }
  else if (isObj(rawArgs)) for (const [k, v] of Object.entries(rawArgs)) putArg(k, v === null ? null : scalar(v));
  const ignored = Object.keys(o).filter((k) => !["context", "dockerfile", "args"].includes(k));
  if (ignored.length) notes.add(`${where}.build: ignored ${ignored.join(", ")} (sbx builds one stage as the Dockerfile says, from local images)`);
  return { dockerfile, context: contextAbs, ...(Object.keys(args).length ? { args } : {}) };
}

function wordsOf(v: unknown, where: string, ctx: ComposeContext): string[] {
  if (typeof v === "string") {
    const w = splitWords(v);
    if (w === null) refuse(ctx, where, `unbalanced quotes in ${JSON.stringify(v.slice(0, 80))}`);
    return w;
  }
  if (Array.isArray(v)) {
    return v.map((e) => {
      const s = scalar(e);
      if (s === null) refuse(ctx, where, "a list of strings is expected");
      return s;
    });
  }
  if (v === null) return [];
  return refuse(ctx, where, "a string or a list of strings is expected");
}

function healthOf(v: unknown, where: string, ctx: ComposeContext, notes: Set<string>): Healthcheck | undefined {
  if (!isObj(v)) refuse(ctx, where, "a mapping is expected");
  if (v.disable === true) return { none: true };
  const out: Healthcheck = {};
  const t = v.test;
  if (typeof t === "string") out.cmd = t;
  else if (Array.isArray(t)) {
    const words = wordsOf(t, `${where}.test`, ctx);
    if (words[0] === "NONE") return { none: true };
    if (words[0] === "CMD") out.cmd = shellQuote(words.slice(1));
    else if (words[0] === "CMD-SHELL") out.cmd = words.slice(1).join(" ");
    else refuse(ctx, `${where}.test`, "starts with CMD, CMD-SHELL or NONE");
  } else if (t !== undefined) refuse(ctx, `${where}.test`, "a string or a list is expected");
  for (const [key, field] of [["interval", "interval"], ["timeout", "timeout"], ["start_period", "startPeriod"]] as const) {
    const d = v[key];
    if (d === undefined) continue;
    const s = scalar(d);
    if (s !== null && DURATION.test(s)) out[field] = s;
    else notes.add(`${where}.${key} ignored: ${JSON.stringify(d)} is not a duration (e.g. 5s, 1m30s)`);
  }
  if (v.retries !== undefined) {
    if (typeof v.retries === "number" && Number.isInteger(v.retries) && v.retries >= 1 && v.retries <= 1000) out.retries = v.retries;
    else notes.add(`${where}.retries ignored: not a whole number from 1 to 1000`);
  }
  const other = Object.keys(v).filter((k) => !["test", "interval", "timeout", "start_period", "retries", "disable"].includes(k));
  if (other.length) notes.add(`${where}: ignored ${other.join(", ")}`);
  if (out.cmd === undefined) {
    // Timings without a test change the image's own HEALTHCHECK, which docker's flags cannot do alone.
    if (Object.keys(out).length) notes.add(`${where}: timings without a test ignored (the image's own healthcheck is used as it is)`);
    return undefined;
  }
  return out;
}

/** What a volume entry mounts: a named volume of the sandbox's (declared at the top), an anonymous one, or nothing of the host's. */
function volumesOf(svc: Obj, name: string, where: string, declared: Obj, ctx: ComposeContext, notes: Set<string>): NonNullable<ServiceSpec["volumes"]> {
  const v = svc.volumes;
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) refuse(ctx, `${where}.volumes`, "a list is expected");
  const out: NonNullable<ServiceSpec["volumes"]> = [];
  const target = (t: string, at: string) => {
    if (!t.startsWith("/") || t.split("/").includes("..") || t.includes("\0") || t.length > 4096) refuse(ctx, at, `${JSON.stringify(t)} is not an absolute path in the container`);
    return t;
  };
  const named = (key: string, path: string, readOnly: boolean, at: string) => {
    if (!VOLUME_KEY.test(key)) refuse(ctx, at, `${JSON.stringify(key)} is not a volume name`);
    if (!Object.hasOwn(declared, key)) refuse(ctx, at, `volume ${key} is not declared under the top-level volumes:`, "Declare it (volumes: { " + key + ": {} }) as compose requires.");
    out.push({ key, path: target(path, at), ...(readOnly ? { readOnly: true } : {}) });
  };
  // An anonymous volume is the service's own (by its place in the list), kept as long as the sandbox.
  const anonymous = (path: string, at: string, i: number) => out.push({ key: `anon.${name}.${i}`, path: target(path, at) });
  const bind = (src: string, at: string) =>
    notes.add(
      `${at} not mounted: ${/docker\.sock|containerd\.sock|podman\.sock/.test(src) ? `${src} is the container engine's socket (root on your machine)` : `${src} is a path of your machine`}; sbx mounts nothing of the host into a service (bake it into the image, or use a named volume)`,
    );
  v.forEach((e, i) => {
    const at = `${where}.volumes[${i}]`;
    if (typeof e === "string") {
      const parts = e.split(":");
      if (parts.length === 1) return anonymous(parts[0]!, at, i);
      const [src = "", dst = "", mode = ""] = parts;
      if (/^[./~]/.test(src) || src.includes("/") || src.includes("$")) return bind(src, at);
      return named(src, dst, mode.split(",").includes("ro"), at);
    }
    if (!isObj(e)) refuse(ctx, at, "a string or a mapping is expected");
    const type = scalar(e.type) ?? "volume";
    const src = scalar(e.source) ?? "";
    const dst = scalar(e.target) ?? "";
    if (type === "bind" || type === "npipe") return bind(src || "(no source)", at);
    if (type !== "volume") {
      notes.add(`${at} not mounted: type ${type} is not one sbx gives a service (named volumes only)`);
      return;
    }
    const extra = Object.keys(e).filter((k) => !["type", "source", "target", "read_only", "volume"].includes(k));
    if (extra.length) notes.add(`${at}: ignored ${extra.join(", ")}`);
    if (src === "") return anonymous(dst, at, i);
    if (/^[./~]/.test(src) || src.includes("/")) return bind(src, at);
    return named(src, dst, e.read_only === true, at);
  });
  return out;
}

function dependsOf(v: unknown, where: string, ctx: ComposeContext, notes: Set<string>): { compose: string; healthy: boolean }[] {
  if (v === undefined || v === null) return [];
  if (Array.isArray(v)) {
    return v.map((e) => {
      const s = scalar(e);
      if (s === null) refuse(ctx, `${where}.depends_on`, "a list of service names is expected");
      return { compose: s, healthy: false };
    });
  }
  if (!isObj(v)) refuse(ctx, `${where}.depends_on`, "a list or a mapping is expected");
  return Object.entries(v).map(([dep, o]) => {
    const cond = isObj(o) ? (scalar(o.condition) ?? "service_started") : "service_started";
    if (cond === "service_completed_successfully") {
      refuse(ctx, `${where}.depends_on.${dep}`, "condition service_completed_successfully: a service that runs once and exits is not one sbx keeps beside a sandbox", "Run that step inside the sandbox (or in postCreateCommand) instead.");
    }
    if (cond !== "service_started" && cond !== "service_healthy") refuse(ctx, `${where}.depends_on.${dep}`, `condition ${cond} is not one compose knows`);
    const other = isObj(o) ? Object.keys(o).filter((k) => k !== "condition") : [];
    if (other.length) notes.add(`${where}.depends_on.${dep}: ignored ${other.join(", ")}`);
    return { compose: dep, healthy: cond === "service_healthy" };
  });
}

/** Pure: several compose files as one, later over earlier (compose's own merge, for what sbx reads: per service, per key; variables merged by name). */
export function mergeCompose(docs: readonly unknown[]): Obj {
  const out: Obj = {};
  for (const d of docs) {
    if (!isObj(d)) continue;
    for (const [k, v] of Object.entries(d)) {
      if (k === "services" && isObj(v)) {
        const cur = (isObj(out.services) ? out.services : (out.services = {})) as Obj;
        for (const [name, svc] of Object.entries(v)) {
          const prev = cur[name];
          if (!isObj(prev) || !isObj(svc)) {
            cur[name] = svc;
            continue;
          }
          const merged: Obj = { ...prev, ...svc };
          if (prev.environment !== undefined && svc.environment !== undefined) merged.environment = { ...envMap(prev.environment), ...envMap(svc.environment) };
          cur[name] = merged;
        }
      } else if (k === "volumes" && isObj(v)) {
        out.volumes = { ...(isObj(out.volumes) ? out.volumes : {}), ...v };
      } else {
        out[k] = v;
      }
    }
  }
  return out;
}

function envMap(e: unknown): Obj {
  if (isObj(e)) return e;
  if (!Array.isArray(e)) return {};
  const out: Obj = {};
  for (const x of e) {
    const s = scalar(x);
    if (s === null) continue;
    const eq = s.indexOf("=");
    out[eq < 0 ? s : s.slice(0, eq)] = eq < 0 ? null : s.slice(eq + 1);
  }
  return out;
}

/**
 * Pure (the file system through `ctx`): the plan a compose document gives, with `sandboxService` the devcontainer's
 * `service` (the sandbox itself) and `runServices` the services to run (absent: every other one), plus what those
 * depend on.
 */
export function composePlan(raw: unknown, sandboxService: string, runServices: readonly string[] | undefined, ctx: ComposeContext): ComposePlan {
  const notes = new Set<string>();
  const doc = interpolateAll(boundedCopy(raw, ctx.file), "", notes, ctx);
  if (!isObj(doc)) refuse(ctx, "the file", "not a mapping (one YAML document with services:)");
  if (doc.include !== undefined) refuse(ctx, "include", "sbx reads the compose files devcontainer.json names, not others they point to");
  const topIgnored = Object.keys(doc).filter((k) => !["services", "volumes", "version", "name"].includes(k) && !k.startsWith("x-"));
  if (topIgnored.length) notes.add(`ignored ${topIgnored.join(", ")} (every service has the sandbox's network; sbx gives no secrets or configs)`);
  if (!isObj(doc.services)) refuse(ctx, "services", "missing, or not a mapping");
  const all = doc.services;
  const declared = isObj(doc.volumes) ? doc.volumes : {};
  for (const [k, v] of Object.entries(declared)) {
    const opts = isObj(v) ? Object.keys(v).filter((o) => o !== "labels") : [];
    if (opts.length) notes.add(`volumes.${k}: ignored ${opts.join(", ")} (sbx makes its own volume of the sandbox's, removed with it${opts.includes("driver_opts") ? "; a driver_opts bind is a host path, never mounted" : ""})`);
  }
  if (!Object.hasOwn(all, sandboxService)) refuse(ctx, "service", `devcontainer.json names service ${JSON.stringify(sandboxService)}, which the compose file does not have`);

  // What runs: runServices (else every service but the sandbox's own), and what they depend on.
  const wanted: string[] = [];
  const addWanted = (n: string, by: string) => {
    if (n === sandboxService || wanted.includes(n)) return;
    if (!Object.hasOwn(all, n)) refuse(ctx, by, `service ${JSON.stringify(n)} is not in the compose file`);
    wanted.push(n);
    const svc = all[n];
    for (const d of dependsOf(isObj(svc) ? svc.depends_on : undefined, `services.${n}`, ctx, new Set())) addWanted(d.compose, `services.${n}.depends_on`);
  };
  for (const n of runServices ?? Object.keys(all)) addWanted(n, "runServices");
  const skipped = Object.keys(all).filter((n) => n !== sandboxService && !wanted.includes(n));
  if (skipped.length) notes.add(`not run (not in runServices, nor needed by one): ${skipped.join(", ")}`);
  if (wanted.length > MAX_SERVICES) refuse(ctx, "services", `${wanted.length} services to run: a sandbox has at most ${MAX_SERVICES}`, "List fewer in runServices.");

  const names = new Map<string, string>();
  for (const n of wanted) {
    const s = serviceNameOf(n);
    if (s === null) refuse(ctx, `services.${n}`, "its name cannot be a service's (letters, digits, - and _, starting with a letter, at most 30)", "Rename it in the compose file.");
    if ([...names.values()].includes(s)) refuse(ctx, `services.${n}`, `its name is ${s} to sbx, as another service's is`, "Rename one of them.");
    if (s !== n) notes.add(`services.${n} is service ${s} to sbx (sbx services, logs)`);
    names.set(n, s);
  }

  const services: ServiceSpec[] = [];
  for (const n of wanted) {
    const where = `services.${n}`;
    const svc = all[n];
    if (!isObj(svc)) refuse(ctx, where, "no image or build");
    for (const [k, v] of Object.entries(svc)) {
      const why = privilegeAsked(k, v);
      if (why !== null) refuse(ctx, `${where}.${k}`, why);
    }
    const ignored = Object.keys(svc).filter((k) => !HONOURED.has(k) && !QUIET.has(k) && !k.startsWith("x-") && privilegeAsked(k, svc[k]) === null);
    if (ignored.length) notes.add(`${where}: ignored ${ignored.join(", ")} (it has the sandbox's network: the sandbox reaches it on 127.0.0.1, sbx starts, stops and removes it with the sandbox)`);
    const spec: ServiceSpec = { name: names.get(n)! };
    if (svc.build !== undefined) {
      spec.build = buildOf(svc.build, where, ctx, notes);
      if (svc.image !== undefined) notes.add(`${where}.image not used: sbx builds it (and tags the build its own way)`);
    } else {
      const img = scalar(svc.image);
      if (img === null) refuse(ctx, where, "no image or build");
      if (img.length > 255 || !IMAGE_REF.test(img)) refuse(ctx, `${where}.image`, `${JSON.stringify(img)} is not a local image reference`);
      spec.image = img;
    }
    const env = envOf(svc, where, ctx, notes);
    if (Object.keys(env).length) spec.env = env;
    if (svc.command !== undefined) spec.command = wordsOf(svc.command, `${where}.command`, ctx);
    if (svc.entrypoint !== undefined) spec.entrypoint = wordsOf(svc.entrypoint, `${where}.entrypoint`, ctx);
    if (svc.user !== undefined) {
      const u = scalar(svc.user);
      if (u === null || !USER_SPEC.test(u)) refuse(ctx, `${where}.user`, `${JSON.stringify(svc.user)} is not a user or uid[:gid]`);
      spec.user = u;
    }
    if (svc.healthcheck !== undefined) {
      const h = healthOf(svc.healthcheck, `${where}.healthcheck`, ctx, notes);
      if (h !== undefined) spec.healthcheck = h;
    }
    const vols = volumesOf(svc, spec.name, where, declared, ctx, notes);
    if (vols.length) spec.volumes = vols;
    const deps = dependsOf(svc.depends_on, where, ctx, notes).filter((d) => d.compose !== sandboxService);
    if (deps.length) spec.dependsOn = deps.map((d) => ({ name: names.get(d.compose)!, healthy: d.healthy }));
    // The same schema the daemon holds every service to (lengths, counts, shapes): what a file can say, a flag can.
    const checked = ServiceSpecSchema.safeParse(spec);
    if (!checked.success) refuse(ctx, where, checked.error.issues.map((i) => `${i.path.join(".") || "it"}: ${i.message}`).join("; "));
    services.push(checked.data);
  }
  const problem = servicesProblem(services);
  if (problem !== null) refuse(ctx, "depends_on", problem);

  // The sandbox's own service: its image or build, and its variables; sbx runs its container its own way.
  const own = all[sandboxService];
  if (!isObj(own)) refuse(ctx, `services.${sandboxService}`, "no image or build");
  const where = `services.${sandboxService}`;
  const sandbox: ComposeSandbox = { env: {} };
  if (own.build !== undefined) sandbox.build = buildOf(own.build, where, ctx, notes);
  else {
    const img = scalar(own.image);
    if (img === null) refuse(ctx, where, "no image or build");
    sandbox.image = img;
  }
  for (const [k, v] of Object.entries(own.environment === undefined ? {} : envMap(own.environment))) {
    const s = v === null ? null : scalar(v);
    if (s === null) notes.add(`${where}.environment.${k} not set: it takes its value from your environment, which sbx never reads`);
    else sandbox.env[k] = s;
  }
  const ownIgnored = Object.keys(own).filter((k) => !["image", "build", "environment"].includes(k) && !k.startsWith("x-"));
  if (ownIgnored.length) notes.add(`${where} (the sandbox itself): ignored ${ownIgnored.join(", ")} (sbx runs the sandbox's container its own way: your repo's clone, its network, no capability)`);
  return { sandbox, services, notes: [...notes] };
}
