// Apply half of the Docker backend: converges containers and overlay volumes to a SandboxSpec, finds its own by label.
// whole: the apply half read top to bottom, from spec to running container (issue 41/42 tipped it over 600 by a few lines).
import { trace } from "../../sys/trace";
import { appendFileSync, chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { claudeJsonView } from "../../core/claude-json";
import { CopyIn, findingLines, type Scanned } from "../../secrets/copy-in";
import { fillClaudeView } from "./claude-view";
import { SbxError } from "../../core/errors";
import type { Exec } from "../../sys/exec";
import type { Backend } from "../backend";
import type { Change, CleanupReport, DockerOptions, Observed, Phase, SandboxSpec, ShellRequest } from "../../core/spec";
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
  homeFileEntries, homeFilePath,
  fishProfileSnippet,
  shProfileSnippet,
  type OverlayPlan,
  type RuntimeSources,
} from "./args";
import { DockerEngine, type Engine, type Found } from "./engine-client";
import { engineSocket } from "./engine-exec";
import { ensureMainBundle } from "./main-bundle";
import { firstTarEntry, tarArchive, type TarEntry } from "../../core/tar";
import { identityFiles } from "./passwd";
import { serviceStatusOf, type ServiceStatus } from "../../core/services";

export interface DockerBackendOptions {
  /**
   * The state root's sandbox dir (paths.sandboxRoot). Everything this backend makes is labelled `sbx.root=<sha256 of it>`,
   * and list, cleanup and prune only ever see (and touch) containers and volumes with that label: another user's or
   * another state root's sandboxes on a shared engine are invisible to it.
   */
  sandboxRoot: string;
  /** Host paths of the Bun binary and shims dir mounted read-only into every sandbox (default: this process's Bun, this checkout's shims/). */
  runtime?: RuntimeSources;
  /**
   * The host's secrets by name, read when a container is made (llm/keys.ts hostSecretsByName): the copy-in scan looks
   * for each in every form. Unset: the driver gives its own (useHostSecrets); until then only secret shapes are found.
   */
  hostSecrets?: () => Readonly<Record<string, string>>;
  /** The host's agent cache (src/agents/cache.ts), mounted read-only into every new container; unset: none. */
  agentsDir?: string;
  /** Where sandbox-main is built into one file (main-bundle.ts), mounted read-only; unset: the container runs the .ts. */
  mainDir?: string;
  /** How long to wait for the in-sandbox forwarder to listen after a start (default 10 s). */
  readyTimeoutMs?: number;
  /** Image used to delete root-owned overlay `work/` dirs when the sandbox's own image is gone. */
  fallbackImage?: string;
  /**
   * The engine's unix socket, for read-only status queries over its HTTP API (a few ms instead of a CLI spawn on every
   * attach). Unset: every query goes through the docker CLI.
   */
  apiSocket?: string;
  /** The engine (default: DockerEngine over apiSocket and the docker CLI; tests give an in-memory one). */
  engine?: Engine;
}

export { engineSocket };

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
  // Empty too: what the host objects' list of alternates (the sandboxes' stores) shows inside.
  if (!existsSync(lay.alternatesMask)) writeFileSync(lay.alternatesMask, "", { mode: 0o444 });
  chmodSync(lay.alternatesMask, 0o444);
}

/**
 * The host objects' `info/alternates` exists (empty when the repo has none): the mask is mounted over it, and a mount
 * point inside a read-only mount cannot be made. Opened for append, so a list that is there stays as it is.
 */
export function ensureAlternatesFile(repo: string): void {
  const info = join(repo, ".git", "objects", "info");
  mkdirSync(info, { recursive: true });
  appendFileSync(join(info, "alternates"), "");
}

/** A Docker sandbox's own options; a spec of another kind handed to this backend is a bug, said at once. */
export function dockerOptions(spec: SandboxSpec): DockerOptions {
  if (spec.options.driver !== "docker") {
    throw new SbxError("internal", `sandbox ${spec.name}: a ${spec.options.driver} spec reached the Docker backend`, { hint: "This is a bug in sbx; please report it." });
  }
  return spec.options;
}

export class DockerBackend implements Backend {
  readonly kind = "docker" as const;
  /** The `sbx.root` label value of this state root. */
  readonly root: string;
  /** Every call to the engine goes through here. */
  readonly engine: Engine;
  private runtimeCache: RuntimeSources | undefined;
  /** The built sandbox-main's dir, made (or found current) once per daemon: the forwarder matches the daemon's code. */
  private mainBundle: Promise<string | undefined> | undefined;
  private hostSecretsOf: (() => Readonly<Record<string, string>>) | undefined;
  /** What each sandbox's last container build removed or left out, until the driver tells the person (takeNotes). */
  private readonly notes = new Map<string, string[]>();
  /**
   * Text files of images read before, by image id and path (an id is a hash of the image's content, so the answer never
   * changes): the engine's archive GET of a created container mounts its whole file system, which cost 0.5 s of each
   * create here, for /etc/passwd and /etc/group that are the same for every sandbox of an image.
   */
  private readonly imageFiles = new Map<string, string | null | undefined>();
  constructor(
    exec: Exec,
    private readonly opts: DockerBackendOptions,
  ) {
    this.root = rootLabel(opts.sandboxRoot);
    this.runtimeCache = opts.runtime;
    this.engine = opts.engine ?? new DockerEngine(exec, opts.apiSocket);
    this.hostSecretsOf = opts.hostSecrets;
  }

  /** Where the copy-in scan reads the host's secrets, unless the backend was given its own. */
  useHostSecrets(f: () => Readonly<Record<string, string>>): void {
    this.hostSecretsOf ??= f;
  }

  /** What the last container builds of this sandbox removed from what they copied in, or left out; said once. */
  takeNotes(id: string): string[] {
    const n = this.notes.get(id) ?? [];
    this.notes.delete(id);
    return n;
  }

  /** The door for one build: the host's secrets as they are now; with --expose-credentials, hits are said and kept. */
  private copyIn(spec: SandboxSpec): CopyIn {
    let values: Readonly<Record<string, string>> = {};
    try {
      values = this.hostSecretsOf?.() ?? {};
    } catch {
      /* unreadable secrets: shapes are still found */
    }
    return new CopyIn(values, { home: spec.hostUser.home, keep: dockerOptions(spec).exposeCredentials === true });
  }

  /** Keeps what a build's CopyIn found (and what its views left out) for the person, bounded. */
  private note(spec: SandboxSpec, c: CopyIn, skipped: readonly string[] = []): void {
    const out = this.notes.get(spec.id) ?? [];
    const lines = findingLines(c.findings, c.count);
    if (lines.length > 0) {
      out.push(
        c.keeps
          ? `warning: --expose-credentials: the agent in ${spec.name} can read what holds a secret: ${lines.join("; ")}`
          : `note: sbx left out of ${spec.name} what held a secret (the rest was copied in): ${lines.join("; ")}`,
      );
    }
    if (skipped.length > 0) out.push(`note: not in ${spec.name}'s view of your files: ${skipped.slice(0, 6).join("; ")}${skipped.length > 6 ? `; and ${skipped.length - 6} more` : ""}`);
    if (out.length > 0) this.notes.set(spec.id, out.slice(-8));
  }

  /** The engine's unix socket for API calls, when there is one. */
  get apiSocket(): string | undefined {
    return this.opts.apiSocket;
  }

  private runtime(): RuntimeSources {
    this.runtimeCache ??= defaultRuntime();
    if (this.opts.agentsDir !== undefined && this.runtimeCache.agents === undefined) this.runtimeCache = { ...this.runtimeCache, agents: this.opts.agentsDir };
    return this.runtimeCache;
  }

  /** runtime() with the built sandbox-main's dir when there is one (a failed build: the .ts, as before). */
  private async runtimeWithMain(): Promise<RuntimeSources> {
    const r = this.runtime();
    if (r.main !== undefined || this.opts.mainDir === undefined) return r;
    const mainDir = this.opts.mainDir;
    this.mainBundle ??= ensureMainBundle(r.shims, mainDir);
    const main = await this.mainBundle;
    return main === undefined ? r : { ...r, main };
  }

  private image(spec: SandboxSpec): string {
    const image = dockerOptions(spec).image;
    if (typeof image !== "string" || image === "") {
      throw new SbxError("internal", `sandbox ${spec.name}: no image in its spec`, { hint: "This is a bug in sbx; please report it." });
    }
    return image;
  }

  /** Pure: the overlay plans for a spec; each one's lower dir is the view sbx builds of the host dir. */
  overlayPlans(spec: SandboxSpec): OverlayPlan[] {
    return [...new Set(spec.overlays)].map((t) => overlayPlan(spec, t));
  }

  /**
   * Builds every overlay's view afresh through `c` (each new container: what the host has now, scanned now): of
   * ~/.claude what a sandbox of this repo may see (claude-view.ts), of any other dir all of it. What was removed, and
   * what was left out, is kept for the person.
   */
  private buildViews(spec: SandboxSpec, overlays: readonly OverlayPlan[], c: CopyIn): Scanned<string>[] {
    const claude = join(spec.hostUser.home, ".claude");
    const skipped: string[] = [];
    const views: Scanned<string>[] = [];
    for (const p of overlays) {
      const r = p.target === claude ? fillClaudeView(c, p.target, p.lower, spec.repo, { login: dockerOptions(spec).claudeAuth === "overlay" }) : c.view(p.target, p.lower);
      skipped.push(...r.skipped);
      views.push(r.view);
    }
    this.note(spec, c, skipped);
    return views;
  }

  /**
   * The container's status, or null when there is none of THIS state root: a container of that name that another
   * root made (its sbx.root label differs; an unlabelled one whose sbx.dir is not this sandbox's dir) is never ours to
   * start, stop or remove. `foreign` says one is in the way.
   * (engine: seen)
   */
  async ownContainer(spec: SandboxSpec): Promise<{ status: string | null; foreign: boolean }> {
    const seen = await this.engine.seen(containerName(spec.id));
    if (seen === null) return { status: null, foreign: false };
    const ours = seen.root === this.root || (seen.root === "" && seen.dir === spec.dir);
    return ours ? { status: seen.status, foreign: false } : { status: null, foreign: true };
  }

  /** This state root's container status (null when absent or another root's). */
  async containerStatus(spec: SandboxSpec): Promise<string | null> {
    return (await this.ownContainer(spec)).status;
  }

  /** Makes upper/work beside the overlay's view (its lower dir, built first); never touches the host's dir. */
  private prepareOverlayDirs(p: OverlayPlan, _view: Scanned<string>): void {
    const mode = statSync(p.lower).mode & 0o7777;
    mkdirSync(p.upper, { recursive: true });
    chmodSync(p.upper, mode);
    mkdirSync(p.work, { recursive: true, mode: 0o700 });
  }

  /**
   * A volume create of an existing name returns that volume unchanged (measured on 20.10, CLI and API), so no inspect
   * first. API: POST /volumes/create (engine socket); else runs: docker volume create --opt type=overlay …
   */
  private async ensureVolume(spec: SandboxSpec, p: OverlayPlan, _view: Scanned<string>): Promise<void> {
    await this.engine.createVolume({ argv: overlayVolumeCreateArgs(spec, p, this.root), body: overlayVolumeCreateBody(spec, p, this.root) });
  }

  /**
   * A tar of $HOME's mount-point parents and ~/.claude.json, owned by the host user, extracted at / in the container;
   * every entry through the copy-in door `c` (the upload takes only what it scanned).
   * API: PUT /containers/sbx-<id>/archive?path=/ (engine socket); else runs: docker cp - sbx-<id>:/
   */
  private async seed(spec: SandboxSpec, overlays: OverlayPlan[], c: CopyIn): Promise<void> {
    const cj = join(spec.hostUser.home, ".claude.json");
    let claudeJson: Uint8Array | null = null;
    try {
      // Never verbatim: keys, key fingerprints, MCP servers' credentials and other projects' history stay on the host;
      // what is left is scanned field by field.
      const file = c.show(cj);
      const kept = statSync(cj).isFile() ? claudeJsonView(readFileSync(cj, "utf8"), spec.repo, (field, what) => c.report({ file, field, what })) : null;
      if (kept !== null) claudeJson = new TextEncoder().encode(`${JSON.stringify(c.json(file, kept), null, 2)}\n`);
    } catch {
      claudeJson = null;
    }
    const now = Math.floor(Date.now() / 1000);
    const name = containerName(spec.id);
    // The image's passwd and group, made to know the host user (an image that never heard of its uid works too).
    const image = await this.engine.imageOf(name);
    const [passwd, group] = await Promise.all(["/etc/passwd", "/etc/group"].map((p) => this.imageText(name, p, image)));
    const fix = identityFiles(passwd ?? null, group ?? null, spec.hostUser);
    const etc: TarEntry[] = [];
    // undefined: the image has it, but not as a file sbx can read (a link, too large): left as it is.
    if (fix.passwd !== null && passwd !== undefined) etc.push({ path: "etc/passwd", type: "file", mode: 0o644, uid: 0, gid: 0, content: new TextEncoder().encode(fix.passwd), mtime: now });
    if (fix.group !== null && group !== undefined) etc.push({ path: "etc/group", type: "file", mode: 0o644, uid: 0, gid: 0, content: new TextEncoder().encode(fix.group), mtime: now });
    // What only a file carries (cargo's mirror config), where the image has none of its own; one it has is kept, said.
    const has = new Set<string>();
    for (const f of dockerOptions(spec).homeFiles ?? []) if ((await this.imageText(name, homeFilePath(spec, f.path), image)) !== null) has.add(f.path);
    const home = homeFileEntries(spec, has, now);
    this.notes.set(spec.id, [...(this.notes.get(spec.id) ?? []), ...home.kept.map((k) => `note: the image has its own ~/${k}: the host's package mirror setting for it was not written`)].slice(-8));
    const tar = c.tar([...etc, ...seedEntries(spec, mountTargets(spec, overlays), claudeJson, now), ...home.entries], (p) => c.show(`/${p}`));
    trace("d container seed written");
    await this.engine.putArchive(name, tar);
  }

  /**
   * A text file of a created container's image (`image`: its id, "" when unknown): its content, null when there is none,
   * undefined when it is not a readable file. Read once per image id and path (imageFiles).
   */
  private async imageText(name: string, path: string, image: string): Promise<string | null | undefined> {
    const key = `${image}\0${path}`;
    if (image !== "" && this.imageFiles.has(key)) return this.imageFiles.get(key);
    let tar: Uint8Array | null;
    try {
      tar = await this.engine.getArchive(name, path);
    } catch {
      return undefined; // the engine could not say: the image's file is left as it is (and asked again next time)
    }
    const e = tar === null ? null : firstTarEntry(tar);
    const text = tar === null ? null : e?.type === "file" ? new TextDecoder().decode(e.content) : undefined;
    if (image !== "") {
      // A few images' worth (each at most the engine's answer for a file; passwd and group are a few KiB).
      if (this.imageFiles.size >= 64) this.imageFiles.delete(this.imageFiles.keys().next().value!);
      this.imageFiles.set(key, text);
    }
    return text;
  }

  /**
   * runs: docker volume create …, docker create …, docker cp - … sbx-<id>:/, docker start sbx-<id> (only what is
   * missing; each through the engine API when its socket answers). `own`: the container as the caller just saw it
   * (ownContainer, under the sandbox's lock), so it is not asked again.
   */
  async apply(spec: SandboxSpec, own?: { status: string | null; foreign: boolean }): Promise<Change> {
    const { status } = await this.createIfMissing(spec, undefined, own);
    if (status === "running") return { changed: false };
    // A restarted container keeps its earlier runs' log, "listening" line included: only this run's lines count.
    const since = Date.now() / 1000;
    await this.engine.start(containerName(spec.id));
    trace("d docker engine started");
    await this.waitForwarder(spec, since);
    trace("d docker forwarder ready");
    return { changed: true };
  }

  /**
   * Makes a missing container (and its overlay volumes) and seeds its home, without starting it: nothing runs in it
   * yet. The create runs it while the clone is made, the daemon while the sandbox's guards come up, so a start waits
   * for neither; apply starts it.
   * runs: docker volume create …, docker create …, docker cp - … (through the engine API when its socket answers)
   */
  async prepare(spec: SandboxSpec, image?: Promise<string>): Promise<void> {
    await this.createIfMissing(spec, image);
  }

  /**
   * The container's status before this call (null: it was missing and is made now, not started). A container that has
   * never run is seeded (mount points' parents owned by the user, ~/.claude.json) unless the sandbox dir's marker says
   * this container was: a create or seed cut short is finished by the next call. `image`: the image's tag while it is
   * still being checked (the spec then has none): the container's volumes are made meanwhile, the container once it is.
   */
  private async createIfMissing(spec: SandboxSpec, imageLater?: Promise<string>, seen?: { status: string | null; foreign: boolean }): Promise<{ status: string | null; overlays: OverlayPlan[] }> {
    const own = seen ?? (await this.ownContainer(spec));
    if (own.foreign) {
      throw new SbxError("conflict", `sandbox ${spec.name}: a container named ${containerName(spec.id)} belongs to another sbx state root`, {
        hint: "sbx never touches another state root's containers. Remove this sandbox (`sbx rm --force " + spec.name + "`) and create it again: new sandboxes get ids scoped to their state root.",
      });
    }
    const status = own.status;
    const overlays = this.overlayPlans(spec);
    const marker = sandboxLayout(spec.dir).seeded;
    const copyIn = this.copyIn(spec);
    if (status === null) {
      mkdirSync(spec.sockets.dir, { recursive: true, mode: 0o700 });
      if (!isDir(sandboxLayout(spec.dir).clone)) {
        throw new SbxError("internal", `sandbox ${spec.name}: its clone ${sandboxLayout(spec.dir).clone} is missing`, {
          hint: `Remove the sandbox with \`sbx rm --force ${spec.name}\` and create it again.`,
        });
      }
      rmSync(marker, { force: true }); // an earlier container's
      // Fresh views for each new container: what the host has now, of what a sandbox may see, scanned now.
      const views = this.buildViews(spec, overlays, copyIn);
      overlays.forEach((p, i) => this.prepareOverlayDirs(p, views[i]!));
      trace("d container views");
      await Promise.all(overlays.map((p, i) => this.ensureVolume(spec, p, views[i]!)));
      trace("d container volumes");
      writeShellProfiles(spec);
      ensureAlternatesFile(spec.repo);
      const runtime = await this.runtimeWithMain();
      // The mount's source must exist; agents installed later appear in it without a new container.
      if (runtime.agents) mkdirSync(join(runtime.agents, "bin"), { recursive: true, mode: 0o755 });
      // The environment is copied in too: a value that holds a host secret (in any form) is left out.
      const env = copyIn.env("the sandbox's environment", spec.env);
      const image = imageLater ? await imageLater : this.image(spec);
      trace("d container create");
      await this.engine.createContainer(dockerCreateArgs({ ...spec, env }, { image, overlays, command: containerCommand(spec, runtime.main !== undefined), runtime, root: this.root }));
    }
    // Before the first start, so nothing inside ever sees root-owned parents (the archive holds strict parents of
    // mount points only: before a start the engine writes through the mounts).
    if ((status === null || status === "created") && !existsSync(marker)) {
      trace("d container made");
      await this.seed(spec, overlays, copyIn);
      trace("d container seeded");
      writeFileSync(marker, `${containerName(spec.id)}\n`);
    }
    this.note(spec, copyIn);
    return { status, overlays };
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
    if (await this.engine.followLogsFor(name, FORWARDER_READY, until, since)) return;
    let delay = 5;
    for (;;) {
      const s = await this.engine.logsAndState(name, since);
      if (s.logs.includes(FORWARDER_READY)) return;
      if (!s.running) {
        const tail = s.logs.replace(/[\x00-\x08\x0e-\x1f]/g, "").trim().split("\n").slice(-3).join(" | ");
        const image = dockerOptions(spec).image ?? "the image";
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

  /** runs: docker stop --time 3 sbx-<id> */
  async stop(spec: SandboxSpec): Promise<Change> {
    const status = await this.containerStatus(spec);
    if (status !== "running" && status !== "restarting" && status !== "paused") return { changed: false };
    await this.engine.stop(containerName(spec.id), 3);
    return { changed: true };
  }

  /** The container only (its volumes and overlay dirs, the home's changes, stay): the next start makes it anew. runs: docker rm --force sbx-<id> */
  async removeContainer(spec: SandboxSpec): Promise<Change> {
    if ((await this.containerStatus(spec)) === null) return { changed: false };
    await this.engine.removeContainer(containerName(spec.id));
    return { changed: true };
  }

  /** runs: docker rm --force sbx-<id>; docker volume rm <its volumes>; removes its overlay dirs */
  async remove(spec: SandboxSpec): Promise<Change> {
    let changed = false;
    if ((await this.containerStatus(spec)) !== null) {
      await this.engine.removeContainer(containerName(spec.id));
      changed = true;
    }
    for (const v of await this.engine.volumes([`${LABEL.root}=${this.root}`, `${LABEL.sandbox}=${spec.id}`])) {
      await this.engine.removeVolume(v);
      changed = true;
    }
    if (await this.removeOverlayDirs(spec.dir, dockerOptions(spec).image)) changed = true;
    return { changed };
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
      candidates.push(...(await this.engine.imagesLabelled("sbx.image=1")).slice(0, 1));
    }
    const targets = readdirSync(root).map((n) => `/sbx-overlay/${n}/work`);
    let lastErr: unknown = null;
    for (const c of candidates) {
      const r = await this.engine.runToEnd(
        [
          "docker", "run", "--rm", "--network", "none", "--user", "0:0",
          "--cap-drop", "ALL", "--cap-add", "DAC_OVERRIDE", "--cap-add", "DAC_READ_SEARCH", "--cap-add", "FOWNER",
          "--security-opt", "no-new-privileges",
          "--label", `${LABEL.role}=cleanup`,
          "--label", `${LABEL.root}=${this.root}`,
          "--mount", mountValue([["type", "bind"], ["src", root], ["dst", "/sbx-overlay"]]),
          "--entrypoint", "rm", c, "-rf", "--", ...targets,
        ],
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
    return this.observed(spec, await this.ownContainer(spec));
  }

  /** Pure: what `own` (ownContainer's answer) says of the sandbox. */
  observed(spec: SandboxSpec, own: { status: string | null }): Observed {
    const status = own.status;
    const phase: Phase = status === null ? "absent" : status === "running" ? "running" : "stopped";
    return {
      id: spec.id,
      name: spec.name,
      repo: spec.repo,
      phase,
      detail: status === null ? {} : { container: containerName(spec.id), status },
    };
  }

  /** Every container and volume of THIS state root (label sbx.root=<hash>); another root's or user's are never seen. */
  async found(): Promise<Found[]> {
    return this.engine.found(this.root);
  }

  async list(): Promise<Observed[]> {
    const found = await this.found();
    // Its services' containers carry the sandbox's labels too, with the role `service`: said beside their sandbox.
    const services = new Map<string, ServiceStatus[]>();
    for (const f of found) {
      if (f.kind !== "container" || f.role !== "service") continue;
      const list = services.get(f.sandbox) ?? [];
      list.push(serviceStatusOf(f.service || f.name, f.state, f.status ?? ""));
      services.set(f.sandbox, list);
    }
    return found
      .filter((f) => f.kind === "container" && f.role !== "service")
      .map((f) => {
        const svcs = services.get(f.sandbox)?.sort((a, b) => a.name.localeCompare(b.name));
        return {
          id: f.sandbox,
          name: f.id,
          repo: f.repo,
          phase: f.state === "running" ? "running" : "stopped",
          detail: { container: f.name, status: f.state, dir: f.dir },
          ...(svcs ? { services: svcs } : {}),
        };
      });
  }

  private async removeFound(items: Found[], dryRun: boolean): Promise<string[]> {
    const removed: string[] = [];
    // Containers first: a volume in use cannot be removed.
    const ordered = [...items].sort((a, b) => (a.kind === b.kind ? 0 : a.kind === "container" ? -1 : 1));
    for (const f of ordered) {
      removed.push(`${f.kind} ${f.name} (sandbox ${f.id || "?"}, ${f.sandbox})`);
      if (dryRun) continue;
      // Best effort, each on its own: one that is gone or busy does not stop the others.
      if (f.kind === "container") await this.engine.removeContainer(f.name).catch(() => undefined);
      else await this.engine.removeVolume(f.name).catch(() => undefined);
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
    const shell = dockerOptions(spec).shell || "/bin/sh";
    return dockerExecArgs(spec, req, shell);
  }

  /**
   * The shell a session gets: fish when the host user's shell is fish, else that shell when the image has it,
   * else bash, else sh (engine.pathsExist: a stat through the API, or `docker exec … ls -d`).
   */
  async resolveShell(spec: SandboxSpec): Promise<string> {
    const host = spec.hostUser.shell;
    const base = host.split("/").pop() ?? "";
    const candidates = [
      ...(base === "fish" ? [host, "/usr/bin/fish", "/bin/fish", "/usr/local/bin/fish"] : host ? [host] : []),
      "/bin/bash", "/usr/bin/bash", "/bin/sh",
    ].filter((c, i, a) => c.startsWith("/") && a.indexOf(c) === i);
    const present = await this.engine.pathsExist(containerName(spec.id), candidates, spec.hostUser);
    return candidates.find((c) => present.has(c)) ?? "/bin/sh";
  }
}
