// Which base image the demo's Dockerfile starts FROM: a local one that already has git, curl and bash; never a registry unless --pull.
import { join } from "node:path";
import { SbxError } from "../core/errors";
import type { Exec } from "../sys/exec";
import { userRecipe } from "../workspace/init";

export const SLIM = "debian:bookworm-slim";
export const LOCAL_BASE = "sbx-base:bookworm";
/** What the scripted agent needs inside: curl for the sites, git for the shim to hand local work to, bash for itself. */
export const NEEDED_TOOLS = ["git", "curl", "bash"] as const;

export interface BaseChoice {
  image: string;
  /** One sentence: which image and why. */
  why: string;
  /** Whether the Dockerfile must install the tools (only with --pull, where the network was allowed). */
  installTools: boolean;
}

export interface BaseImageDeps {
  exec: Exec;
  uid: number;
  /** The repo's scripts/base-image.sh. */
  buildScript?: string;
  progress?: (chunk: string) => void;
}

/** runs: docker image inspect <image> (its exit code says whether it exists) */
async function present(exec: Exec, image: string): Promise<boolean> {
  return (await exec.run(["docker", "image", "inspect", "--format", "{{.Id}}", image], { check: false, timeoutMs: 30_000 })).exitCode === 0;
}

/** Pure: the argv of a throwaway, networkless container that lists which of the needed tools an image lacks. */
export function probeArgs(image: string): string[] {
  return [
    "docker", "run", "--rm", "--network", "none", "--label", "sbx.demo=probe", "--entrypoint", "/bin/sh", image,
    "-c", `for t in ${NEEDED_TOOLS.join(" ")}; do command -v "$t" >/dev/null || echo "$t"; done`,
  ];
}

/** runs: docker run --rm --network none --entrypoint /bin/sh <image> -c 'command -v git curl bash …' */
async function missingTools(exec: Exec, image: string): Promise<string[] | null> {
  const r = await exec.run(probeArgs(image), { check: false, timeoutMs: 60_000 });
  if (r.exitCode !== 0) return null;
  return r.stdout.split("\n").map((s) => s.trim()).filter(Boolean);
}

/**
 * Picks the base: `debian:bookworm-slim` when it is present and has the tools, else the local debootstrap image
 * `sbx-base:bookworm` (built with scripts/base-image.sh when root and missing). With `pull`, the slim image is
 * pulled and the tools are installed during the build (the one case where the demo uses the network).
 * runs: docker pull debian:bookworm-slim (only with --pull); bash scripts/base-image.sh (only when root and missing)
 */
export async function chooseBase(d: BaseImageDeps, pull: boolean): Promise<BaseChoice> {
  if (pull) {
    const r = await d.exec.run(["docker", "pull", SLIM], { check: false, timeoutMs: 600_000, ...(d.progress ? { onStdout: d.progress, onStderr: d.progress } : {}) });
    if (r.exitCode !== 0) {
      throw new SbxError("unavailable", `docker pull ${SLIM} failed: ${r.stderr.trim().split("\n").slice(-1)[0] ?? ""}`, {
        hint: "Run `sbx demo` without --pull: it then uses a local image (and builds sbx-base:bookworm with debootstrap when root).",
      });
    }
    const missing = await missingTools(d.exec, SLIM);
    return { image: SLIM, why: `--pull: pulled ${SLIM}${missing && missing.length ? `; the build installs ${missing.join(", ")} with apt (network allowed by --pull)` : ""}`, installTools: (missing?.length ?? 0) > 0 };
  }
  const skipped: string[] = [];
  if (await present(d.exec, SLIM)) {
    const missing = await missingTools(d.exec, SLIM);
    if (missing !== null && missing.length === 0) return { image: SLIM, why: `${SLIM} is present locally and has ${NEEDED_TOOLS.join(", ")}`, installTools: false };
    skipped.push(`${SLIM} is present but lacks ${missing === null ? "a working shell" : missing.join(", ")} (installing them would need the network)`);
  } else {
    skipped.push(`${SLIM} is not present locally and sbx contacts no registry without --pull`);
  }
  if (!(await present(d.exec, LOCAL_BASE))) {
    if (d.uid !== 0 || !d.buildScript) {
      throw new SbxError("unavailable", `${skipped.join("; ")}; and the local base image ${LOCAL_BASE} is missing`, {
        hint: `Build it as root with \`sudo ${d.buildScript ?? "scripts/base-image.sh"}\` (debootstrap, no registry needed), or run \`sbx demo --pull\` where a registry is reachable.`,
      });
    }
    const r = await d.exec.run(["bash", d.buildScript], { check: false, timeoutMs: 900_000, ...(d.progress ? { onStdout: d.progress, onStderr: d.progress } : {}) });
    if (r.exitCode !== 0) {
      throw new SbxError("unavailable", `building ${LOCAL_BASE} with ${d.buildScript} failed (exit ${r.exitCode})`, {
        hint: "Its output above says why; it needs debootstrap (apt-get install debootstrap) and a Debian mirror.",
      });
    }
    skipped.push(`built ${LOCAL_BASE} locally with debootstrap`);
  }
  return { image: LOCAL_BASE, why: `using the local debootstrap image ${LOCAL_BASE}: ${skipped.join("; ")}`, installTools: false };
}

/** Pure: the demo repo's Dockerfile: FROM the base, the tools only when --pull allowed the network, then sbx's user recipe. */
export function demoDockerfile(base: BaseChoice, recipe: string = userRecipe()): string {
  const install = base.installTools
    ? "RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends git curl ca-certificates bash && rm -rf /var/lib/apt/lists/*\n\n"
    : "";
  return `# The sbx demo's sandbox image: ${base.why}.\nFROM ${base.image}\nUSER 0\n\n${install}${recipe}`;
}

/** The repo's own base-image script, found relative to this file. */
export function defaultBuildScript(): string {
  return join(import.meta.dir, "..", "..", "scripts", "base-image.sh");
}
