// Where a Docker sandbox's image comes from, decided once at create and kept in its identity: `--image REF` (a local
// image), `--dockerfile PATH` / `--context DIR`, the repo's `.devcontainer/devcontainer.json`, or the repo's Dockerfile.
// devcontainer.json is the repo's, so possibly a sandbox's work: its paths stay inside the repo, its variables never
// carry the host's environment in (`${localEnv:…}` is not expanded), and sbx's own variables cannot be set by it.
import { existsSync, readFileSync, realpathSync, statSync } from "node:fs";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { envEntryRefusal } from "../../core/config";
import { SbxError } from "../../core/errors";
import { parseJsonc } from "../../core/jsonc";
import type { ImageFlags, ImageSource } from "../../core/image-source";
import type { ServiceSpec } from "../../core/services";
import { planFromCompose } from "./compose-file";

/** What a devcontainer.json adds beyond the image: variables, commands after create, ports, services, and what it ignored. */
export interface ImagePlan {
  source: ImageSource;
  env: Record<string, string>;
  postCreate: string[][];
  ports: number[];
  /** Its compose file's other services (dockerComposeFile), as the sandbox's services. */
  services: ServiceSpec[];
  notes: string[];
}

/** The repo's own Dockerfile: what a sandbox made before image sources existed uses. */
export function repoSource(repo: string): ImageSource {
  return { kind: "dockerfile", dockerfile: join(repo, "Dockerfile"), context: repo, from: "repo" };
}

const IMAGE_REF = /^[A-Za-z0-9][A-Za-z0-9._/:@-]{0,254}$/;

/** The devcontainer files sbx reads, in the order the spec looks for them. */
export const DEVCONTAINER_FILES = [".devcontainer/devcontainer.json", ".devcontainer.json"];

/** Keys sbx honours; every other key is named as ignored (editor-only keys quietly). */
const HONOURED = new Set(["image", "build", "dockerFile", "dockerfile", "context", "containerEnv", "remoteEnv", "postCreateCommand", "forwardPorts", "dockerComposeFile", "service", "runServices"]);
const QUIET = new Set(["name", "$schema", "customizations", "extensions", "settings"]);

/**
 * The image plan of a new sandbox: the flags when given, else the repo's devcontainer.json, else its Dockerfile.
 * `knownSecrets`: the host's secret values (a devcontainer variable holding one is dropped).
 */
export function planImageSource(repo: string, flags: ImageFlags = {}, knownSecrets: readonly string[] = []): ImagePlan {
  const none = { env: {}, postCreate: [], ports: [], services: [], notes: [] };
  if (flags.image !== undefined) {
    if (flags.dockerfile !== undefined || flags.context !== undefined) {
      throw new SbxError("usage", "--image names an image to use as it is; --dockerfile and --context build one", { hint: "Give either --image, or --dockerfile/--context." });
    }
    return { source: { kind: "image", ref: imageRef(flags.image, "--image"), from: "flags" }, ...none };
  }
  if (flags.dockerfile !== undefined || flags.context !== undefined) {
    const context = flags.context ?? repo;
    const dockerfile = flags.dockerfile ?? join(context, "Dockerfile");
    mustBe(context, "dir", "--context");
    // The build context is what the sandbox's clone holds there (build-context.ts): a dir outside the repo has no
    // commit to stand for it, and sending it as it is would put whatever lies in it (keys, .env) into the image.
    if (!isInside(repo, context)) {
      throw new SbxError("config", `--context: ${context} is outside the repo ${repo}`, {
        hint: "The build context is what the repo's last commit holds under a dir of it: name a dir inside the repo (--dockerfile may be anywhere).",
      });
    }
    mustBe(dockerfile, "file", flags.dockerfile !== undefined ? "--dockerfile" : `--context's Dockerfile`);
    return { source: { kind: "dockerfile", dockerfile, context, from: "flags" }, ...none };
  }
  for (const rel of DEVCONTAINER_FILES) {
    const file = join(repo, rel);
    if (existsSync(file)) return fromDevcontainer(repo, file, readFileSync(file, "utf8"), knownSecrets);
  }
  return { source: repoSource(repo), ...none };
}

function imageRef(ref: string, what: string): string {
  if (!IMAGE_REF.test(ref)) {
    throw new SbxError("usage", `${what} ${JSON.stringify(ref)} is not an image reference`, { hint: "Name a local image, e.g. myimage:dev or registry.example/team/dev:1 (sbx pulls nothing)." });
  }
  return ref;
}

function mustBe(path: string, kind: "file" | "dir", what: string): void {
  let ok = false;
  try {
    const st = statSync(path);
    ok = kind === "file" ? st.isFile() : st.isDirectory();
  } catch {
    ok = false;
  }
  if (!ok) throw new SbxError("config", `${what}: ${path} is not a ${kind === "file" ? "file" : "directory"}`, { hint: "Check the path (relative paths are from the current directory)." });
}

/** Whether `p` (links followed) is `repo` or under it. */
function isInside(repo: string, p: string): boolean {
  const root = realpathSync(repo);
  const real = realpathSync(p);
  return real === root || real.startsWith(`${root}/`);
}

/** A devcontainer path, resolved from the file's dir; it must exist and stay inside the repo (links followed). */
function inside(repo: string, file: string, p: string, key: string): string {
  const abs = isAbsolute(p) ? p : resolve(dirname(file), p);
  let real: string;
  try {
    real = realpathSync(abs);
  } catch {
    throw new SbxError("config", `${file}: ${key} ${JSON.stringify(p)} does not exist (${abs})`, { hint: "Fix devcontainer.json, or pass --dockerfile or --image." });
  }
  const root = realpathSync(repo);
  if (real !== root && !real.startsWith(`${root}/`)) {
    throw new SbxError("config", `${file}: ${key} ${JSON.stringify(p)} leads outside the repo (${real})`, {
      hint: "sbx builds only from inside the repo: a build context outside it would send your other files into the image. Pass --context yourself if you mean it.",
    });
  }
  return real;
}

/** ${localWorkspaceFolder} and friends; null when the value names the host's environment (never passed in). */
function substitute(v: string, repo: string): string | null {
  if (/\$\{(localEnv|containerEnv|env):/.test(v)) return null;
  return v
    .replaceAll("${localWorkspaceFolderBasename}", basename(repo))
    .replaceAll("${containerWorkspaceFolderBasename}", basename(repo))
    .replaceAll("${localWorkspaceFolder}", repo)
    .replaceAll("${containerWorkspaceFolder}", repo);
}

function commands(v: unknown): string[][] | null {
  if (typeof v === "string") return v.trim() === "" ? [] : [["/bin/sh", "-c", v]];
  if (Array.isArray(v)) return v.every((x) => typeof x === "string") && v.length > 0 ? [v as string[]] : null;
  if (v && typeof v === "object") {
    const out: string[][] = [];
    for (const x of Object.values(v)) {
      const c = commands(x);
      if (c === null) return null;
      out.push(...c);
    }
    return out;
  }
  return null;
}

/** Pure but for the path checks: the plan a devcontainer.json gives. */
export function fromDevcontainer(repo: string, file: string, text: string, knownSecrets: readonly string[] = []): ImagePlan {
  const raw = parseJsonc(text, file);
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) throw new SbxError("config", `${file}: not a JSON object`, { hint: "Fix devcontainer.json, or pass --dockerfile or --image." });
  const o = raw as Record<string, unknown>;
  const rel = file.slice(repo.length + 1);
  const notes: string[] = [];
  // Compose: its `service` is the sandbox (its image or build, its variables), the others the sandbox's services.
  const compose = o.dockerComposeFile === undefined ? null : planFromCompose(repo, file, { dockerComposeFile: o.dockerComposeFile, service: o.service, runServices: o.runServices }, knownSecrets);
  if (compose !== null) {
    notes.push(...compose.notes.map((n) => `${compose.files[0]}: ${n}`));
    for (const k of ["image", "build", "dockerFile", "dockerfile", "context"]) if (o[k] !== undefined) notes.push(`${k} ignored: dockerComposeFile's service ${String(o.service)} is the sandbox`);
  } else if (o.service !== undefined || o.runServices !== undefined) {
    notes.push("service and runServices ignored: no dockerComposeFile");
  }
  const build = (compose === null && o.build && typeof o.build === "object" ? o.build : {}) as Record<string, unknown>;
  const dockerfileKey = typeof build.dockerfile === "string" ? "build.dockerfile" : typeof o.dockerFile === "string" ? "dockerFile" : typeof o.dockerfile === "string" ? "dockerfile" : null;
  let source: ImageSource;
  if (compose !== null) {
    const sb = compose.sandbox;
    source = sb.build
      ? { kind: "dockerfile", dockerfile: sb.build.dockerfile, context: sb.build.context, ...(sb.build.args ? { args: sb.build.args } : {}), from: "devcontainer" }
      : { kind: "image", ref: imageRef(sb.image ?? "", `${compose.files[0]}: services.${String(o.service)}.image`), from: "devcontainer" };
  } else if (dockerfileKey !== null) {
    const df = String(dockerfileKey === "build.dockerfile" ? build.dockerfile : dockerfileKey === "dockerFile" ? o.dockerFile : o.dockerfile);
    const ctxKey = typeof build.context === "string" ? "build.context" : typeof o.context === "string" ? "context" : null;
    const dockerfile = inside(repo, file, df, dockerfileKey);
    const context = inside(repo, file, ctxKey === null ? "." : String(ctxKey === "build.context" ? build.context : o.context), ctxKey ?? "build.context");
    const args: Record<string, string> = {};
    if (build.args && typeof build.args === "object") {
      for (const [k, v] of Object.entries(build.args as Record<string, unknown>)) {
        const s = typeof v === "string" ? substitute(v, repo) : null;
        if (s === null) notes.push(`build.args.${k} not used (only plain strings, never the host's environment)`);
        else if (!/^USER_(NAME|UID|GID|HOME)$/.test(k)) args[k] = s;
      }
    }
    if (typeof o.image === "string") notes.push("image ignored: build is used");
    source = { kind: "dockerfile", dockerfile, context, ...(Object.keys(args).length ? { args } : {}), from: "devcontainer" };
  } else if (typeof o.image === "string") {
    source = { kind: "image", ref: imageRef(o.image, `${rel}: image`), from: "devcontainer" };
  } else {
    throw new SbxError("config", `${file} names no image (image, or build.dockerfile)`, { hint: "Add one, or pass --dockerfile or --image." });
  }
  const env: Record<string, string> = {};
  // The compose service's own variables first; devcontainer.json's over them. Each is checked as any sandbox variable.
  for (const [k, v] of Object.entries(compose?.sandbox.env ?? {})) {
    const s = substitute(v, repo);
    const why = s === null ? "it names the host's environment, which sbx never passes in" : envEntryRefusal(k, s, knownSecrets);
    if (why !== null) notes.push(`services.${String(o.service)}.environment.${k} not set: ${why}`);
    else env[k] = s!;
  }
  for (const key of ["containerEnv", "remoteEnv"] as const) {
    const e = o[key];
    if (e === undefined) continue;
    if (!e || typeof e !== "object" || Array.isArray(e)) {
      notes.push(`${key} ignored: not an object of strings`);
      continue;
    }
    for (const [k, v] of Object.entries(e as Record<string, unknown>)) {
      const s = typeof v === "string" ? substitute(v, repo) : null;
      const why = s === null ? "it names the host's environment, which sbx never passes in" : envEntryRefusal(k, s, knownSecrets);
      if (why !== null) notes.push(`${key}.${k} not set: ${why}`);
      else env[k] = s!;
    }
  }
  let postCreate: string[][] = [];
  if (o.postCreateCommand !== undefined) {
    const c = commands(o.postCreateCommand);
    if (c === null) notes.push("postCreateCommand ignored: a string, an array of strings, or an object of those");
    else postCreate = c;
  }
  const ports: number[] = [];
  if (Array.isArray(o.forwardPorts)) {
    for (const p of o.forwardPorts) {
      const n = typeof p === "number" ? p : typeof p === "string" && /^\d+$/.test(p) ? Number(p) : NaN;
      if (Number.isInteger(n) && n >= 1 && n <= 65535) ports.push(n);
      else notes.push(`forwardPorts entry ${JSON.stringify(p)} ignored (only port numbers of the sandbox itself)`);
    }
  }
  const ignored = Object.keys(o).filter((k) => !HONOURED.has(k) && !QUIET.has(k));
  if (ignored.length > 0) notes.push(`ignored (sbx runs its own container): ${ignored.join(", ")}`);
  return { source, env, postCreate, ports, services: compose?.services ?? [], notes: notes.map((n) => `${rel}: ${n}`) };
}

/** One line for the person: where this sandbox's image comes from. */
export function describeSource(s: ImageSource, repo: string): string {
  const rel = (p: string) => (p === repo ? "." : p.startsWith(`${repo}/`) ? p.slice(repo.length + 1) : p);
  if (s.kind === "image") return `image ${s.ref}${s.from === "devcontainer" ? " (from devcontainer.json)" : ""}`;
  const via = s.from === "devcontainer" ? " (from devcontainer.json)" : "";
  return `built from ${rel(s.dockerfile)}${s.context === dirname(s.dockerfile) || s.context === repo ? "" : ` with context ${rel(s.context)}`}${via}`;
}
