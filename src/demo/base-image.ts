// Which base image the demo's Dockerfile starts FROM: a local one that already has git, curl and bash; never a registry unless --pull.
import { cpSync, existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { SbxError } from "../core/errors";
import type { Exec } from "../sys/exec";
import { userRecipe } from "../workspace/init";

export const SLIM = "debian:bookworm-slim";
export const LOCAL_BASE = "sbx-base:bookworm";
/** What the scripted agent needs inside: curl for the sites, git for the shim to hand local work to, bash for itself. */
export const NEEDED_TOOLS = ["git", "curl", "bash"] as const;
/** What the private-registry step needs inside besides: a real npm, and the node it runs on. */
export const NPM_TOOLS = ["node", "npm"] as const;

export interface BaseChoice {
  image: string;
  /** One sentence: which image and why. */
  why: string;
  /** Whether the Dockerfile must install the tools (only with --pull, where the network was allowed). */
  installTools: boolean;
  /** Why the image has no npm, so the private-registry step cannot install (undefined: it has one). */
  noNpm?: string;
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
export function probeArgs(image: string, tools: readonly string[] = NEEDED_TOOLS): string[] {
  return [
    "docker", "run", "--rm", "--network", "none", "--label", "sbx.demo=probe", "--entrypoint", "/bin/sh", image,
    "-c", `for t in ${tools.join(" ")}; do command -v "$t" >/dev/null || echo "$t"; done`,
  ];
}

/** runs: docker run --rm --network none --entrypoint /bin/sh <image> -c 'command -v git curl bash …' */
async function missingTools(exec: Exec, image: string, tools: readonly string[] = NEEDED_TOOLS): Promise<string[] | null> {
  const r = await exec.run(probeArgs(image, tools), { check: false, timeoutMs: 60_000 });
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
    const missing = await missingTools(d.exec, SLIM, [...NEEDED_TOOLS, ...NPM_TOOLS]);
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
    ? "RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends git curl ca-certificates bash nodejs npm && rm -rf /var/lib/apt/lists/*\n\n"
    : "";
  return `# The sbx demo's sandbox image: ${base.why}.\nFROM ${base.image}\nUSER 0\n\n${install}${recipe}`;
}

/** The repo's own base-image script, found relative to this file. */
export function defaultBuildScript(): string {
  return join(import.meta.dir, "..", "..", "scripts", "base-image.sh");
}

/** Pure: the host's npm package dir from the `npm` on its PATH (…/node_modules/npm/bin/npm-cli.js), or null. */
export function npmPackageDir(npmOnPath: string | null, realpath: (p: string) => string = realpathSync): string | null {
  if (npmOnPath === null) return null;
  let dir: string;
  try {
    dir = dirname(dirname(realpath(npmOnPath)));
  } catch {
    return null;
  }
  try {
    return (JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { name?: unknown }).name === "npm" ? dir : null;
  } catch {
    return null;
  }
}

/**
 * The base with a real npm for the private-registry step. An image with npm (or one whose build installs it with apt,
 * --pull) is used as it is. One with node but no npm (the local debootstrap image) gets the host's own npm, a
 * package of JavaScript, copied into a local image built FROM it with no network (`sbx-demo-npm:<hash>`, kept for the
 * next run); never a registry. With no node, or no npm on the host, the image is used as it is and `noNpm` says why.
 * runs: docker run --rm --network none <base> -c 'command -v node npm'; docker build --network none -t sbx-demo-npm:<hash> <dir>
 */
export async function withNpm(d: BaseImageDeps & { workDir: string; path: string }, base: BaseChoice): Promise<BaseChoice> {
  if (base.installTools) return base;
  const missing = await missingTools(d.exec, base.image, NPM_TOOLS);
  if (missing === null) return { ...base, noNpm: `could not run ${base.image} to look for node and npm` };
  if (missing.length === 0) return base;
  if (missing.includes("node")) return { ...base, noNpm: `${base.image} has no node for npm to run on (sbx demo --pull installs nodejs and npm with apt)` };
  const pkg = npmPackageDir(Bun.which("npm", { PATH: d.path }));
  if (pkg === null) return { ...base, noNpm: `${base.image} has node but no npm, and this host has no npm to copy in (sbx demo --pull installs it with apt)` };
  const version = (JSON.parse(readFileSync(join(pkg, "package.json"), "utf8")) as { version?: string }).version ?? "?";
  const id = (await d.exec.run(["docker", "image", "inspect", "--format", "{{.Id}}", base.image], { check: false, timeoutMs: 30_000 })).stdout.trim();
  const tag = `sbx-demo-npm:${Bun.hash(`${id}\0${pkg}\0${version}`).toString(16)}`;
  const why = `${base.why}; npm ${version}, the host's own (${pkg}), copied in since ${base.image} has node but no npm`;
  if (await present(d.exec, tag)) return { ...base, image: tag, why };
  mkdirSync(d.workDir, { recursive: true, mode: 0o700 });
  if (!existsSync(join(d.workDir, "npm"))) cpSync(pkg, join(d.workDir, "npm"), { recursive: true, dereference: true });
  writeFileSync(
    join(d.workDir, "Dockerfile"),
    `FROM ${base.image}\nCOPY npm /usr/local/lib/node_modules/npm\nRUN ln -sf ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm && ln -sf ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx\n`,
  );
  const r = await d.exec.run(["docker", "build", "--network", "none", "--label", "sbx.demo=npm-base", "-t", tag, d.workDir], { check: false, timeoutMs: 300_000, ...(d.progress ? { onStdout: d.progress, onStderr: d.progress } : {}) });
  if (r.exitCode !== 0) return { ...base, noNpm: `building ${tag} (${base.image} with the host's npm) failed: ${r.stderr.trim().split("\n").slice(-1)[0] ?? ""}` };
  return { ...base, image: tag, why };
}
