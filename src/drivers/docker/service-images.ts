// A built service's image: its Dockerfile and context checked when the sandbox is created (before anything is made),
// and the image found or built when the service starts. The driver's create and start steps call these.
import { readFileSync, realpathSync, statSync } from "node:fs";
import type { HostUser } from "../../core/spec";
import type { BuildProxyLease } from "../../sys/build-relay";
import { SbxError } from "../../core/errors";
import type { ServiceSpec } from "../../core/services";
import type { Exec } from "../../sys/exec";
import { ensureImage, requireLocalBases, type ImageEngine } from "./image";

/** Where a build's output goes: the person's progress line and a log file; the parent proxy for the build, if any. */
export interface BuildOutput {
  onProgress(s: string): void;
  logFile: string;
  /** Asked when a build runs, released when it ends (a per-build relay's password dies with it). */
  proxy?: () => Promise<BuildProxyLease>;
}

/**
 * A built service's Dockerfile is a file and its context a dir of the repo (what its last commit holds there is sent);
 * unless `pull`, its bases are on this machine (else the build would fetch them). Said before anything is made.
 */
export async function requireServiceBuild(engine: Pick<ImageEngine, "imageExists">, repo: string, s: ServiceSpec, pull: boolean): Promise<void> {
  const b = s.build;
  if (b === undefined) return;
  let file = false;
  try {
    file = statSync(b.dockerfile).isFile();
  } catch {
    file = false;
  }
  if (!file) throw new SbxError("config", `service ${s.name}: ${b.dockerfile} is not a file`, { hint: "Check the path (relative paths are from the current directory)." });
  const ctx = b.context ?? repo;
  let inside = false;
  try {
    const root = realpathSync(repo);
    const real = realpathSync(ctx);
    inside = real === root || real.startsWith(`${root}/`);
  } catch {
    inside = false;
  }
  if (!inside) throw new SbxError("config", `service ${s.name}: its build context ${ctx} is not a dir of the repo ${repo}`, { hint: "A service's image is built from what the repo's last commit holds." });
  if (!pull) await requireLocalBases(engine, { dockerfile: readFileSync(b.dockerfile, "utf8"), dockerfilePath: b.dockerfile, buildArgs: { ...b.args } });
}

/**
 * A service's image: a local one as named; a built one's tag when the engine still has it, else built now from its
 * Dockerfile (its bases local unless `pull`), its output to the person and to the sandbox's build log with
 * `-svc-<name>` before `.log`. `log` hears what was built and the build's notes.
 */
export async function serviceImage(
  d: { engine: ImageEngine; exec: Exec; user: HostUser },
  repo: string,
  s: ServiceSpec,
  out: BuildOutput,
  o: { log?: (line: string) => void; pull?: boolean; beforeBuild?: () => Promise<unknown> } = {},
): Promise<string> {
  if (s.build === undefined) return s.image ?? "";
  if (s.image !== undefined && (await d.engine.imageExists(s.image))) return s.image;
  const img = await ensureImage(d.engine, d.exec, repo, d.user, {
    purpose: "service",
    source: { kind: "dockerfile", dockerfile: s.build.dockerfile, context: s.build.context ?? repo, ...(s.build.args ? { args: s.build.args } : {}), from: "flags" },
    onProgress: out.onProgress,
    logFile: out.logFile.replace(/\.log$/, `-svc-${s.name}.log`),
    // The parent proxy, as a sandbox's build gets it (a company network's RUN steps need it): the same lease per build.
    ...(out.proxy ? { proxy: out.proxy } : {}),
    ...(o.pull ? { pull: true } : {}),
    ...(o.beforeBuild ? { beforeBuild: o.beforeBuild } : {}),
  });
  if (img.built) o.log?.(`built service ${s.name}'s image ${img.tag}`);
  for (const note of img.notes) o.log?.(note);
  return img.tag;
}
