// Pure: a sandbox's services (`--service NAME=IMAGE|DOCKERFILE`, `--service-env`, devcontainer compose): what each may
// be, checked before anything is made, by the CLI and again by the daemon's schema.
import { z } from "zod";
import { SbxError } from "./errors";
import { scanText } from "./secrets";

/** A service's name: its container's and volumes' names carry it, and `sbx services NAME logs SVC` names it. */
export const SERVICE_NAME = /^[a-z][a-z0-9-]{0,29}$/;
/**
 * A local image reference as docker names one (repo[:tag] or repo@sha256:…). It never starts with '-' (it lands on
 * docker's command line, where that would be a flag) and holds no space or shell character.
 */
export const IMAGE_REF = /^[a-z0-9][a-z0-9._/-]*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?$/;
/** How many services one sandbox may have (each is a container in its network namespace). */
export const MAX_SERVICES = 8;
/** A variable's name, as a service's environment takes it (`__proto__` would be an object's prototype, not a key). */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
/** A Go duration as docker's --health-* flags take it (1s, 1m30s, 500ms). */
export const DURATION = /^(\d{1,6}(\.\d{1,3})?(ns|us|ms|s|m|h)){1,4}$/;
/** A named volume's key in a compose file (also the label that says which it is). */
export const VOLUME_KEY = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,63}$/;
/** `user:` of a service: a name or id, and a group; never a flag. */
export const USER_SPEC = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,31})?$/;

const envName = z.string().regex(ENV_NAME).refine((k) => k !== "__proto__", "not a variable name");
const word = z.string().max(8192).refine((s) => !s.includes("\0"), "holds a NUL");
/** Variables: a `__proto__` key (JSON.parse makes it an own key) is refused before the record is built, where it would vanish. */
const envRecord = z
  .unknown()
  .refine((v) => typeof v !== "object" || v === null || !Object.hasOwn(v, "__proto__"), "a __proto__ key")
  .pipe(z.record(envName, word));
const absPath = z.string().startsWith("/").max(4096).refine((p) => !p.includes("\0") && !p.split("/").includes(".."), "not a plain absolute path");

/** A healthcheck sbx gives docker: a shell command (CMD-SHELL; an exec form is quoted into one), or none at all. */
export const HealthcheckSchema = z
  .object({
    /** The command, run by the image's /bin/sh; absent with `none`. */
    cmd: word.optional(),
    /** The image's HEALTHCHECK switched off (compose `disable: true` or `test: ["NONE"]`). */
    none: z.boolean().optional(),
    interval: z.string().regex(DURATION).optional(),
    timeout: z.string().regex(DURATION).optional(),
    startPeriod: z.string().regex(DURATION).optional(),
    retries: z.number().int().min(1).max(1000).optional(),
  })
  .strict()
  .refine((h) => (h.cmd !== undefined) !== (h.none === true), "a healthcheck is a command or none");
export type Healthcheck = z.infer<typeof HealthcheckSchema>;

export const ServiceSpecSchema = z
  .object({
    name: z.string().regex(SERVICE_NAME),
    /** A local image (or, with `build`, the tag sbx built it as). */
    image: z.string().max(255).regex(IMAGE_REF).optional(),
    /** Built by sbx from a Dockerfile of the repo (its context what the repo's last commit holds there). */
    build: z
      .object({
        dockerfile: absPath,
        /** Absent: the repo. */
        context: absPath.optional(),
        args: envRecord.optional(),
      })
      .strict()
      .optional(),
    /** What the person wrote for it (`--service-env`, compose `environment`/`env_file`): never the host's, never sbx's. */
    env: envRecord.optional(),
    /** Replaces the image's CMD. */
    command: z.array(word).max(256).optional(),
    /** Replaces the image's ENTRYPOINT (empty: none). */
    entrypoint: z.array(word).max(64).optional(),
    user: z.string().regex(USER_SPEC).optional(),
    healthcheck: HealthcheckSchema.optional(),
    /** Named volumes of this sandbox (compose `volumes:`), shared by the services that name the same key. */
    volumes: z.array(z.object({ key: z.string().regex(VOLUME_KEY), path: absPath, readOnly: z.boolean().optional() }).strict()).max(32).optional(),
    /** Started after these; `healthy`: only once that one is healthy (compose `condition: service_healthy`). */
    dependsOn: z.array(z.object({ name: z.string().regex(SERVICE_NAME), healthy: z.boolean() }).strict()).max(MAX_SERVICES).optional(),
  })
  .strict()
  .refine((s) => s.image !== undefined || s.build !== undefined, "a service has an image or a build");
export type ServiceSpec = z.infer<typeof ServiceSpecSchema>;

/** A create request's services, as the daemon takes them: at most MAX_SERVICES, names apart, dependencies among them. */
export const ServicesSchema = z
  .array(ServiceSpecSchema)
  .max(MAX_SERVICES)
  .default([])
  .superRefine((all, ctx) => {
    const problem = servicesProblem(all);
    if (problem !== null) ctx.addIssue({ code: "custom", message: problem });
  });

/** `--service-env NAME:KEY=VALUE`, as the daemon takes them: service → variables. */
export const ServiceEnvSchema = z.record(z.string().regex(SERVICE_NAME), envRecord).default({});

/** Pure: what is wrong with a set of services together (a name twice, a dependency on none of them, a cycle), or null. */
export function servicesProblem(all: readonly Pick<ServiceSpec, "name" | "dependsOn">[]): string | null {
  const names = new Set<string>();
  for (const s of all) {
    if (names.has(s.name)) return `service ${s.name} is given twice`;
    names.add(s.name);
  }
  for (const s of all) for (const d of s.dependsOn ?? []) if (!names.has(d.name)) return `service ${s.name} depends on ${d.name}, which is not one of this sandbox's services`;
  try {
    startLevels(all as ServiceSpec[]);
  } catch (e) {
    return (e as Error).message;
  }
  return null;
}

/**
 * Pure: the services in the order they start, level by level: a service's level is one past its dependencies' highest;
 * each level starts once the one before is running (and healthy where its healthcheck is). A cycle is refused.
 */
export function startLevels<T extends Pick<ServiceSpec, "name" | "dependsOn">>(all: readonly T[]): T[][] {
  const byName = new Map(all.map((s) => [s.name, s]));
  const level = new Map<string, number>();
  const visiting = new Set<string>();
  const visit = (s: T, path: string[]): number => {
    const known = level.get(s.name);
    if (known !== undefined) return known;
    if (visiting.has(s.name)) throw new Error(`services depend on each other in a circle: ${[...path, s.name].join(" → ")}`);
    visiting.add(s.name);
    let l = 0;
    for (const d of s.dependsOn ?? []) {
      const dep = byName.get(d.name);
      if (dep !== undefined) l = Math.max(l, visit(dep, [...path, s.name]) + 1);
    }
    visiting.delete(s.name);
    level.set(s.name, l);
    return l;
  };
  for (const s of all) visit(s, []);
  const out: T[][] = [];
  for (const s of all) (out[level.get(s.name)!] ??= []).push(s);
  return out.filter((l) => l !== undefined);
}

const HINT = "e.g. --service db=postgres-test:16 (a local image), or --service cache=./docker/redis.Dockerfile (built from the repo's last commit)";

/** Whether a `--service` value names a Dockerfile (a path) rather than an image. */
export function isDockerfileRef(v: string): boolean {
  // An image reference is lower case and never starts with '.' or '/': a path does, or names a Dockerfile.
  return /^\.{0,2}\//.test(v) || /Dockerfile/.test(v.slice(v.lastIndexOf("/") + 1));
}

/**
 * `--service NAME=IMAGE` or `--service NAME=PATH` (a Dockerfile, made absolute from `cwd`; built with the repo as its
 * context), checked: a name, a local image reference or a path. What a Dockerfile holds is read by the daemon.
 */
export function parseServiceFlag(flag: string, cwd = "/"): ServiceSpec {
  const eq = flag.indexOf("=");
  if (eq <= 0) throw new SbxError("usage", `--service ${flag}: give NAME=IMAGE or NAME=PATH/TO/Dockerfile`, { hint: HINT });
  const name = flag.slice(0, eq);
  const ref = flag.slice(eq + 1);
  if (!SERVICE_NAME.test(name)) {
    throw new SbxError("usage", `--service ${flag}: '${name}' is not a service name (lowercase letters, digits and -, starting with a letter, at most 30)`, { hint: HINT });
  }
  if (isDockerfileRef(ref)) {
    if (ref.length > 4096 || ref.includes("\0")) throw new SbxError("usage", `--service ${name}: not a path`, { hint: HINT });
    const dockerfile = ref.startsWith("/") ? ref : joinPath(cwd, ref);
    return { name, build: { dockerfile } };
  }
  if (ref.length > 255 || !IMAGE_REF.test(ref)) {
    throw new SbxError("usage", `--service ${flag}: '${ref}' is not a local image reference`, { hint: HINT });
  }
  return { name, image: ref };
}

/** Pure: `cwd` joined with a relative path, `.` and `..` resolved (node:path's resolve, without the process's cwd). */
function joinPath(cwd: string, rel: string): string {
  const parts: string[] = [];
  for (const p of `${cwd}/${rel}`.split("/")) {
    if (p === "" || p === ".") continue;
    if (p === "..") parts.pop();
    else parts.push(p);
  }
  return `/${parts.join("/")}`;
}

/** The refusal of services for a kind that has none (the user-account kinds: no network namespace of their own to share). */
export function servicesRefused(kind: string): SbxError {
  return new SbxError("usage", `--service applies to Docker sandboxes, not --backend ${kind}`, {
    hint: "A service runs as a container in a Docker sandbox's network namespace; a user-account sandbox has none to give it. Use --backend docker, or run the service inside the sandbox yourself.",
  });
}

/** Every `--service` of a create, checked together: distinct names, at most MAX_SERVICES. */
export function parseServiceFlags(flags: readonly string[], cwd = "/"): ServiceSpec[] {
  const out = flags.map((f) => parseServiceFlag(f, cwd));
  const seen = new Set<string>();
  for (const s of out) {
    if (seen.has(s.name)) throw new SbxError("usage", `--service ${s.name} is given twice`, { hint: "Give each service its own name." });
    seen.add(s.name);
  }
  if (out.length > MAX_SERVICES) throw new SbxError("usage", `${out.length} services: a sandbox has at most ${MAX_SERVICES}`, { hint: "Leave some out." });
  return out;
}

/**
 * Pure: why a variable may not be set in a service, or null. Its environment is what the person wrote and nothing more:
 * a value sbx knows to be a secret (a key pattern, one of the host's secrets) is refused, as for a sandbox. A name that
 * sounds like a credential is allowed (a test database's password is the service's own, not the host's).
 */
export function serviceEnvRefusal(name: string, value: string, knownSecrets: readonly string[] = []): string | null {
  if (!ENV_NAME.test(name) || name === "__proto__") return "not a valid variable name";
  if (value.includes("\0")) return "its value holds a NUL";
  if (value.length > 8192) return "its value is longer than 8192 characters";
  // Scanned with its name: some keys are known only by the name they stand beside (aws_secret_access_key=…).
  if (scanText(`${name}=${value}`, "service").length > 0) return "its value looks like a secret (a key or token pattern matched); sbx keeps credentials on the host";
  if (value.length >= 8 && knownSecrets.includes(value)) return "its value is one of your host secrets";
  return null;
}

/** `--service-env NAME:KEY=VALUE` (repeatable): service → variables, each checked; the services are matched by the daemon. */
export function parseServiceEnvFlags(flags: readonly string[]): Record<string, Record<string, string>> {
  const out: Record<string, Record<string, string>> = {};
  for (const f of flags) {
    const colon = f.indexOf(":");
    const eq = f.indexOf("=", colon + 1);
    const service = colon > 0 ? f.slice(0, colon) : "";
    if (colon <= 0 || eq < 0 || !SERVICE_NAME.test(service)) {
      throw new SbxError("usage", `--service-env ${f}: give SERVICE:NAME=VALUE`, { hint: "e.g. --service-env db:POSTGRES_DB=app (the variable as the service sees it; nothing of your environment is read)" });
    }
    const name = f.slice(colon + 1, eq);
    const value = f.slice(eq + 1);
    const why = serviceEnvRefusal(name, value);
    if (why !== null) throw new SbxError("usage", `--service-env ${service}:${name}: ${why}`, { hint: "A service gets only the plain values you write; sbx keeps credentials on the host." });
    const vars = (out[service] ??= Object.create(null) as Record<string, string>);
    vars[name] = value;
  }
  // Plain objects again (zod and JSON take them): the keys were checked, none is __proto__.
  return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, { ...v }]));
}

/** What `sbx services NAME` and `sbx status` say of one service. */
export interface ServiceView {
  name: string;
  image: string;
  container: string;
  /** The engine's word: running, exited, created, restarting… */
  state: string;
  /** healthy, unhealthy, starting; none when it has no healthcheck. */
  health: string;
  exitCode: number;
}

/** A service's state as `sbx status` shows it beside its sandbox. */
export type ServiceStatus = Pick<ServiceView, "name" | "state" | "health" | "exitCode">;

/**
 * Pure: a service's status from the engine's list (`State`, and the status line: "Up 3 minutes (healthy)",
 * "Up 2 seconds (health: starting)", "Exited (137) 5 seconds ago").
 */
export function serviceStatusOf(name: string, state: string, status: string): ServiceStatus {
  const health = /\(healthy\)/.test(status) ? "healthy" : /\(unhealthy\)/.test(status) ? "unhealthy" : /\(health: starting\)/.test(status) ? "starting" : "none";
  const exit = /^Exited \((-?\d+)\)/.exec(status);
  return { name, state, health, exitCode: exit ? Number(exit[1]) : 0 };
}

/** Pure: whether a service is down or sick in a sandbox that runs (what `sbx status` flags). */
export function serviceTrouble(v: Pick<ServiceView, "state" | "health" | "exitCode">): string | null {
  if (v.state !== "running") return v.state === "exited" ? `exited (code ${v.exitCode})` : v.state;
  if (v.health === "unhealthy") return "unhealthy";
  return null;
}

/**
 * Pure: a new sandbox's services: those of the flags, then those of its devcontainer compose, with `--service-env`'s
 * variables over each one's own. A name given twice, `--service-env` for no service, a variable that may not be set,
 * too many services or a dependency that cannot be met is refused.
 */
export function combineServices(
  flags: readonly ServiceSpec[],
  compose: readonly ServiceSpec[],
  serviceEnv: Readonly<Record<string, Readonly<Record<string, string>>>>,
  knownSecrets: readonly string[] = [],
): ServiceSpec[] {
  const taken = new Set(flags.map((s) => s.name));
  const clash = compose.find((s) => taken.has(s.name));
  if (clash) {
    throw new SbxError("usage", `--service ${clash.name}: devcontainer.json's compose file has a service of that name too`, { hint: "Name yours otherwise, or leave it to the compose file." });
  }
  const all = [...flags, ...compose].map((s) => ({ ...s }));
  for (const [svc, vars] of Object.entries(serviceEnv)) {
    const s = all.find((x) => x.name === svc);
    if (!s) {
      throw new SbxError("usage", `--service-env ${svc}:…: this sandbox has no service ${svc}`, { hint: all.length ? `Its services: ${all.map((x) => x.name).join(", ")}.` : "Give it one with --service." });
    }
    for (const [k, v] of Object.entries(vars)) {
      const why = serviceEnvRefusal(k, v, knownSecrets);
      if (why !== null) throw new SbxError("usage", `--service-env ${svc}:${k}: ${why}`, { hint: "A service gets only the plain values you write; sbx keeps credentials on the host." });
    }
    s.env = { ...s.env, ...vars };
  }
  if (all.length > MAX_SERVICES) throw new SbxError("usage", `${all.length} services: a sandbox has at most ${MAX_SERVICES}`, { hint: "Leave some out (runServices in devcontainer.json)." });
  const problem = servicesProblem(all);
  if (problem !== null) throw new SbxError("config", problem, { hint: "Fix the services' depends_on." });
  return all;
}
