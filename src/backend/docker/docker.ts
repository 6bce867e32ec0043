// Apply half of the Docker backend: converges containers and overlay volumes to a SandboxSpec, finds its own by label.
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { SbxError } from "../../core/errors";
import type { Exec } from "../../sys/exec";
import type { Backend, Change, CleanupReport, Observed, Phase, SandboxSpec, ShellRequest } from "../backend";
import {
  FORWARDER_READY,
  LABEL,
  containerCommand,
  createRequestFromArgs,
  containerName,
  dockerCreateArgs,
  dockerExecArgs,
  mountTargets,
  mountValue,
  overlayPlan,
  overlayVolumeCreateArgs,
  overlayVolumeCreateBody,
  rootLabel,
  sandboxLayout,
  seedEntries,
  fishProfileSnippet,
  shProfileSnippet,
  type OverlayPlan,
  type RuntimeSources,
} from "./args";
import { probeEngineFast } from "./engine";
import { engineJson, engineMessage, engineSocket } from "./engine-exec";
import { tarArchive } from "./tar";

export interface DockerBackendOptions {
  /**
   * The state root's sandbox dir (paths.sandboxRoot). Everything this backend makes is labelled `sbx.root=<sha256 of it>`,
   * and list, cleanup and prune only ever see (and touch) containers and volumes with that label: another user's or
   * another state root's sandboxes on a shared engine are invisible to it.
   */
  sandboxRoot: string;
  /** Host paths of the Bun binary and shims dir mounted read-only into every sandbox (default: this process's Bun, this checkout's shims/). */
  runtime?: RuntimeSources;
  /** How long to wait for the in-sandbox forwarder to listen after a start (default 10 s). */
  readyTimeoutMs?: number;
  /** Image used to delete root-owned overlay `work/` dirs when the sandbox's own image is gone. */
  fallbackImage?: string;
  /**
   * The engine's unix socket, for read-only status queries over its HTTP API (a few ms instead of a CLI spawn on every
   * attach). Unset: every query goes through the docker CLI.
   */
  apiSocket?: string;
}

export { engineSocket };

interface Seen {
  status: string;
  root: string;
  dir: string;
}

export interface Found {
  kind: "container" | "volume";
  name: string;
  id: string;
  sandbox: string;
  dir: string;
  repo: string;
  state: string;
}

/**
 * Pure: this state root's containers and volumes from the engine's GET /containers/json and GET /volumes answers
 * (already filtered by label), as `found()` reads them from `docker ps` / `docker volume ls`. Undefined when an answer
 * does not have the expected shape (the caller then asks the CLI).
 */
export function foundFromApi(containers: unknown, volumes: unknown): Found[] | undefined {
  if (!Array.isArray(containers)) return undefined;
  const vols = (volumes as { Volumes?: unknown } | null)?.Volumes ?? [];
  if (!Array.isArray(vols)) return undefined;
  const str = (v: unknown) => (typeof v === "string" ? v : "");
  const out: Found[] = [];
  for (const c of containers as { Names?: unknown; Labels?: Record<string, unknown> | null; State?: unknown }[]) {
    const l = c?.Labels ?? {};
    if (!Array.isArray(c?.Names) || typeof c.Names[0] !== "string" || typeof c.State !== "string") return undefined;
    if (str(l[LABEL.role]) === "cleanup") continue;
    out.push({ kind: "container", name: c.Names[0].replace(/^\//, ""), sandbox: str(l[LABEL.sandbox]), dir: str(l[LABEL.dir]), repo: str(l[LABEL.repo]), id: str(l[LABEL.name]), state: c.State });
  }
  for (const v of vols as { Name?: unknown; Labels?: Record<string, unknown> | null }[]) {
    if (typeof v?.Name !== "string") return undefined;
    const l = v.Labels ?? {};
    out.push({ kind: "volume", name: v.Name, sandbox: str(l[LABEL.sandbox]), dir: str(l[LABEL.dir]), repo: str(l[LABEL.repo]), id: str(l[LABEL.name]), state: "" });
  }
  return out;
}

/** Epoch seconds as the engine takes them for a log's `since` (API and CLI alike). */
const sinceText = (since: number) => since.toFixed(3);

/** API path of a container's log, both streams, from `since` when given. */
function logsPath(name: string, since?: number): string {
  return `/containers/${encodeURIComponent(name)}/logs?stdout=1&stderr=1${since === undefined ? "" : `&since=${sinceText(since)}`}`;
}

function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/**
 * The Bun binary and shims dir this sbx runs from. A compiled sbx is not Bun: then the `bun` next to it (or on PATH)
 * must be given explicitly via DockerBackendOptions.runtime.
 */
export function defaultRuntime(execPath: string = process.execPath): RuntimeSources {
  const exe = basename(execPath);
  if (!(exe === "bun" || exe.startsWith("bun-") || exe === "bun.exe")) {
    throw new SbxError("config", `sbx runs as ${execPath}, which is not Bun: the in-sandbox forwarder and shims need the host's Bun`, {
      hint: "Run sbx with Bun (bun src/cli/main.ts), or install Bun and put it on PATH.",
    });
  }
  return { bun: realpathSync(execPath), shims: realpathSync(join(import.meta.dir, "..", "..", "..", "shims")) };
}

/** Writes the login-shell snippets (shims first on PATH) into the sandbox dir, for read-only mounts. Idempotent. */
export function writeShellProfiles(spec: Pick<SandboxSpec, "dir">): void {
  const lay = sandboxLayout(spec.dir);
  mkdirSync(dirname(lay.shProfile), { recursive: true, mode: 0o755 });
  chmodSync(dirname(lay.shProfile), 0o755);
  writeFileSync(lay.shProfile, shProfileSnippet(), { mode: 0o644 });
  writeFileSync(lay.fishProfile, fishProfileSnippet(), { mode: 0o644 });
  // Empty, read-only for everyone: what ~/.claude/.credentials.json shows inside in --claude-auth inject mode.
  if (!existsSync(lay.credentialsMask)) writeFileSync(lay.credentialsMask, "", { mode: 0o444 });
  chmodSync(lay.credentialsMask, 0o444);
}

/**
 * Checks the engine can give the sandbox the host user's uid on bind mounts; refuses rootless, userns-remap, Desktop.
 * Asks the engine's API on `socket` when given (GET /info), else runs: docker info --format '{{json .}}'
 */
export async function requireSameUidEngine(exec: Exec, socket?: string): Promise<void> {
  const p = await probeEngineFast(exec, socket);
  if (!p.ok) {
    const hint =
      p.reason === "permission"
        ? "Add yourself to the docker group (sudo usermod -aG docker $USER) and log in again."
        : p.reason === "no-client"
          ? "Install Docker Engine (Debian/Ubuntu: sudo apt-get install docker.io)."
          : "Start the engine (sudo systemctl start docker), then retry; `sbx doctor` checks the setup.";
    throw new SbxError("unavailable", `Docker is not usable: ${p.detail.split("\n")[0] || p.reason}`, { hint });
  }
  if (!p.class.sameUidWorks) {
    throw new SbxError("unavailable", `this Docker engine is ${p.class.kind}: ${p.class.why}`, {
      hint: "sbx needs a rootful Docker Engine on this host (not rootless, not userns-remap, not Docker Desktop); `sbx doctor` explains the options.",
    });
  }
}

export class DockerBackend implements Backend {
  readonly kind = "docker" as const;
  /** The `sbx.root` label value of this state root. */
  readonly root: string;
  private runtimeCache: RuntimeSources | undefined;
  constructor(
    private readonly exec: Exec,
    private readonly opts: DockerBackendOptions,
  ) {
    this.root = rootLabel(opts.sandboxRoot);
    this.runtimeCache = opts.runtime;
  }

  /** The engine's unix socket for API calls, when there is one. */
  get apiSocket(): string | undefined {
    return this.opts.apiSocket;
  }

  private runtime(): RuntimeSources {
    this.runtimeCache ??= defaultRuntime();
    return this.runtimeCache;
  }

  private image(spec: SandboxSpec): string {
    const image = spec.options.image;
    if (typeof image !== "string" || image === "") {
      throw new SbxError("internal", `sandbox ${spec.name}: no image in its spec`, { hint: "This is a bug in sbx; please report it." });
    }
    return image;
  }

  /** Pure-ish: the overlay plans for a spec (stats each host dir). */
  overlayPlans(spec: SandboxSpec): OverlayPlan[] {
    return [...new Set(spec.overlays)].map((t) => overlayPlan(spec, t, isDir(t)));
  }

  /**
   * GET /containers/<name>/json on the engine socket: 404 means absent. Undefined when the API cannot answer.
   * Returns the status and the labels that say whose container it is.
   */
  private async apiStatus(name: string): Promise<Seen | null | undefined> {
    const sock = this.opts.apiSocket;
    if (sock === undefined) return undefined;
    try {
      const res = await fetch(`http://docker/containers/${encodeURIComponent(name)}/json`, { unix: sock } as RequestInit);
      if (res.status === 404) return null;
      if (!res.ok) return undefined;
      const body = (await res.json()) as { State?: { Status?: unknown }; Config?: { Labels?: Record<string, unknown> | null } };
      if (typeof body.State?.Status !== "string") return undefined;
      const l = body.Config?.Labels ?? {};
      const str = (v: unknown) => (typeof v === "string" ? v : "");
      return { status: body.State.Status, root: str(l[LABEL.root]), dir: str(l[LABEL.dir]) };
    } catch {
      return undefined;
    }
  }

  /**
   * The container's status, or null when there is none of THIS state root: a container of that name that another
   * root made (its sbx.root label differs; an unlabelled one whose sbx.dir is not this sandbox's dir) is never ours to
   * start, stop or remove. `foreign` says one is in the way.
   * runs: docker inspect --type container --format '{{.State.Status}}\t{{index .Config.Labels "sbx.root"}}\t…' sbx-<id>
   */
  async ownContainer(spec: SandboxSpec): Promise<{ status: string | null; foreign: boolean }> {
    let seen = await this.apiStatus(containerName(spec.id));
    if (seen === undefined) {
      const r = await this.exec.run(
        ["docker", "inspect", "--type", "container", "--format", `{{.State.Status}}\t{{index .Config.Labels "${LABEL.root}"}}\t{{index .Config.Labels "${LABEL.dir}"}}`, containerName(spec.id)],
        { check: false },
      );
      if (r.exitCode !== 0) seen = null;
      else {
        const [status = "", root = "", dir = ""] = r.stdout.trim().split("\t");
        seen = { status, root: root === "<no value>" ? "" : root, dir: dir === "<no value>" ? "" : dir };
      }
    }
    if (seen === null) return { status: null, foreign: false };
    const ours = seen.root === this.root || (seen.root === "" && seen.dir === spec.dir);
    return ours ? { status: seen.status, foreign: false } : { status: null, foreign: true };
  }

  /** This state root's container status (null when absent or another root's). */
  async containerStatus(spec: SandboxSpec): Promise<string | null> {
    return (await this.ownContainer(spec)).status;
  }

  /** Makes upper/work (and an empty lower when the host dir is missing) in the sandbox dir; never touches the real dir. */
  private prepareOverlayDirs(p: OverlayPlan): void {
    if (!p.hostExists) mkdirSync(p.empty, { recursive: true, mode: 0o755 });
    const mode = statSync(p.lower).mode & 0o7777;
    mkdirSync(p.upper, { recursive: true });
    chmodSync(p.upper, mode);
    mkdirSync(p.work, { recursive: true, mode: 0o700 });
  }

  /**
   * A volume create of an existing name returns that volume unchanged (measured on 20.10, CLI and API), so no inspect
   * first. API: POST /volumes/create (engine socket); else runs: docker volume create --opt type=overlay …
   */
  private async ensureVolume(spec: SandboxSpec, p: OverlayPlan): Promise<void> {
    if (await this.apiPost("/volumes/create", overlayVolumeCreateBody(spec, p, this.root))) return;
    await this.exec.run(overlayVolumeCreateArgs(spec, p, this.root));
  }

  /**
   * POST <path> on the engine socket with a JSON body: true when the engine did it (2xx, or 304 "already so"), false
   * when the API cannot answer (then the caller runs the docker CLI). An engine that answers with an error throws it.
   */
  private async apiPost(path: string, body?: unknown): Promise<boolean> {
    const sock = this.opts.apiSocket;
    if (sock === undefined) return false;
    let r: { status: number; json: unknown };
    try {
      r = await engineJson(sock, "POST", path, body);
    } catch {
      return false;
    }
    if ((r.status >= 200 && r.status < 300) || r.status === 304) return true;
    throw new SbxError("exec_failed", `the Docker engine refused POST ${path.split("?")[0]} (HTTP ${r.status}): ${engineMessage(r.json)}`, {
      hint: "See `docker info` and the engine's log.",
    });
  }

  /**
   * A tar of $HOME's mount-point parents and ~/.claude.json, owned by the host user, extracted at / in the container.
   * API: PUT /containers/sbx-<id>/archive?path=/ (engine socket); else runs: docker cp - sbx-<id>:/
   */
  private async seed(spec: SandboxSpec, overlays: OverlayPlan[]): Promise<void> {
    const cj = join(spec.hostUser.home, ".claude.json");
    let claudeJson: Uint8Array | null = null;
    try {
      if (statSync(cj).isFile()) claudeJson = readFileSync(cj);
    } catch {
      claudeJson = null;
    }
    const tar = tarArchive(seedEntries(spec, mountTargets(spec, overlays), claudeJson, Math.floor(Date.now() / 1000)));
    if (await this.apiPutArchive(containerName(spec.id), tar)) return;
    await this.exec.run(["docker", "cp", "-", `${containerName(spec.id)}:/`], { stdin: tar });
  }

  /**
   * PUT /containers/<name>/archive?path=/ on the engine socket: what `docker cp - <name>:/` sends, without the CLI
   * process. False when the API cannot answer (then the CLI does it).
   */
  private async apiPutArchive(name: string, tar: Uint8Array): Promise<boolean> {
    const sock = this.opts.apiSocket;
    if (sock === undefined) return false;
    try {
      const res = await fetch(`http://docker/containers/${encodeURIComponent(name)}/archive?path=%2F&noOverwriteDirNonDir=true`, {
        method: "PUT",
        unix: sock,
        body: tar,
        headers: { "content-type": "application/x-tar" },
      } as RequestInit);
      await res.arrayBuffer();
      return res.ok;
    } catch {
      return false;
    }
  }

  /**
   * runs: docker volume create …, docker create …, docker cp - … sbx-<id>:/, docker start sbx-<id> (only what is
   * missing; each through the engine API when its socket answers)
   */
  async apply(spec: SandboxSpec): Promise<Change> {
    const { status } = await this.createIfMissing(spec);
    if (status === "running") return { changed: false };
    // A restarted container keeps its earlier runs' log, "listening" line included: only this run's lines count.
    const since = Date.now() / 1000;
    await this.startContainer(containerName(spec.id));
    await this.waitForwarder(spec, since);
    return { changed: true };
  }

  /**
   * Makes a missing container (and its overlay volumes) and seeds its home, without starting it: nothing runs in it
   * yet. The create runs it while the clone is made, the daemon while the sandbox's guards come up, so a start waits
   * for neither; apply starts it.
   * runs: docker volume create …, docker create …, docker cp - … (through the engine API when its socket answers)
   */
  async prepare(spec: SandboxSpec): Promise<void> {
    await this.createIfMissing(spec);
  }

  /**
   * The container's status before this call (null: it was missing and is made now, not started). A container that has
   * never run is seeded (mount points' parents owned by the user, ~/.claude.json) unless the sandbox dir's marker says
   * this container was: a create or seed cut short is finished by the next call.
   */
  private async createIfMissing(spec: SandboxSpec): Promise<{ status: string | null; overlays: OverlayPlan[] }> {
    const own = await this.ownContainer(spec);
    if (own.foreign) {
      throw new SbxError("conflict", `sandbox ${spec.name}: a container named ${containerName(spec.id)} belongs to another sbx state root`, {
        hint: "sbx never touches another state root's containers. Remove this sandbox (`sbx rm --force " + spec.name + "`) and create it again: new sandboxes get ids scoped to their state root.",
      });
    }
    const status = own.status;
    const overlays = this.overlayPlans(spec);
    const marker = sandboxLayout(spec.dir).seeded;
    if (status === null) {
      const image = this.image(spec);
      mkdirSync(spec.sockets.dir, { recursive: true, mode: 0o700 });
      if (!isDir(sandboxLayout(spec.dir).clone)) {
        throw new SbxError("internal", `sandbox ${spec.name}: its clone ${sandboxLayout(spec.dir).clone} is missing`, {
          hint: `Remove the sandbox with \`sbx rm --force ${spec.name}\` and create it again.`,
        });
      }
      rmSync(marker, { force: true }); // an earlier container's
      for (const p of overlays) this.prepareOverlayDirs(p);
      await Promise.all(overlays.map((p) => this.ensureVolume(spec, p)));
      writeShellProfiles(spec);
      await this.createContainer(dockerCreateArgs(spec, { image, overlays, command: containerCommand(spec), runtime: this.runtime(), root: this.root }));
    }
    // Before the first start, so nothing inside ever sees root-owned parents (the archive holds strict parents of
    // mount points only: before a start the engine writes through the mounts).
    if ((status === null || status === "created") && !existsSync(marker)) {
      await this.seed(spec, overlays);
      writeFileSync(marker, `${containerName(spec.id)}\n`);
    }
    return { status, overlays };
  }

  /**
   * The container argv describes, made through the Engine API when its socket answers (the same request, translated
   * by createRequestFromArgs: ≈30 ms less than a docker CLI process), else by running argv.
   * API: POST /containers/create?name=<name>; else runs: docker create … (dockerCreateArgs)
   */
  private async createContainer(argv: string[]): Promise<void> {
    const req = createRequestFromArgs(argv);
    if (await this.apiPost(`/containers/create?name=${encodeURIComponent(req.name)}`, req.body)) return;
    await this.exec.run(argv);
  }

  /** API: POST /containers/<name>/start (engine socket); else runs: docker start <name> */
  private async startContainer(name: string): Promise<void> {
    if (await this.apiPost(`/containers/${encodeURIComponent(name)}/start`)) return;
    await this.exec.run(["docker", "start", name]);
  }

  /** The container's log (stdout+stderr) and whether it still runs. runs: docker logs sbx-<id>; docker inspect … */
  private async logsAndState(name: string, since?: number): Promise<{ logs: string; running: boolean; exitCode: number }> {
    const sock = this.opts.apiSocket;
    if (sock !== undefined) {
      try {
        const [l, i] = await Promise.all([
          fetch(`http://docker${logsPath(name, since)}`, { unix: sock } as RequestInit),
          fetch(`http://docker/containers/${encodeURIComponent(name)}/json`, { unix: sock } as RequestInit),
        ]);
        if (l.ok && i.ok) {
          // The log stream is multiplexed (8-byte frame headers); the lines we look for are plain text inside it.
          const logs = new TextDecoder().decode(await l.arrayBuffer());
          const st = ((await i.json()) as { State?: { Running?: boolean; ExitCode?: number } }).State ?? {};
          return { logs, running: st.Running === true, exitCode: st.ExitCode ?? 0 };
        }
      } catch {
        /* fall back to the CLI */
      }
    }
    const l = await this.exec.run(["docker", "logs", ...(since === undefined ? [] : ["--since", sinceText(since)]), name], { check: false });
    const i = await this.exec.run(["docker", "inspect", "--type", "container", "--format", "{{.State.Running}} {{.State.ExitCode}}", name], { check: false });
    const [running = "false", code = "0"] = i.stdout.trim().split(" ");
    return { logs: `${l.stdout}${l.stderr}`, running: running === "true", exitCode: Number(code) };
  }

  /**
   * Waits until the forwarder (the container's long-lived process) says it listens (in the log written since `since`,
   * epoch seconds: a restarted container's log still holds its earlier runs). If the container exits instead,
   * the image cannot run it: most often a musl image (Alpine) that cannot run the host's glibc Bun. Never leaves a
   * sandbox that looks started but has no way to the proxy without saying why.
   */
  async waitForwarder(spec: SandboxSpec, since?: number): Promise<void> {
    const name = containerName(spec.id);
    const until = Date.now() + (this.opts.readyTimeoutMs ?? 10_000);
    // The log followed as it is written: the line is seen the moment it is (a poll sees it up to its interval later).
    // When the stream ends without it (the container exited), runs out of time or cannot be had, the poll below says why.
    if (await this.apiFollowLogsFor(name, FORWARDER_READY, until, since)) return;
    let delay = 5;
    for (;;) {
      const s = await this.logsAndState(name, since);
      if (s.logs.includes(FORWARDER_READY)) return;
      if (!s.running) {
        const tail = s.logs.replace(/[\x00-\x08\x0e-\x1f]/g, "").trim().split("\n").slice(-3).join(" | ");
        const image = String(spec.options.image ?? "the image");
        const musl = s.exitCode === 127 || /no such file or directory|not found|GLIBC|ld-linux|musl/i.test(tail);
        throw new SbxError(
          "config",
          musl
            ? `sandbox ${spec.name}: ${image} cannot run sbx's in-sandbox forwarder on the host's Bun (exit ${s.exitCode}${tail ? `: ${tail}` : ""}); the image is probably musl-based (Alpine) and Bun needs glibc`
            : `sandbox ${spec.name}: its forwarder exited at start (exit ${s.exitCode}${tail ? `: ${tail}` : ""})`,
          {
            hint: musl
              ? "Base the repo's Dockerfile on a glibc distribution (debian:bookworm-slim, ubuntu, fedora), then `sbx rm --force " + spec.name + "` and create it again. Without the forwarder the sandbox has no network at all."
              : `See \`docker logs ${name}\`; without the forwarder the sandbox has no network at all.`,
          },
        );
      }
      if (Date.now() > until) {
        throw new SbxError("unavailable", `sandbox ${spec.name}: its forwarder did not start listening within ${this.opts.readyTimeoutMs ?? 10_000} ms`, {
          hint: `See \`docker logs ${name}\`.`,
        });
      }
      await Bun.sleep(delay);
      delay = Math.min(delay * 2, 100);
    }
  }

  /**
   * Follows a container's log (GET /containers/<name>/logs?follow=1[&since=…] on the engine socket): true once `text`
   * appears; false when the log ends (the container stopped), `until` passes or the API cannot answer. The stream is
   * multiplexed (8-byte frame headers); a line written at once sits inside one frame.
   */
  private async apiFollowLogsFor(name: string, text: string, until: number, since?: number): Promise<boolean> {
    const sock = this.opts.apiSocket;
    if (sock === undefined) return false;
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), Math.max(0, until - Date.now()));
    try {
      const res = await fetch(`http://docker${logsPath(name, since)}&follow=1`, { unix: sock, signal: abort.signal } as RequestInit);
      if (!res.ok || res.body === null) return false;
      const decoder = new TextDecoder();
      let seen = "";
      for await (const chunk of res.body) {
        // Only the tail can hold the start of a text split across chunks.
        seen = seen.slice(-text.length) + decoder.decode(chunk, { stream: true });
        if (seen.includes(text)) return true;
      }
      return false;
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
      abort.abort(); // ends the follow when it returned early
    }
  }

  /** runs: docker stop --time 3 sbx-<id> */
  async stop(spec: SandboxSpec): Promise<Change> {
    const status = await this.containerStatus(spec);
    if (status !== "running" && status !== "restarting" && status !== "paused") return { changed: false };
    await this.exec.run(["docker", "stop", "--time", "3", containerName(spec.id)]);
    return { changed: true };
  }

  /** runs: docker rm --force sbx-<id>; docker volume rm <its volumes>; removes its overlay dirs */
  async remove(spec: SandboxSpec): Promise<Change> {
    let changed = false;
    if ((await this.containerStatus(spec)) !== null) {
      await this.exec.run(["docker", "rm", "--force", containerName(spec.id)]);
      changed = true;
    }
    for (const v of await this.volumesOf(spec.id)) {
      await this.exec.run(["docker", "volume", "rm", "--force", v]);
      changed = true;
    }
    if (await this.removeOverlayDirs(spec.dir, typeof spec.options.image === "string" ? spec.options.image : undefined)) changed = true;
    return { changed };
  }

  /** runs: docker volume ls --quiet --filter label=sbx.root=<hash> --filter label=sbx.sandbox=<id> */
  private async volumesOf(id: string): Promise<string[]> {
    const r = await this.exec.run(["docker", "volume", "ls", "--quiet", "--filter", `label=${LABEL.root}=${this.root}`, "--filter", `label=${LABEL.sandbox}=${id}`]);
    return r.stdout.split("\n").map((s) => s.trim()).filter(Boolean);
  }

  /**
   * Deletes `<dir>/overlay`. The kernel leaves each `work/work` root-owned with mode 000; when the host user
   * cannot delete it, a throwaway root container of the sandbox's image does.
   * runs: docker run --rm --network none --user 0:0 --mount type=bind,src=<dir>/overlay,dst=/sbx-overlay <image> rm -rf …
   */
  async removeOverlayDirs(dir: string, image?: string): Promise<boolean> {
    const root = sandboxLayout(dir).overlays;
    if (!existsSync(root)) return false;
    try {
      rmSync(root, { recursive: true, force: true });
      return true;
    } catch {
      /* root-owned work dirs: fall through */
    }
    const img = image ?? this.opts.fallbackImage;
    const candidates = img ? [img] : [];
    if (candidates.length === 0) {
      const r = await this.exec.run(["docker", "image", "ls", "--quiet", "--filter", "label=sbx.image=1"], { check: false });
      candidates.push(...r.stdout.split("\n").map((s) => s.trim()).filter(Boolean).slice(0, 1));
    }
    const targets = readdirSync(root).map((n) => `/sbx-overlay/${n}/work`);
    let lastErr: unknown = null;
    for (const c of candidates) {
      const r = await this.exec.run(
        [
          "docker", "run", "--rm", "--network", "none", "--user", "0:0",
          "--cap-drop", "ALL", "--cap-add", "DAC_OVERRIDE", "--cap-add", "DAC_READ_SEARCH", "--cap-add", "FOWNER",
          "--security-opt", "no-new-privileges",
          "--label", `${LABEL.role}=cleanup`,
          "--label", `${LABEL.root}=${this.root}`,
          "--mount", mountValue([["type", "bind"], ["src", root], ["dst", "/sbx-overlay"]]),
          "--entrypoint", "rm", c, "-rf", "--", ...targets,
        ],
        { check: false },
      );
      if (r.exitCode === 0) {
        rmSync(root, { recursive: true, force: true });
        return true;
      }
      lastErr = r.stderr.trim();
    }
    throw new SbxError("exec_failed", `could not delete ${root}: its overlay work dirs are root-owned${lastErr ? ` (${String(lastErr)})` : ""}`, {
      hint: `Delete it as root: sudo rm -rf '${root}'`,
    });
  }

  async inspect(spec: SandboxSpec): Promise<Observed> {
    const status = await this.containerStatus(spec);
    const phase: Phase = status === null ? "absent" : status === "running" ? "running" : "stopped";
    return {
      id: spec.id,
      name: spec.name,
      repo: spec.repo,
      phase,
      detail: status === null ? {} : { container: containerName(spec.id), status },
    };
  }

  /**
   * Every container and volume of THIS state root (label sbx.root=<hash>); another root's or user's are never seen.
   * API: GET /containers/json?all=1&filters=…, GET /volumes?filters=… (engine socket); else runs: docker ps --all
   * --filter label=sbx.root=<hash> --format …; docker volume ls --filter label=sbx.root=<hash> --format …
   */
  async found(): Promise<Found[]> {
    const fast = await this.apiFound();
    if (fast !== undefined) return fast;
    const fmt = (fields: string[]) => fields.join("\t");
    const lbl = (k: string) => `{{.Label "${k}"}}`;
    const c = await this.exec.run([
      "docker", "ps", "--all", "--no-trunc", "--filter", `label=${LABEL.root}=${this.root}`, "--filter", `label=${LABEL.sandbox}`,
      "--format", fmt(["{{.Names}}", lbl(LABEL.sandbox), lbl(LABEL.dir), lbl(LABEL.repo), lbl(LABEL.name), "{{.State}}", lbl(LABEL.role)]),
    ]);
    const v = await this.exec.run([
      "docker", "volume", "ls", "--filter", `label=${LABEL.root}=${this.root}`, "--filter", `label=${LABEL.sandbox}`,
      "--format", fmt(["{{.Name}}", lbl(LABEL.sandbox), lbl(LABEL.dir), lbl(LABEL.repo), lbl(LABEL.name)]),
    ]);
    const rows = (s: string) => s.split("\n").filter((l) => l.trim() !== "").map((l) => l.split("\t"));
    const out: Found[] = [];
    for (const [name = "", sandbox = "", dir = "", repo = "", sname = "", state = "", role = ""] of rows(c.stdout)) {
      if (role === "cleanup") continue;
      out.push({ kind: "container", name, sandbox, dir, repo, id: sname, state });
    }
    for (const [name = "", sandbox = "", dir = "", repo = "", sname = ""] of rows(v.stdout)) {
      out.push({ kind: "volume", name, sandbox, dir, repo, id: sname, state: "" });
    }
    return out;
  }

  private async apiFound(): Promise<Found[] | undefined> {
    const sock = this.opts.apiSocket;
    if (sock === undefined) return undefined;
    const filters = encodeURIComponent(JSON.stringify({ label: [`${LABEL.root}=${this.root}`, LABEL.sandbox] }));
    try {
      const [c, v] = await Promise.all([
        engineJson(sock, "GET", `/containers/json?all=1&filters=${filters}`),
        engineJson(sock, "GET", `/volumes?filters=${filters}`),
      ]);
      if (c.status !== 200 || v.status !== 200) return undefined;
      return foundFromApi(c.json, v.json);
    } catch {
      return undefined;
    }
  }

  async list(): Promise<Observed[]> {
    return (await this.found())
      .filter((f) => f.kind === "container")
      .map((f) => ({
        id: f.sandbox,
        name: f.id,
        repo: f.repo,
        phase: f.state === "running" ? "running" : "stopped",
        detail: { container: f.name, status: f.state, dir: f.dir },
      }));
  }

  private async removeFound(items: Found[], dryRun: boolean): Promise<string[]> {
    const removed: string[] = [];
    // Containers first: a volume in use cannot be removed.
    const ordered = [...items].sort((a, b) => (a.kind === b.kind ? 0 : a.kind === "container" ? -1 : 1));
    for (const f of ordered) {
      removed.push(`${f.kind} ${f.name} (sandbox ${f.id || "?"}, ${f.sandbox})`);
      if (dryRun) continue;
      if (f.kind === "container") await this.exec.run(["docker", "rm", "--force", f.name], { check: false });
      else await this.exec.run(["docker", "volume", "rm", "--force", f.name], { check: false });
    }
    return removed;
  }

  /** Removes this state root's containers and volumes whose sandbox id is not in `keep` (and their overlay dirs under this root). */
  async cleanup(keep: ReadonlySet<string>, opts: { dryRun?: boolean } = {}): Promise<CleanupReport> {
    const gone = (await this.found()).filter((f) => !keep.has(f.sandbox));
    const removed = await this.removeFound(gone, opts.dryRun === true);
    const dirs = new Map(gone.filter((f) => f.dir !== "").map((f) => [f.dir, f.sandbox]));
    for (const [dir, id] of dirs) {
      const ov = sandboxLayout(dir).overlays;
      if (!existsSync(ov)) continue;
      removed.push(`overlay dirs ${ov} (sandbox ${id})`);
      if (!opts.dryRun) await this.removeOverlayDirs(dir);
    }
    return { removed };
  }

  /** Removes labelled containers and volumes whose sandbox dir no longer exists (safe to run at any time). */
  async pruneOrphans(opts: { dryRun?: boolean } = {}): Promise<CleanupReport> {
    const orphans = (await this.found()).filter((f) => f.dir === "" || !existsSync(f.dir));
    return { removed: await this.removeFound(orphans, opts.dryRun === true) };
  }

  shellArgv(spec: SandboxSpec, req: ShellRequest & { stdin?: boolean }): string[] {
    const shell = typeof spec.options.shell === "string" && spec.options.shell !== "" ? spec.options.shell : "/bin/sh";
    return dockerExecArgs(spec, req, shell);
  }

  /**
   * The shell a session gets: fish when the host user's shell is fish, else that shell when the image has it,
   * else bash, else sh.
   * API: HEAD /containers/sbx-<id>/archive?path=<candidate> (engine socket); else runs: docker exec sbx-<id> ls -d -- <candidates…>
   */
  async resolveShell(spec: SandboxSpec): Promise<string> {
    const host = spec.hostUser.shell;
    const base = host.split("/").pop() ?? "";
    const candidates = [
      ...(base === "fish" ? [host, "/usr/bin/fish", "/bin/fish", "/usr/local/bin/fish"] : host ? [host] : []),
      "/bin/bash", "/usr/bin/bash", "/bin/sh",
    ].filter((c, i, a) => c.startsWith("/") && a.indexOf(c) === i);
    const fast = await this.apiPathsExist(containerName(spec.id), candidates);
    if (fast !== undefined) return candidates.find((c) => fast.has(c)) ?? "/bin/sh";
    const r = await this.exec.run(
      ["docker", "exec", "--user", `${spec.hostUser.uid}:${spec.hostUser.gid}`, containerName(spec.id), "ls", "-d", "--", ...candidates],
      { check: false },
    );
    const present = new Set(r.stdout.split("\n").map((s) => s.trim()));
    return candidates.find((c) => present.has(c)) ?? "/bin/sh";
  }

  /**
   * Which of these paths exist in a container, by HEAD /containers/<name>/archive?path=… on the engine socket (a stat,
   * no process started: ≈80 ms less than a `docker exec ls`). Undefined when the API cannot answer.
   */
  private async apiPathsExist(name: string, paths: readonly string[]): Promise<Set<string> | undefined> {
    const sock = this.opts.apiSocket;
    if (sock === undefined) return undefined;
    try {
      const codes = await Promise.all(
        paths.map(async (p) => {
          const res = await fetch(`http://docker/containers/${encodeURIComponent(name)}/archive?path=${encodeURIComponent(p)}`, { method: "HEAD", unix: sock } as RequestInit);
          return [p, res.status] as const;
        }),
      );
      if (codes.some(([, c]) => c !== 200 && c !== 404)) return undefined;
      return new Set(codes.filter(([, c]) => c === 200).map(([p]) => p));
    } catch {
      return undefined;
    }
  }
}
