// The sandbox image: the repo's own Dockerfile, tagged by content hash, built only when that tag is missing.
import { createHash } from "node:crypto";
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, writeSync } from "node:fs";
import { basename, dirname } from "node:path";
import { BuildTracker } from "../../core/build-steps";
import type { BuildProxyLease } from "../../sys/build-relay";
import { SbxError } from "../../core/errors";
import { lineSplitter } from "../../core/lines";
import type { Exec } from "../../sys/exec";
import type { HostUser } from "../../core/spec";
import { contextStream, planContext, type ContextChanges, type ContextFailure, type ContextPlan } from "./build-context";
import { repoSource } from "./image-source";
import type { ImageSource } from "../../core/image-source";
import { hostGitEnv, HOST_GIT_SAFE } from "../../sync/git-argv";
import { dockerfileBases } from "../../core/dockerfile-bases";

export const DOCKERFILE = "Dockerfile";

/** The image contract: these build args make the user inside the host user. */
export function buildArgsFor(user: HostUser): Record<string, string> {
  return {
    USER_NAME: user.name,
    USER_UID: String(user.uid),
    USER_GID: String(user.gid),
    USER_HOME: user.home,
  };
}

/** Whether the Dockerfile reads the build context (COPY/ADD other than `COPY --from=<stage>`). */
export function usesContext(dockerfile: string): boolean {
  // Join continuation lines first so `COPY \` on its own line is still seen.
  const text = dockerfile.replace(/\\\r?\n/g, " ");
  return text.split(/\r?\n/).some((line) => {
    const m = /^\s*(COPY|ADD)\s+(.*)$/i.exec(line);
    if (!m) return false;
    return !/(^|\s)--from=/.test(m[2] ?? "");
  });
}

/** Docker repository names allow only [a-z0-9._-] (lowercase) between separators. */
export function imageRepoName(repoDir: string): string {
  const s = basename(repoDir)
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, "-")
    .replace(/^[._-]+|[._-]+$/g, "")
    .replace(/[._-]{2,}/g, "-");
  return `sbx-${s || "repo"}`;
}

/**
 * What an image is built for: a sandbox (sbx's USER_* build args make its user the host's; tagged `sbx-<repo>`) or a
 * service (its image's own user, no USER_* args; tagged `sbx-<repo>-svc`, labelled apart, its bases local unless --pull).
 */
export type ImagePurpose = "sandbox" | "service";

/** The label every image sbx builds carries, by purpose (a sandbox's image can run sbx's cleanup; a service's cannot be counted on to). */
export const IMAGE_LABEL: Record<ImagePurpose, string> = { sandbox: "sbx.image=1", service: "sbx.service-image=1" };

/** Pure: `sbx-<repo-dir>[-svc]:<sha256 of Dockerfile, build args and (when used) context hash>`. */
export function imageTag(repoDir: string, dockerfile: string, buildArgs: Record<string, string>, contextHash?: string, purpose: ImagePurpose = "sandbox"): string {
  const h = createHash("sha256");
  h.update("dockerfile\0").update(dockerfile).update("\0args\0");
  for (const k of Object.keys(buildArgs).sort()) h.update(`${k}=${buildArgs[k]}\0`);
  if (contextHash !== undefined) h.update("context\0").update(contextHash);
  return `${imageRepoName(repoDir)}${purpose === "service" ? "-svc" : ""}:${h.digest("hex")}`;
}

export interface BuildPlan {
  tag: string;
  /** The Dockerfile's text, and its path on the host. */
  dockerfile: string;
  dockerfilePath: string;
  buildArgs: Record<string, string>;
  /**
   * What the build is sent when the Dockerfile uses COPY/ADD: what the sandbox's clone holds under the context dir
   * (build-context.ts), never the host's dir. null: the Dockerfile alone is sent.
   */
  context: ContextPlan | null;
  purpose: ImagePurpose;
}

/**
 * Reads the source's Dockerfile (default: the repo's) and works out the tag: Dockerfile, build args and, when it copies
 * from its context, the context's tree id and what else is sent (`changes`: `--with-changes`, asked for only then). A
 * missing repo Dockerfile is a config error naming `sbx init` and the other sources.
 * runs (a Dockerfile with COPY/ADD): git -C <repo> cat-file commit HEAD (and ls-tree of the context's dir)
 */
export async function planImage(
  git: Exec,
  repo: string,
  user: HostUser,
  source: Extract<ImageSource, { kind: "dockerfile" }> = repoDockerfile(repo),
  changes?: () => Promise<ContextChanges>,
  purpose: ImagePurpose = "sandbox",
): Promise<BuildPlan> {
  const file = source.dockerfile;
  if (!existsSync(file)) {
    if (source.from === "repo") {
      throw new SbxError("config", `${repo} has no ${DOCKERFILE}; sbx builds the sandbox image from it`, {
        hint: "Run `sbx init` in the repo to write a starter Dockerfile (git, fish, Claude Code), or add .devcontainer/devcontainer.json, or pass --dockerfile PATH or --image REF.",
      });
    }
    throw new SbxError("config", `the Dockerfile this sandbox is built from (${file}) is gone`, { hint: "Put it back, or make the sandbox again with another source (sbx rm, then sbx create)." });
  }
  const dockerfile = readFileSync(file, "utf8");
  // sbx's USER_* win over the source's own args (the image contract is sbx's); a service runs as its image's own user.
  const buildArgs = purpose === "service" ? { ...source.args } : { ...source.args, ...buildArgsFor(user) };
  const context = usesContext(dockerfile) ? await planContext(git, repo, source.context, file, dockerfile, changes ? await changes() : null) : null;
  const tag = imageTag(repo, dockerfile, buildArgs, context?.hash, purpose);
  return { tag, dockerfile, dockerfilePath: file, buildArgs, context, purpose };
}

function repoDockerfile(repo: string): Extract<ImageSource, { kind: "dockerfile" }> {
  return repoSource(repo) as Extract<ImageSource, { kind: "dockerfile" }>;
}

/**
 * The source's Dockerfile as it is now, read once: its sha256, and the tag it would build when it is known without git
 * (it copies nothing from the repo; else the tag follows the context's tree too: `tag` null).
 * null: an image source, or no Dockerfile to read.
 */
export function dockerfileNow(repo: string, user: HostUser, source: ImageSource = repoSource(repo)): { tag: string | null; sha: string } | null {
  if (source.kind === "image") return null;
  let dockerfile: string;
  try {
    dockerfile = readFileSync(source.dockerfile, "utf8");
  } catch {
    return null;
  }
  const sha = createHash("sha256").update(dockerfile).digest("hex");
  return { sha, tag: usesContext(dockerfile) ? null : imageTag(repo, dockerfile, { ...source.args, ...buildArgsFor(user) }) };
}

/**
 * Pure: the `docker build` argv for a plan: the context is the tar sbx writes to its stdin (`-`), the Dockerfile in it.
 * `proxy`: the parent proxy's predefined build args (core/parent-proxy.ts `buildProxyArgs`), outside the plan: Docker
 * keeps them out of the image's history and cache, and sbx out of its tag (the same image, whichever network built it).
 * Named without their values (`--build-arg HTTPS_PROXY`): the CLI takes each from its environment (`buildEnv`), so a
 * per-build relay's password is never in an argv another user of the machine can read (`ps`).
 * `pull` (`--pull`: the builder asks a registry for newer bases) only when the person asked for it.
 */
export function dockerBuildArgs(plan: Omit<BuildPlan, "purpose"> & { purpose?: ImagePurpose }, dockerfileAt: string, proxy: Readonly<Record<string, string>> = {}, pull = false): string[] {
  return [
    "docker", "build",
    // A failed step's container goes too (the classic builder keeps it otherwise): a failed create leaves nothing.
    "--force-rm",
    ...(pull ? ["--pull"] : []),
    "--tag", plan.tag,
    ...Object.keys(plan.buildArgs)
      .sort()
      .flatMap((k) => ["--build-arg", `${k}=${plan.buildArgs[k]}`]),
    ...Object.keys(proxy)
      .filter((k) => !(k in plan.buildArgs))
      .sort()
      .flatMap((k) => ["--build-arg", k]),
    "--label", IMAGE_LABEL[plan.purpose ?? "sandbox"],
    "--file", dockerfileAt,
    "-",
  ];
}

/** Pure: the docker CLI's environment for `dockerBuildArgs`' proxy args (the plan's own args win, as there). */
export function buildEnv(plan: Pick<BuildPlan, "buildArgs">, proxy: Readonly<Record<string, string>> = {}): Record<string, string> {
  return Object.fromEntries(Object.entries(proxy).filter(([k]) => !(k in plan.buildArgs)));
}

/** The context of a Dockerfile that copies nothing in: the Dockerfile alone. */
function dockerfileOnly(repo: string): ContextPlan {
  return { repo, prefix: "", tree: null, time: 0, dockerfileAt: DOCKERFILE, outside: false, changes: null, hash: "" };
}

export interface EnsureImageOptions {
  rebuild?: boolean;
  /** Build progress, as it arrives (sbx writes it to stderr). */
  onProgress?: (chunk: string) => void;
  /** Where the build's whole output is written (replaced by each build); a failure names it. */
  logFile?: string;
  /** Where the image comes from (default: the repo's Dockerfile). */
  source?: ImageSource;
  /**
   * Awaited before a build whose context is read from the repo's objects: a create's own writes into the repo's
   * `.git` (its store, promotion, which moves objects) end first.
   */
  beforeBuild?: () => Promise<unknown>;
  /** `--with-changes`: the working tree's changes through the copy-in door, asked for only when the context is used. */
  changes?: () => Promise<ContextChanges>;
  /**
   * The host's parent proxy for the build's steps (build args, and notes said when a build runs), asked just before the
   * build runs and released when it ends (a per-build relay's password dies then: sys/build-relay.ts).
   */
  proxy?: () => Promise<BuildProxyLease>;
  /** What it is built for (default: a sandbox). */
  purpose?: ImagePurpose;
  /** `--pull`: the builder may fetch its bases from a registry; without it a service's bases must be on this machine. */
  pull?: boolean;
}

/** The build's log file, made fresh (its dir too); a log that cannot be written costs the log, never the build. */
function openBuildLog(file: string | undefined): { write(s: string): void; close(): void } {
  if (file === undefined) return { write: () => undefined, close: () => undefined };
  try {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    const fd = openSync(file, "w", 0o600);
    return {
      write: (s) => {
        try {
          writeSync(fd, s);
        } catch {
          /* a full disk: the build goes on */
        }
      },
      close: () => closeSync(fd),
    };
  } catch {
    return { write: () => undefined, close: () => undefined };
  }
}

/** What building needs of the engine (engine-client.ts). */
export interface ImageEngine {
  imageExists(tag: string): Promise<boolean>;
  build(argv: string[], onOutput: (chunk: string) => void, context: ReadableStream<Uint8Array>, env?: Record<string, string>): Promise<number>;
}

/**
 * Builds the image when its tag is missing (or `rebuild`), and returns the tag; `notes` say what of the working tree its
 * build context left out (only when it built one that copies from it).
 * runs (engine.build): docker build --tag sbx-<repo>:<hash> --build-arg USER_…=… --file <Dockerfile> - (the context on stdin)
 */
export async function ensureImage(engine: ImageEngine, git: Exec, repo: string, user: HostUser, opts: EnsureImageOptions = {}): Promise<{ tag: string; built: boolean; notes: string[] }> {
  const source = opts.source ?? repoSource(repo);
  if (source.kind === "image") {
    // Used as it is: sbx pulls nothing (no registry here), so a missing image is said with what to do.
    if (await engine.imageExists(source.ref)) return { tag: source.ref, built: false, notes: [] };
    throw new SbxError("config", `image ${source.ref} is not on this machine (sbx pulls nothing)`, {
      hint: `Build or load it first (\`docker build -t ${source.ref} …\` or \`docker load\`), then run the command again.`,
    });
  }
  const plan = await planImage(git, repo, user, source, opts.changes, opts.purpose);
  if (!opts.rebuild && (await engine.imageExists(plan.tag))) return { tag: plan.tag, built: false, notes: [] };
  if (plan.purpose === "service" && opts.pull !== true) await requireLocalBases(engine, plan);
  if (plan.context !== null) await opts.beforeBuild?.();
  const ctx = plan.context ?? dockerfileOnly(repo);
  const leftOut = plan.context === null ? Promise.resolve(null) : leftOutNote(git, plan.context);
  const proxy = opts.proxy ? await opts.proxy() : null;
  // The whole output goes to the log file (this repo's last build); the tracker keeps the step and the last lines.
  const log = openBuildLog(opts.logFile);
  const tracker = new BuildTracker();
  const lines = lineSplitter((l) => tracker.line(l));
  const failed: ContextFailure = { error: null };
  let code: number;
  try {
    const argv = dockerBuildArgs(plan, ctx.dockerfileAt, proxy?.args, opts.pull === true);
    const sent = contextStream(git, ctx, plan.dockerfile, failed);
    try {
      code = await engine.build(
        argv,
        (s) => {
          log.write(s);
          lines(s);
          opts.onProgress?.(s);
        },
        sent.stream,
        buildEnv(plan, proxy?.args),
      );
    } catch (e) {
      // An engine that failed on a cut stream: git's error is the one to say.
      throw failed.error ?? e;
    } finally {
      await sent.close();
    }
  } finally {
    log.close();
    await proxy?.release();
  }
  if (failed.error !== null) throw failed.error;
  if (code !== 0) {
    const at = tracker.step ? ` at step ${tracker.step.n}/${tracker.step.of} (${tracker.step.text})` : "";
    const last = tracker.lastLines().map((l) => `  ${l}`);
    throw new SbxError("exec_failed", `docker build of ${plan.tag} failed (exit ${code})${at}; its last ${last.length} lines:\n${last.join("\n")}`, {
      hint: `Fix the Dockerfile, then run the command again.${plan.context !== null ? " Its build context is what the repo's last commit holds: a file it copies must be committed." : ""}${opts.logFile ? ` The whole log: ${opts.logFile}` : ""}`,
      data: { step: tracker.step, exitCode: code, ...(opts.logFile ? { log: opts.logFile } : {}) },
    });
  }
  const note = await leftOut.catch(() => null);
  return { tag: plan.tag, built: true, notes: [...(proxy?.notes ?? []), ...(note === null ? [] : [note])] };
}

/**
 * Refuses, before the build, a Dockerfile whose base the engine lacks (the builder would fetch it from a registry) or
 * cannot be known before it runs (a FROM of a build arg without a default): sbx builds from local images unless --pull.
 */
export async function requireLocalBases(engine: Pick<ImageEngine, "imageExists">, plan: Pick<BuildPlan, "dockerfile" | "dockerfilePath" | "buildArgs">): Promise<void> {
  const bases = dockerfileBases(plan.dockerfile, plan.buildArgs);
  const missing: string[] = [];
  for (const img of bases.images) if (!(await engine.imageExists(img))) missing.push(img);
  if (missing.length === 0 && bases.unresolved.length === 0) return;
  const what = [
    ...missing.map((m) => `${m} is not on this machine`),
    ...bases.unresolved.map((u) => `${u} names a build arg with no value, so sbx cannot tell which image it is`),
  ];
  throw new SbxError("config", `${plan.dockerfilePath}: ${what.join("; ")} (sbx builds services from local images only)`, {
    hint: missing.length
      ? `Load or build it first (\`docker pull ${missing[0]}\` where a registry is reachable, or \`docker build -t ${missing[0]} …\`), or pass --pull to let the build fetch it.`
      : "Give the ARG a default before the FROM, or pass --pull to let the build fetch what it names.",
  });
}

/**
 * What of the working tree under the context dir the build context did not hold, said at the build: untracked paths
 * (unless --with-changes carried them) and ignored ones, a few named, with how to put them in.
 * runs: git -C <repo> status --porcelain=v1 -z --ignored --untracked-files=normal -- <context dir>
 */
async function leftOutNote(git: Exec, plan: ContextPlan): Promise<string | null> {
  const r = await git.run(["git", ...HOST_GIT_SAFE, "-C", plan.repo, "status", "--porcelain=v1", "-z", "--ignored", "--untracked-files=normal", "--ignore-submodules", "--", plan.prefix === "" ? "." : plan.prefix], {
    env: hostGitEnv(),
    replaceEnv: true,
    check: false,
  });
  if (r.exitCode !== 0) return null;
  const carried = plan.changes !== null;
  const paths: string[] = [];
  let untracked = 0;
  let ignored = 0;
  for (const f of r.stdout.split("\0")) {
    if (f.startsWith("?? ") && !carried) untracked++;
    else if (f.startsWith("!! ")) ignored++;
    else continue;
    paths.push(f.slice(3));
  }
  if (paths.length === 0) return null;
  const where = plan.prefix === "" ? "the repo" : plan.prefix;
  const counts = [untracked ? `${untracked} untracked` : "", ignored ? `${ignored} ignored` : ""].filter(Boolean).join(" and ");
  const named = `${paths.slice(0, 4).join(", ")}${paths.length > 4 ? ", …" : ""}`;
  return (
    `note: the image's build context is what the sandbox's clone holds (the last commit${carried ? " and your changes" : ""}): ${counts} path${paths.length === 1 ? "" : "s"} in ${where} ${paths.length === 1 ? "is" : "are"} not in it (${named}); ` +
    `commit what the image needs${carried ? "" : ", or pass --with-changes to add untracked (not ignored) files"}; ignored files never go in`
  );
}
