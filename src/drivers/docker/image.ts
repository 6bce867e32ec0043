// The sandbox image: the repo's own Dockerfile, tagged by content hash, built only when that tag is missing.
import { createHash } from "node:crypto";
import { closeSync, existsSync, lstatSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { BuildTracker } from "../../core/build-steps";
import { SbxError } from "../../core/errors";
import { lineSplitter } from "../../core/lines";
import type { Exec } from "../../sys/exec";
import type { HostUser } from "../../core/spec";
import { repoSource } from "./image-source";
import type { ImageSource } from "../../core/image-source";

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

/** Pure: `sbx-<repo-dir>:<sha256 of Dockerfile, build args and (when used) context hash>`. */
export function imageTag(repoDir: string, dockerfile: string, buildArgs: Record<string, string>, contextHash?: string): string {
  const h = createHash("sha256");
  h.update("dockerfile\0").update(dockerfile).update("\0args\0");
  for (const k of Object.keys(buildArgs).sort()) h.update(`${k}=${buildArgs[k]}\0`);
  if (contextHash !== undefined) h.update("context\0").update(contextHash);
  return `${imageRepoName(repoDir)}:${h.digest("hex")}`;
}

/** Content hash of a build context: every file's relative path, mode and bytes, `.git` excluded. */
export function contextHash(dir: string): string {
  const h = createHash("sha256");
  const walk = (rel: string) => {
    const names = readdirSync(join(dir, rel)).sort();
    for (const n of names) {
      if (rel === "" && n === ".git") continue;
      const r = rel === "" ? n : `${rel}/${n}`;
      const st = lstatSync(join(dir, r));
      if (st.isDirectory()) {
        h.update(`d ${r}\0`);
        walk(r);
      } else if (st.isSymbolicLink()) {
        h.update(`l ${r}\0${readlinkSync(join(dir, r))}\0`);
      } else if (st.isFile()) {
        h.update(`f ${r} ${st.mode & 0o777}\0`).update(readFileSync(join(dir, r))).update("\0");
      }
    }
  };
  walk("");
  return h.digest("hex");
}

export interface BuildPlan {
  tag: string;
  /** The Dockerfile's text, and its path (sent as --file when the context is sent). */
  dockerfile: string;
  dockerfilePath: string;
  buildArgs: Record<string, string>;
  /** The repo dir when the Dockerfile uses COPY/ADD; otherwise the build sends a context holding only the Dockerfile. */
  context: string | null;
}

/**
 * Reads the source's Dockerfile (default: the repo's) and works out the tag; a missing repo Dockerfile is a config
 * error naming `sbx init` and the other sources.
 */
export function planImage(repo: string, user: HostUser, source: Extract<ImageSource, { kind: "dockerfile" }> = repoDockerfile(repo)): BuildPlan {
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
  // sbx's USER_* win over the source's own args (the image contract is sbx's).
  const buildArgs = { ...source.args, ...buildArgsFor(user) };
  const context = usesContext(dockerfile) ? source.context : null;
  const tag = imageTag(repo, dockerfile, buildArgs, context === null ? undefined : contextHash(context));
  return { tag, dockerfile, dockerfilePath: file, buildArgs, context };
}

function repoDockerfile(repo: string): Extract<ImageSource, { kind: "dockerfile" }> {
  return repoSource(repo) as Extract<ImageSource, { kind: "dockerfile" }>;
}

/**
 * The source's Dockerfile as it is now, read once: its sha256, and the tag it would build when that is cheap to know
 * (it copies nothing from the repo; else the tag hashes the whole context, too slow for every start: `tag` null).
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

/** Pure: the `docker build` argv for a plan, given the context dir actually sent. */
export function dockerBuildArgs(plan: BuildPlan, contextDir: string, dockerfilePath: string): string[] {
  return [
    "docker", "build",
    // A failed step's container goes too (the classic builder keeps it otherwise): a failed create leaves nothing.
    "--force-rm",
    "--tag", plan.tag,
    ...Object.keys(plan.buildArgs)
      .sort()
      .flatMap((k) => ["--build-arg", `${k}=${plan.buildArgs[k]}`]),
    "--label", "sbx.image=1",
    "--file", dockerfilePath,
    contextDir,
  ];
}

/**
 * Whether the image exists: GET /images/<tag>/json on the engine socket when given (200/404), else
 * runs: docker image inspect <tag> (its exit code says whether the image exists)
 */
export async function imageExists(exec: Exec, tag: string, apiSocket?: string): Promise<boolean> {
  if (apiSocket !== undefined) {
    try {
      const res = await fetch(`http://docker/images/${encodeURIComponent(tag)}/json`, { unix: apiSocket } as RequestInit);
      await res.arrayBuffer();
      if (res.status === 200) return true;
      if (res.status === 404) return false;
    } catch {
      /* fall back to the CLI */
    }
  }
  const r = await exec.run(["docker", "image", "inspect", "--format", "{{.Id}}", tag], { check: false });
  return r.exitCode === 0;
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
   * Awaited before a build whose context is a directory of the host's (the repo, most often, with its `.git`): the
   * engine's client reads the whole context as a tar, and a file that another writer removes or renames meanwhile
   * (sbx's own store and lock files under `.git`) fails the build. A create's own writes into the repo end first.
   */
  beforeBuild?: () => Promise<unknown>;
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
  build(argv: string[], onOutput: (chunk: string) => void): Promise<number>;
}

/**
 * Builds the image when its tag is missing (or `rebuild`), and returns the tag.
 * runs (engine.build): docker build --tag sbx-<repo>:<hash> --build-arg USER_…=… --file <Dockerfile> <context>
 */
export async function ensureImage(engine: ImageEngine, repo: string, user: HostUser, opts: EnsureImageOptions = {}): Promise<{ tag: string; built: boolean }> {
  const source = opts.source ?? repoSource(repo);
  if (source.kind === "image") {
    // Used as it is: sbx pulls nothing (no registry here), so a missing image is said with what to do.
    if (await engine.imageExists(source.ref)) return { tag: source.ref, built: false };
    throw new SbxError("config", `image ${source.ref} is not on this machine (sbx pulls nothing)`, {
      hint: `Build or load it first (\`docker build -t ${source.ref} …\` or \`docker load\`), then run the command again.`,
    });
  }
  const plan = planImage(repo, user, source);
  if (!opts.rebuild && (await engine.imageExists(plan.tag))) return { tag: plan.tag, built: false };
  let tmp: string | null = null;
  try {
    let contextDir: string;
    let dockerfilePath: string;
    if (plan.context === null) {
      tmp = mkdtempSync(join(tmpdir(), "sbx-build-"));
      dockerfilePath = join(tmp, DOCKERFILE);
      writeFileSync(dockerfilePath, plan.dockerfile);
      contextDir = tmp;
    } else {
      contextDir = plan.context;
      dockerfilePath = plan.dockerfilePath;
    }
    if (plan.context !== null) await opts.beforeBuild?.();
    const argv = dockerBuildArgs(plan, contextDir, dockerfilePath);
    // The whole output goes to the log file (this repo's last build); the tracker keeps the step and the last lines.
    const log = openBuildLog(opts.logFile);
    const tracker = new BuildTracker();
    const lines = lineSplitter((l) => tracker.line(l));
    let code: number;
    try {
      code = await engine.build(argv, (s) => {
        log.write(s);
        lines(s);
        opts.onProgress?.(s);
      });
    } finally {
      log.close();
    }
    if (code !== 0) {
      const at = tracker.step ? ` at step ${tracker.step.n}/${tracker.step.of} (${tracker.step.text})` : "";
      const last = tracker.lastLines().map((l) => `  ${l}`);
      throw new SbxError("exec_failed", `docker build of ${plan.tag} failed (exit ${code})${at}; its last ${last.length} lines:\n${last.join("\n")}`, {
        hint: `Fix the Dockerfile, then run the command again.${opts.logFile ? ` The whole log: ${opts.logFile}` : ""}`,
        data: { step: tracker.step, exitCode: code, ...(opts.logFile ? { log: opts.logFile } : {}) },
      });
    }
    return { tag: plan.tag, built: true };
  } finally {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  }
}
