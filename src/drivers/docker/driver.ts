// The Docker driver: a container per sandbox, the clone made on the host, the image from its source (image-source.ts).
import { trace } from "../../sys/trace";
import { existsSync } from "node:fs";
import { basename, join } from "node:path";
import { z } from "zod";
import type { Change, CleanupReport, DockerOptions, HostUser, Observed, SandboxSpec, ShellRequest } from "../../core/spec";
import { DockerBackend, dockerOptions, engineSocket } from "./docker";
import { EngineCheck } from "./engine";
import { dockerfileNow, ensureImage, planImage } from "./image";
import type { ContextChanges } from "./build-context";
import type { BuildProxyLease } from "../../sys/build-relay";
import { CopyIn, findingLines } from "../../secrets/copy-in";
import { changedWorkingFiles } from "../../workspace/changes";
import { describeSource, planImageSource } from "./image-source";
import { ImageSourceSchema, type ImageSource } from "../../core/image-source";
import { hostKeySources, hostSecretsByName, knownSecretValues } from "../../llm/keys";
import { SbxError } from "../../core/errors";
import type { Sandbox } from "../../core/schemas";
import { containerName, oneShotGitArgs, PLAIN_PATH, RUNTIME_MOUNT, SANDBOX_PATH, SOCKET_MOUNT } from "./args";
import { sessionHangupScript } from "./start-line";
import { DEFAULT_FORWARDER_PORT } from "../../core/egress";
import { LimitsSchema, sandboxSpec } from "../identity";
import { countersOfPid } from "../../sys/cgroup";
import type { LimitCounters } from "../../core/limits";
import type { Env } from "../../sys/env";
import { selfUser } from "../../sys/host-user";
import type { Exec } from "../../sys/exec";
import { sha256Hex, type Paths } from "../../sys/paths";
import { createClone, sessionCwd } from "../../workspace/clone";
import { sandboxLayout } from "../../workspace/layout";
import type { AgentPlace, AgentRun, BridgePlace, Driver, DriverCaps, DriverReport, NewSandbox, RefSyncPlan, SandboxServices, SessionSet, WatchContext, Watcher } from "../driver";
import { watchServices } from "./service-watch";
import { claudeAuthFor, overlaysFor } from "./host-views";
import { requireServiceBuild, serviceImage, type BuildOutput } from "./service-images";
import { DockerServices } from "./services";
import { combineServices, ServiceSpecSchema, type ServiceSpec } from "../../core/services";
import { mirrorDelivery, MirrorsSchema } from "../../core/mirrors";
import { SANDBOX_GIT_SAFE, type SandboxGit, type SandboxGitMode } from "../../sync/sandbox-git";

/** What sbx keeps in a sandbox row's `identity` column for the Docker backend. */
export const DockerIdentitySchema = z.object({
  id: z.string(),
  dir: z.string(),
  overlays: z.array(z.string()).default([]),
  image: z.string().optional(),
  shell: z.string().optional(),
  /** The creating user's $SHELL: the shell preference is the creator's, not the daemon's environment's. */
  hostShell: z.string().optional(),
  /** How the host's Claude login reaches the sandbox (absent on sandboxes made before the choice existed: overlay). */
  claudeAuth: z.enum(["inject", "overlay"]).optional(),
  /** The config file's `env:` at create time (a container's environment is fixed when it is created). */
  userEnv: z.record(z.string(), z.string()).optional(),
  /** Memory, CPUs and processes (decided by the service at create; absent on sandboxes made before limits). */
  limits: LimitsSchema.optional(),
  /** Where its image comes from (absent on sandboxes made before image sources: the repo's Dockerfile). */
  source: ImageSourceSchema.optional(),
  /** Forwards from the host's 127.0.0.1 (`sbx port`, `--port`, devcontainer forwardPorts): kept here, run by the daemon's ports guard. */
  ports: z.array(z.object({ port: z.number().int(), host: z.number().int() })).optional(),
  /** sha256 of the Dockerfile its image was built from (absent: an --image, or built before sbx kept it). */
  imageDockerfile: z.string().optional(),
  /** devcontainer.json's postCreateCommand, run once after the create (argv each); cleared once it has run. */
  postCreate: z.array(z.array(z.string())).optional(),
  /** The transparent path (a DNS stub, 80/443 carried to the proxy); absent on sandboxes made before it: off. */
  transparent: z.boolean().optional(),
  /** `--expose-credentials` at create: each new container's views keep what the copy-in scan finds, said as warnings. */
  exposeCredentials: z.boolean().optional(),
  /**
   * `--service`, devcontainer compose: containers in its network namespace (services.ts), started with it, removed
   * with it. A built one's `image` is the tag sbx built it as (built again from its Dockerfile when that is gone).
   */
  services: z.array(ServiceSpecSchema).optional(),
  /** The host's package mirrors at create (sandboxes/mirrors.ts): cargo's is a file in the home, the rest the sessions'. */
  mirrors: MirrorsSchema.optional(),
});
export type DockerIdentity = z.infer<typeof DockerIdentitySchema>;

export interface DockerDriverDeps {
  exec: Exec;
  env: Env;
  paths: Paths;
  /** The backend (default: one on the engine DOCKER_HOST names, scoped to this state root). */
  backend?: DockerBackend;
  /** Engine check seam (tests with a fake executor skip it). */
  checkEngine?: (exec: Exec) => Promise<void>;
  /**
   * The host's parent proxy for one image build (build args, notes; a per-build relay on `gateway`, the engine's
   * bridge gateway, when the parent wants a login or is on loopback), asked at each build and released when it ends.
   */
  buildProxy?: (gateway: () => Promise<string | null>) => Promise<BuildProxyLease>;
  /** Where the cgroup filesystems and /proc are (tests give a tree of their own). */
  cgroupRoot?: string;
  procRoot?: string;
}

/**
 * A container: its forwarder inside hands its loopback listener (and the transparent path's 0.0.0.0 listeners) to the
 * proxy; its exec agent runs commands, ref sync's git and port forwards; the CLI stages its clone ahead.
 */
export const DOCKER_CAPS: DriverCaps = {
  proxyPort: "forwarder",
  handsOverListener: true,
  transparent: "listeners",
  execAgent: true,
  portForwards: true,
  stagesClone: true,
  seedsHome: true,
};

/** How long a hang-up of sessions may hold the daemon (it runs inside the sandbox, on the sandbox's CPU). */
const HANGUP_WAIT_MS = 3000;

export class DockerDriver implements Driver {
  readonly kind = "docker" as const;
  readonly caps = DOCKER_CAPS;
  /** This driver's own: how it converges the engine (tests reach the engine through it). */
  readonly backend: DockerBackend;
  /** Its sandboxes' services (`--service`, devcontainer compose) as `sbx services` reaches them. */
  readonly services: SandboxServices;
  /** The same on the engine: made, started, stopped and removed with their sandbox. */
  readonly serviceEngine: DockerServices;
  /** What the engine check learned, kept for this driver's (the daemon's) life. */
  private readonly engineCheck: EngineCheck;

  constructor(private readonly d: DockerDriverDeps) {
    const sock = engineSocket(d.env.vars.DOCKER_HOST);
    this.backend = d.backend ?? new DockerBackend(d.exec, { sandboxRoot: d.paths.sandboxRoot, agentsDir: d.paths.agentsDir, mainDir: join(d.paths.cacheDir, "sbx", "main"), ...(sock === undefined ? {} : { apiSocket: sock }) });
    this.engineCheck = new EngineCheck(d.exec, this.backend.apiSocket);
    const engineServices = new DockerServices(d.exec, this.backend.root);
    this.serviceEngine = engineServices;
    this.services = {
      list: (spec) => engineServices.list(spec.id),
      logs: (_spec, v, tail) => engineServices.logs(v.container, tail),
      restart: (_spec, v) => engineServices.restart(v.container),
    };
    // What every container build's copy-in scan looks for: the host's secrets as they are at that moment.
    this.backend.useHostSecrets(() => hostSecretsByName(hostKeySources(d.env, d.paths.configDir)));
  }

  /** Tells the person (and the audit) what the sandbox's last container build left out of what it copied in. */
  sayCopyIn(spec: SandboxSpec, r: DriverReport): void {
    const notes = this.backend.takeNotes(spec.id);
    for (const n of notes) r.log(n);
    if (notes.length > 0) r.audit("copy-in", { name: spec.name, notes });
  }

  /** The host's agent cache, mounted read-only at /opt/sbx/agents in every container, beside sbx's Bun and shims. */
  agentPlace(): AgentPlace {
    return { os: "linux", cacheDir: this.d.paths.agentsDir, inside: RUNTIME_MOUNT.agents, bun: RUNTIME_MOUNT.bun, shims: RUNTIME_MOUNT.shims };
  }

  /** A container runs as sbx's own user: git in the host repo runs as that user too. */
  hostExec(): Exec {
    return this.d.exec;
  }

  /**
   * The process's own user, under sudo too: a container runs as exactly this uid, with this home and these paths
   * (host-user.ts `selfUser`; a root sbx's containers run as root, and sbx says so).
   */
  get hostUser(): HostUser {
    return selfUser(this.d.env);
  }

  /**
   * The engine answers and keeps the user's uid (not rootless, no userns-remap): asked in full once, then a ping while
   * the engine's socket is the same (EngineCheck).
   */
  ready(): Promise<void> {
    return this.d.checkEngine ? this.d.checkEngine(this.d.exec) : this.engineCheck.require();
  }

  /** Its part of the identity, from the config file the create read (a bad one refused before anything was made). */
  async newIdentity(n: NewSandbox, _others: readonly Sandbox[], r: DriverReport): Promise<DockerIdentity> {
    const config = n.config;
    const user = this.hostUser;
    if (user.uid === 0) r.log("note: you are root, so the sandbox runs as root inside (with every capability dropped and no-new-privileges).");
    const img = planImageSource(n.repo, n.image, knownSecretValues(hostKeySources(this.d.env, this.d.paths.configDir)));
    if (n.rebuild === true && img.source.kind === "image") {
      throw new SbxError("usage", `--rebuild builds the sandbox's image, and this one is ${describeSource(img.source, n.repo)}, used as it is`, {
        hint: "Drop --rebuild: sbx builds nothing for a named image (build it again yourself, then create the sandbox).",
      });
    }
    // The services of the flags and of devcontainer compose, checked together; each image is checked (or, with --pull,
    // pulled) before anything is made, and each Dockerfile must be there (its bases are checked when it is built).
    const known = knownSecretValues(hostKeySources(this.d.env, this.d.paths.configDir));
    const services = combineServices(n.services ?? [], img.services, n.serviceEnv ?? {}, known);
    for (const s of services) await requireServiceBuild(this.backend.engine, n.repo, s, n.pull === true);
    if (services.length) await this.serviceEngine.requireImages(services, { ...(n.pull ? { pull: true } : {}), progress: (s) => r.progress(s) });
    if (img.source.from !== "repo") r.log(`image: ${describeSource(img.source, n.repo)}`);
    for (const note of img.notes) r.log(`note: ${note}`);
    // The config file's variables win over devcontainer.json's (the person's file over the repo's).
    const userEnv = { ...img.env, ...config.env };
    return {
      id: n.id,
      dir: n.dir,
      overlays: overlaysFor(this.d.env.vars.HOME, [...config.overlays, ...(n.overlays ?? [])], n.cwd, n.exposeCredentials === true, r.log),
      hostShell: n.shell ?? user.shell,
      claudeAuth: claudeAuthFor(this.d.env, this.d.paths.configDir, n, config, r.log),
      ...(Object.keys(userEnv).length ? { userEnv } : {}),
      ...(img.source.from !== "repo" ? { source: img.source } : {}),
      ...(img.postCreate.length ? { postCreate: img.postCreate } : {}),
      ...(img.ports.length ? { ports: img.ports.map((port) => ({ port, host: port })) } : {}),
      transparent: n.transparent ?? config.transparent ?? true,
      ...(n.exposeCredentials === true ? { exposeCredentials: true } : {}),
      ...(services.length ? { services: services.map((s) => (s.build ? { ...s, build: { ...s.build, context: s.build.context ?? n.repo } } : s)) } : {}),
    };
  }

  /** A service's image, found or built (service-images.ts), with this sandbox's build output. */
  private serviceImage(repo: string, s: ServiceSpec, o: { r?: DriverReport; pull?: boolean; beforeBuild?: () => Promise<unknown> } = {}): Promise<string> {
    const r = o.r ?? { log: () => undefined, progress: () => undefined, audit: () => undefined };
    return serviceImage({ engine: this.backend.engine, exec: this.d.exec, user: this.hostUser }, repo, s, this.buildOutput(repo, r), {
      log: (line) => r.log(line),
      ...(o.pull ? { pull: true } : {}),
      ...(o.beforeBuild ? { beforeBuild: o.beforeBuild } : {}),
    });
  }

  identity(row: Sandbox): DockerIdentity {
    const r = DockerIdentitySchema.safeParse(row.identity);
    if (!r.success) {
      throw new SbxError("internal", `sandbox ${row.name}: its stored record is unreadable`, {
        hint: `Remove it with \`sbx rm --force ${row.name}\`, then create it again.`,
      });
    }
    return r.data;
  }

  spec(row: Sandbox): SandboxSpec {
    return this.specOf(row.name, row.repo, this.identity(row));
  }

  private specOf(name: string, repo: string, ident: DockerIdentity): SandboxSpec {
    const options: DockerOptions = {
      driver: "docker",
      claudeAuth: ident.claudeAuth ?? "overlay",
      ...(ident.image ? { image: ident.image } : {}),
      ...(ident.shell ? { shell: ident.shell } : {}),
      ...(ident.source ? { imageSource: ident.source } : {}),
      ...(ident.imageDockerfile ? { imageDockerfile: ident.imageDockerfile } : {}),
      ...(ident.transparent ? { transparent: true } : {}),
      ...(ident.exposeCredentials ? { exposeCredentials: true } : {}),
    };
    const cargo = ident.mirrors ? mirrorDelivery(ident.mirrors).cargoToml : null;
    if (cargo !== null) options.homeFiles = [{ path: ".cargo/config.toml", text: cargo }];
    const user = this.hostUser;
    return sandboxSpec(this.d.paths, {
      id: ident.id,
      name,
      repo,
      dir: ident.dir,
      hostUser: ident.hostShell ? { ...user, shell: ident.hostShell } : user,
      // Inside a container: the forwarder's port, the socket dir and the runtime where the container mounts them.
      // Its hostname (the sandbox's name, resolving to its loopback) is kept direct where the transparent path would
      // judge a client that goes around the proxy anyway.
      place: { proxyPort: DEFAULT_FORWARDER_PORT, proxySocket: `${SOCKET_MOUNT}/proxy.sock`, bridgeSocket: `${SOCKET_MOUNT}/bridge.sock`, bun: RUNTIME_MOUNT.bun, path: SANDBOX_PATH, ...(ident.transparent ? { hostname: name } : {}) },
      envOptions: { terminal: this.d.env.raw, ...(ident.userEnv ? { user: ident.userEnv } : {}) },
      overlays: ident.overlays,
      options,
      limits: ident.limits,
    });
  }

  /** The container's cgroup counters (through its first process on the host), or null when it does not run. */
  async counters(spec: SandboxSpec): Promise<LimitCounters | null> {
    const seen = await this.backend.engine.seen(containerName(spec.id));
    if (seen === null || seen.pid <= 0) return null;
    return countersOfPid(seen.pid, this.d.cgroupRoot, this.d.procRoot);
  }

  /** Why a stopped container stopped, when the kernel stopped it (its first process was killed for memory). */
  async stopReason(spec: SandboxSpec): Promise<string | null> {
    const seen = await this.backend.engine.seen(containerName(spec.id)).catch(() => null);
    return seen?.oomKilled ? "out of memory: the kernel killed its first process at the memory limit" : null;
  }

  /** A container that exists takes the new limits at once, running or not (docker update). */
  async applyLimits(spec: SandboxSpec): Promise<void> {
    if (!spec.limits || (await this.backend.containerStatus(spec)) === null) return;
    await this.backend.engine.update(containerName(spec.id), spec.limits);
  }

  /**
   * Three independent things at once (the clone is git on the disk, the other two wait on the engine): orphaned volumes
   * (their sandbox dir is gone) are removed; the image is checked (or built); the clone made. The container (and its
   * volumes) is made, not started, while the clone is: it needs only the image and the clone's place.
   */
  async provision(row: Sandbox, n: NewSandbox, r: DriverReport): Promise<DockerIdentity> {
    const ident = this.identity(row);
    const pruning = this.backend.pruneOrphans().catch(() => undefined);
    const imaging = ensureImage(this.backend.engine, this.d.exec, n.repo, this.hostUser, {
      rebuild: n.rebuild === true,
      ...this.buildOutput(n.repo, r),
      ...this.sourceOf(ident),
      ...(n.repoQuiet ? { beforeBuild: () => n.repoQuiet! } : {}),
      ...(n.withChanges === true ? { changes: () => this.contextChanges(n.name, n.repo, r) } : {}),
    });
    const cloning = createClone(this.d.exec, { repo: n.repo, dir: n.dir, name: n.name }, n.staged);
    // Built services after the sandbox's image (one build at a time, its output after the other's): their tags kept.
    const servicing = imaging.then(async () => {
      const out: ServiceSpec[] = [];
      for (const s of ident.services ?? []) {
        out.push(s.build ? { ...s, image: await this.serviceImage(n.repo, s, { r, ...(n.pull ? { pull: true } : {}), ...(n.repoQuiet ? { beforeBuild: () => n.repoQuiet! } : {}) }) } : s);
      }
      return out;
    });
    // Best effort: a start makes whatever is still missing. The container's views and volumes are made while the image
    // is checked; the container itself once its tag is known.
    const preparing = this.backend.prepare(this.specOf(n.name, n.repo, ident), imaging.then((image) => image.tag)).catch(() => undefined);
    // What the guards use of the host (the clone; the image's tag, for reading the clone while the container is
    // stopped) is made: the create raises them now, beside the container's making and seed, which they never touch.
    const ready = Promise.all([imaging, cloning]).then(([image]) => n.hostReady?.({ ...ident, image: image.tag, ...this.dockerfileOf(n.repo, ident) }), () => undefined);
    // allSettled: nothing may still run in the background once the create's lock is released.
    const mark = <T>(p: Promise<T>, what: string) => p.finally(() => trace(`d provision ${what}`));
    const [img, cloned, , , served] = await Promise.allSettled([mark(imaging, "image"), mark(cloning, "clone"), mark(pruning, "prune"), mark(preparing, "container"), servicing, ready]);
    if (cloned.status === "rejected") throw cloned.reason;
    if (img.status === "rejected") throw img.reason;
    if (served.status === "rejected") throw served.reason;
    if (img.value.built) r.log(`built image ${img.value.tag}`);
    for (const note of img.value.notes) r.log(note);
    this.sayCopyIn(this.specOf(n.name, n.repo, ident), r);
    return { ...ident, image: img.value.tag, ...this.dockerfileOf(n.repo, ident), ...(served.value.length ? { services: served.value } : {}) };
  }

  /**
   * `--with-changes` for the image's build context: the working tree's changed and untracked (not ignored) files
   * through the copy-in door, with the host's secrets as they are now; what held one is left out, said and audited.
   */
  private async contextChanges(name: string, repo: string, r: DriverReport): Promise<ContextChanges> {
    const door = new CopyIn(hostSecretsByName(hostKeySources(this.d.env, this.d.paths.configDir)), { home: this.d.env.vars.HOME });
    const ch = await changedWorkingFiles(this.d.exec, repo, Math.floor(Date.now() / 1000));
    const present = door.entries(ch.present, (p) => p, "strict");
    const said = findingLines(door.findings, door.count);
    if (said.length > 0) {
      const note = `note: left out of ${name}'s image build context, it held a secret: ${said.join("; ")}`;
      r.log(note);
      r.audit("copy-in", { name, notes: [note] });
    }
    return { present, gone: ch.gone };
  }

  /** The Dockerfile's hash as it was built: a start compares it (a Dockerfile that copies the repo has a tag that needs git to know). */
  private dockerfileOf(repo: string, ident: DockerIdentity): { imageDockerfile?: string } {
    const now = dockerfileNow(repo, this.hostUser, ident.source);
    return now === null ? {} : { imageDockerfile: now.sha };
  }

  /**
   * Makes the container of a sandbox that has none, without starting it, when its image is already there (else
   * ensureRunning builds it first and makes the container then). The daemon runs this while the sandbox's guards come
   * up; nothing runs in the container until ensureRunning starts it, after the guards.
   * API: GET /images/<tag>/json; then (backend.prepare) docker volume create …, docker create …, docker cp …
   */
  async prepareRun(row: Sandbox): Promise<void> {
    const spec = this.spec(row);
    if ((await this.backend.inspect(spec)).phase !== "absent") return;
    const ident = this.identity(row);
    const tag = ident.source?.kind === "image" ? ident.source.ref : (await planImage(this.d.exec, row.repo, this.hostUser, ident.source)).tag;
    if (!(await this.backend.engine.imageExists(tag))) return;
    await this.backend.prepare(this.specOf(row.name, row.repo, { ...ident, image: tag }));
  }

  /**
   * A container made before sandboxes saw only the host repo's objects (its mask file came with that change) still
   * mounts the whole .git: said at every start until it is made again.
   */
  notes(spec: SandboxSpec): string[] {
    const out: string[] = [];
    // The repo's Dockerfile changed since this sandbox's image was built: say how to apply it (never done silently).
    const image = dockerOptions(spec).image;
    const src = dockerOptions(spec).imageSource;
    const file = dockerfileNow(spec.repo, spec.hostUser, src);
    const now = typeof image === "string" ? (file?.tag ?? null) : null;
    // A Dockerfile that copies the repo: its tag moves with every commit, so its own text is what is compared.
    const built = dockerOptions(spec).imageDockerfile;
    const edited = now === null && built !== undefined && (file?.sha ?? null) !== built;
    if ((now !== null && now !== image) || edited) {
      out.push(`note: ${src?.from === "devcontainer" ? "the Dockerfile devcontainer.json names" : src?.from === "flags" ? `${src.kind === "dockerfile" ? src.dockerfile : "its Dockerfile"}` : "the repo's Dockerfile"} changed since sandbox ${spec.name}'s image was built; \`sbx rebuild ${spec.name}\` applies it (the clone, its home and its allowlist stay)`);
    }
    const lay = sandboxLayout(spec.dir);
    if (!existsSync(lay.clone) || existsSync(lay.alternatesMask)) return out;
    return [
      ...out,
      `warning: sandbox ${spec.name}'s container was made by an older sbx and sees your repo's whole .git (its config, hooks and other sandboxes' commits); ` +
        `remove it and create it again to close that: sbx rm ${spec.name} && sbx create ${spec.name}`,
    ];
  }

  /** The sandbox's image source, for ensureImage (absent: the repo's Dockerfile). */
  private sourceOf(ident: DockerIdentity): { source?: ImageSource } {
    return ident.source ? { source: ident.source } : {};
  }

  /** Where a build's output goes: to the person as it comes, and whole into this repo's build log (its last build). */
  private buildOutput(repo: string, r: DriverReport): BuildOutput {
    const lease = this.d.buildProxy;
    const proxy = lease ? () => lease(() => this.backend.engine.bridgeGateway()) : undefined;
    return { onProgress: (s) => r.progress(s), logFile: join(this.d.paths.stateDir, "builds", `${basename(repo)}-${sha256Hex(repo).slice(0, 12)}.log`), ...(proxy ? { proxy } : {}) };
  }

  /** `sbx rebuild`: the image from the Dockerfile as it is now, built even when its tag exists (a base image may have moved). */
  async buildImage(row: Sandbox, r: DriverReport): Promise<{ identity: DockerIdentity; image: string }> {
    const ident = this.identity(row);
    const img = await ensureImage(this.backend.engine, this.d.exec, row.repo, this.hostUser, { rebuild: true, ...this.buildOutput(row.repo, r), ...this.sourceOf(ident) });
    for (const note of img.notes) r.log(note);
    return { identity: { ...ident, image: img.tag, ...this.dockerfileOf(row.repo, ident) }, image: img.tag };
  }

  async dropRuntime(row: Sandbox): Promise<void> {
    const spec = this.spec(row);
    // Its services joined the old container's namespace: made anew with the new one (their volumes stay).
    await this.serviceEngine.remove(spec.id);
    await this.backend.removeContainer(spec);
  }

  /** Starts a stored sandbox's container if it is not running (rebuilding a missing image, resolving the user's shell). */
  async ensureRunning(row: Sandbox, r: DriverReport): Promise<{ spec: SandboxSpec; identity?: DockerIdentity }> {
    const spec = this.spec(row);
    // Seen once: the start below takes this answer rather than ask the engine again.
    const own = await this.backend.ownContainer(spec);
    const obs = this.backend.observed(spec, own);
    trace(`d docker inspected ${obs.phase}`);
    const ident = this.identity(row);
    const imageOf = (s: ServiceSpec) => this.serviceImage(row.repo, s, { r });
    if (obs.phase === "running") {
      await this.serviceEngine.ensure(spec, ident.services ?? [], { sandboxStarted: false, imageOf });
      return { spec };
    }
    if (obs.phase === "absent") {
      const img = await ensureImage(this.backend.engine, this.d.exec, row.repo, this.hostUser, { ...this.buildOutput(row.repo, r), ...this.sourceOf(ident) });
      for (const note of img.notes) r.log(note);
      ident.image = img.tag;
      if (img.built) Object.assign(ident, this.dockerfileOf(row.repo, ident));
    }
    await this.backend.apply(this.specOf(row.name, row.repo, ident), own);
    // In its namespace, so after it runs; a service that cannot start fails the start (and a create removes it all).
    await this.serviceEngine.ensure(this.specOf(row.name, row.repo, ident), ident.services ?? [], { sandboxStarted: true, imageOf });
    this.sayCopyIn(spec, r);
    if (!ident.shell) ident.shell = await this.backend.resolveShell(this.specOf(row.name, row.repo, ident));
    return { spec: this.specOf(row.name, row.repo, ident), identity: ident };
  }

  workspace(spec: SandboxSpec): string {
    return sandboxLayout(spec.dir).clone;
  }

  /** The clone is mounted at the repo's own path: the caller's dir inside the repo, when the clone has it. */
  sessionCwd(spec: SandboxSpec, callerCwd: string): string {
    return sessionCwd(spec.repo, callerCwd, this.workspace(spec));
  }

  /**
   * git as the sandbox: through its exec agent while it runs (≈30 ms), else `docker exec` as its user while the
   * container runs, else (read only) a one-off container of its image with the clone read-only. Always the image's own
   * git, with a PATH without the shims (they would send it to the bridge).
   * runs: docker exec -i --user <uid>:<gid> --env PATH=<plain> sbx-<id> git -C <repo> …;
   *       docker run --rm -i … --mount <clone>:<repo>:ro … --entrypoint git <image> -C <repo> …
   */
  async sandboxGit(spec: SandboxSpec, mode: SandboxGitMode, agent: AgentRun | null): Promise<SandboxGit | null> {
    const u = spec.hostUser;
    const engine = this.backend.engine;
    const git = (args: string[]) => ["git", ...SANDBOX_GIT_SAFE, "-C", spec.repo, ...args];
    const viaExec: SandboxGit = (args, stdin) => engine.execStream(containerName(spec.id), `${u.uid}:${u.gid}`, { PATH: PLAIN_PATH }, git(args), stdin);
    if (agent) return (args, stdin) => agent(git(args), { PATH: PLAIN_PATH }, stdin) ?? viaExec(args, stdin);
    const status = await this.backend.containerStatus(spec);
    if (status === "running") return viaExec;
    if (mode === "write" || status === null) return null;
    const image = dockerOptions(spec).image;
    if (typeof image !== "string" || image === "") return null;
    return (args, stdin) => engine.runStream(oneShotGitArgs(spec, image, this.backend.root, [...SANDBOX_GIT_SAFE, "-C", spec.repo, ...args]), stdin);
  }

  /** Ref sync: both ways through sandboxGit; the clone's `.git` is watched as a trigger. */
  refSyncTarget(spec: SandboxSpec, _hostExec: Exec, agent: AgentRun): RefSyncPlan {
    return {
      hostRepo: spec.repo,
      name: spec.name,
      watchDir: join(sandboxLayout(spec.dir).clone, ".git"),
      sandboxGit: (mode) => this.sandboxGit(spec, mode, (argv, env, stdin) => agent(argv, env, stdin)),
    };
  }

  /** While the daemon runs: the engine's events of its services, so a crash is an audit row (`sbx logs`) and a notice. */
  watch(ctx: WatchContext): Watcher[] {
    return watchServices(ctx, { apiSocket: this.backend.apiSocket, root: this.backend.root, oracle: this.serviceEngine });
  }

  /** A container has no network of its own: nothing to fence at daemon start. */
  async restoreBlockAll(): Promise<number> {
    return 0;
  }

  /** The clone on the host; inside, it is mounted at the host repo's own path, which is the path the sandbox names. */
  bridgePlace(spec: SandboxSpec, exec: Exec): BridgePlace {
    return { workspace: sandboxLayout(spec.dir).clone, workspaceView: spec.repo, exec };
  }

  inspect(spec: SandboxSpec): Promise<Observed> {
    return this.backend.inspect(spec);
  }

  list(): Promise<Observed[]> {
    return this.backend.list();
  }

  /** Its services first: their network namespace is the sandbox's. */
  async stop(spec: SandboxSpec): Promise<Change> {
    await this.serviceEngine.stop(spec.id);
    return this.backend.stop(spec);
  }

  /** Its services' containers first (a volume in use cannot go); their volumes go with the sandbox's, by label. */
  async remove(spec: SandboxSpec): Promise<Change> {
    await this.serviceEngine.remove(spec.id);
    return this.backend.remove(spec);
  }

  shellArgv(spec: SandboxSpec, req: ShellRequest): string[] {
    return this.backend.shellArgv(spec, req);
  }

  /**
   * A session's process in the container outlives its `docker exec` client (the engine does not end it): hang it up
   * from inside, as the sandbox's user, by the pid its start line recorded. Bounded: the daemon waits at most
   * HANGUP_WAIT_MS, whatever the sandbox put in its pid dir.
   * runs: docker exec --user <uid>:<gid> sbx-<id> /bin/sh -c <sessionHangupScript> sbx only|except <ids…>
   */
  async hangUpSessions(spec: SandboxSpec, which: SessionSet): Promise<void> {
    const u = spec.hostUser;
    const [mode, ids] = "only" in which ? (["only", which.only] as const) : (["except", which.except] as const);
    if (mode === "only" && ids.length === 0) return;
    try {
      const run = this.backend.engine.execStream(containerName(spec.id), `${u.uid}:${u.gid}`, { PATH: PLAIN_PATH }, ["/bin/sh", "-c", sessionHangupScript(), "sbx", mode, ...ids]);
      void run.stdout.cancel().catch(() => {});
      await Promise.race([run.done, Bun.sleep(HANGUP_WAIT_MS)]);
    } catch {
      /* a container that is not running has no session processes left */
    }
  }

  /** Its forwarder listens inside the container: nothing of the host's loopback is its. */
  hostProxyPort(): null {
    return null;
  }

  /** Labelled containers and volumes of this state root whose sandbox id is not kept, and their overlay dirs. */
  cleanup(keep: ReadonlySet<string>, opts: { dryRun?: boolean } = {}): Promise<CleanupReport> {
    return this.backend.cleanup(keep, opts);
  }

  /** Labelled containers and volumes of this state root whose sandbox dir is gone. */
  prune(_keep: ReadonlySet<string>, opts: { dryRun?: boolean } = {}): Promise<CleanupReport> {
    return this.backend.pruneOrphans(opts);
  }
}
