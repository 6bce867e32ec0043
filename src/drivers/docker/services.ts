// A Docker sandbox's services (`--service NAME=IMAGE|DOCKERFILE`, devcontainer compose): each a container in the
// SANDBOX's network namespace, so the agent reaches it on 127.0.0.1 and it has exactly the sandbox's network (loopback
// only; out only through the sandbox's own forwarder, under the sandbox's policy). Nothing of the host is mounted into
// it: no repo, no sbx socket, no runtime; its data lives in named volumes of this sandbox, removed with it. Its
// environment is what the person wrote for it (checked in core/services.ts), never the host's or the sandbox's.
import { createHash } from "node:crypto";
import { z } from "zod";
import type { SandboxSpec } from "../../core/spec";
import { startLevels, type ServiceSpec, type ServiceView } from "../../core/services";
import { SbxError } from "../../core/errors";
import type { Exec } from "../../sys/exec";
import { containerName, LABEL, labels, limitArgs, mountValue } from "./args";

/** The label that names a shared named volume's compose key. */
export const VOLUME_LABEL = "sbx.volume";
/** How many of a failed service's last log lines a refusal shows. */
export const SERVICE_LOG_LINES = 40;
/** How long after sbx stops, removes or restarts a service its exit is its doing, not a crash (docker stop waits 5 s). */
const EXPECTED_EXIT_MS = 30_000;

export function serviceContainerName(id: string, service: string): string {
  return `sbx-${id}-svc-${service}`;
}

const short = (s: string) => createHash("sha256").update(s).digest("hex").slice(0, 10);

/** One named volume per sandbox, per service, per path its image declares a VOLUME at (and no named volume covers). */
export function serviceVolumeName(id: string, service: string, path: string): string {
  return `sbx-${id}-svc-${service}-${short(path)}`;
}

/** A compose named volume of the sandbox: one per key, shared by every service that mounts it. */
export function sharedVolumeName(id: string, key: string): string {
  return `sbx-${id}-vol-${short(key)}`;
}

function labelArgs(l: Record<string, string>): string[] {
  return Object.entries(l).flatMap(([k, v]) => ["--label", `${k}=${v}`]);
}

function serviceLabels(spec: Pick<SandboxSpec, "id" | "name" | "repo" | "dir">, service: string, root: string): Record<string, string> {
  return { ...labels(spec, "service", root), [LABEL.service]: service };
}

/** Pure: where a service's volumes go: its named volumes, then its image's VOLUME paths no named one covers. */
export function serviceMounts(id: string, svc: ServiceSpec, imagePaths: readonly string[]): { name: string; path: string; readOnly: boolean; key?: string }[] {
  const named = (svc.volumes ?? []).map((v) => ({ name: sharedVolumeName(id, v.key), path: v.path, readOnly: v.readOnly === true, key: v.key }));
  const covered = new Set(named.map((v) => v.path.replace(/\/+$/, "")));
  const own = imagePaths.filter((p) => !covered.has(p.replace(/\/+$/, ""))).map((p) => ({ name: serviceVolumeName(id, svc.name, p), path: p, readOnly: false }));
  return [...named, ...own];
}

/**
 * Pure: the `docker create` of one service. The sandbox's network namespace (`container:sbx-<id>`: lo only, the
 * sandbox's DNS stub), every capability dropped and none added (the image's process runs as the image's USER, or the
 * `user` the person named: an image whose entrypoint chowns and drops privileges as root, as the official postgres
 * image does, needs CHOWN, SETUID, SETGID, FOWNER and DAC_OVERRIDE, which sbx does not give; use one that runs as its
 * own user), no-new-privileges, the sandbox's limits, its own pid and ipc namespaces. Its variables are the ones the
 * person wrote for it (never the host's, the proxy's or the sandbox's); no bind mount, only volumes of this sandbox.
 * `image` is the local image (for a built service, the tag sbx built).
 */
export function serviceCreateArgs(spec: SandboxSpec, svc: ServiceSpec, root: string, imagePaths: readonly string[], image = svc.image ?? ""): string[] {
  const h = svc.healthcheck;
  const env = Object.entries(svc.env ?? {}).sort(([a], [b]) => a.localeCompare(b));
  const [entry, ...entryRest] = svc.entrypoint ?? [];
  return [
    "docker", "create",
    "--name", serviceContainerName(spec.id, svc.name),
    "--network", `container:${containerName(spec.id)}`,
    // A process that is PID 1 ignores a SIGTERM it has no handler for: docker's init passes it on (stop is at once).
    "--init",
    "--cap-drop", "ALL",
    "--security-opt", "no-new-privileges",
    "--restart", "no",
    ...limitArgs(spec),
    ...labelArgs(serviceLabels(spec, svc.name, root)),
    ...(svc.user !== undefined ? ["--user", svc.user] : []),
    ...env.flatMap(([k, v]) => ["--env", `${k}=${v}`]),
    ...(h?.none ? ["--no-healthcheck"] : []),
    ...(h?.cmd !== undefined ? ["--health-cmd", h.cmd] : []),
    ...(h?.interval ? ["--health-interval", h.interval] : []),
    ...(h?.timeout ? ["--health-timeout", h.timeout] : []),
    ...(h?.startPeriod ? ["--health-start-period", h.startPeriod] : []),
    ...(h?.retries !== undefined ? ["--health-retries", String(h.retries)] : []),
    ...serviceMounts(spec.id, svc, imagePaths).flatMap((m) => ["--mount", mountValue([["type", "volume"], ["src", m.name], ["dst", m.path], ...(m.readOnly ? ["readonly"] : [])])]),
    // An entrypoint replaces the image's (and so its CMD, as docker and compose do): its first word is docker's flag,
    // the rest goes before the command.
    ...(svc.entrypoint !== undefined ? ["--entrypoint", entry ?? ""] : []),
    image,
    ...entryRest,
    ...(svc.command ?? []),
  ];
}

/** Pure: the `docker volume create` of one of its volumes, labelled so `sbx rm` (and prune) finds and removes it. */
export function serviceVolumeArgs(spec: SandboxSpec, svc: Pick<ServiceSpec, "name">, root: string, volume: { name: string; key?: string }): string[] {
  const extra: Record<string, string> = volume.key !== undefined ? { [VOLUME_LABEL]: volume.key } : {};
  return ["docker", "volume", "create", ...labelArgs({ ...serviceLabels(spec, svc.name, root), ...extra }), volume.name];
}

/** A service as the engine holds it (core's view and the namespace it joined). */
export interface EngineServiceView extends ServiceView {
  /** `container:<id>`: the engine keeps the id of the sandbox container whose namespace it joined. */
  networkMode: string;
}

const InspectSchema = z.array(
  z.object({
    Name: z.string(),
    Config: z.object({ Image: z.string(), Labels: z.record(z.string(), z.string()).nullable().optional() }),
    HostConfig: z.object({ NetworkMode: z.string() }),
    State: z.object({ Status: z.string(), ExitCode: z.number().int(), Health: z.object({ Status: z.string() }).nullable().optional() }),
  }),
);

/** What a service's image is, when its container is made: the local image, or the tag its Dockerfile builds (built if missing). */
export type ImageOf = (svc: ServiceSpec) => Promise<string>;

/** The services of one sandbox, on the engine, through the docker CLI (a few calls per command, never on a hot path). */
export class DockerServices {
  /** Containers sbx itself is stopping, removing or restarting, until when: their exit is not a crash. */
  private readonly expected = new Map<string, number>();

  constructor(
    private readonly exec: Exec,
    private readonly root: string,
  ) {}

  private filters(id: string): string[] {
    return ["--filter", `label=${LABEL.root}=${this.root}`, "--filter", `label=${LABEL.sandbox}=${id}`, "--filter", `label=${LABEL.role}=service`];
  }

  private expect(names: readonly string[]): void {
    const until = Date.now() + EXPECTED_EXIT_MS;
    for (const n of names) this.expected.set(n, until);
  }

  /** Whether a service container's exit now was sbx's doing (a stop, rm or restart it began in the last 30 s). */
  exitExpected(container: string, now = Date.now()): boolean {
    for (const [k, until] of this.expected) if (until < now) this.expected.delete(k);
    return (this.expected.get(container) ?? 0) >= now;
  }

  /** Its service containers' names (this state root's only). runs: docker ps --all --filter label=… */
  async containers(id: string): Promise<string[]> {
    const r = await this.exec.run(["docker", "ps", "--all", "--format", "{{.Names}}", ...this.filters(id)]);
    return r.stdout.split("\n").map((s) => s.trim()).filter(Boolean);
  }

  /** runs: docker inspect <its service containers> */
  async list(id: string): Promise<EngineServiceView[]> {
    const names = await this.containers(id);
    if (names.length === 0) return [];
    const r = await this.exec.run(["docker", "inspect", "--type", "container", ...names]);
    return InspectSchema.parse(JSON.parse(r.stdout))
      .map((c) => ({
        name: c.Config.Labels?.[LABEL.service] ?? c.Name.replace(/^\//, ""),
        image: c.Config.Image,
        container: c.Name.replace(/^\//, ""),
        state: c.State.Status,
        health: c.State.Health?.Status ?? "none",
        exitCode: c.State.ExitCode,
        networkMode: c.HostConfig.NetworkMode,
      }))
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  /**
   * The images of services named by image: each must be on this machine (sbx pulls nothing), or, with `pull` (--pull),
   * is pulled now. Refused before anything is made.
   * runs: docker image inspect <image>; with pull and missing: docker pull <image>
   */
  async requireImages(services: readonly ServiceSpec[], o: { pull?: boolean; progress?: (s: string) => void } = {}): Promise<void> {
    for (const s of services) {
      if (s.build !== undefined || s.image === undefined) continue;
      const r = await this.exec.run(["docker", "image", "inspect", "--format", "{{.Id}}", s.image], { check: false });
      if (r.exitCode === 0) continue;
      if (o.pull === true) {
        const p = await this.exec.run(["docker", "pull", s.image], { check: false, timeoutMs: 900_000, ...(o.progress ? { onStdout: o.progress, onStderr: o.progress } : {}) });
        if (p.exitCode === 0) continue;
        throw new SbxError("unavailable", `service ${s.name}: docker pull ${s.image} failed: ${p.stderr.trim().split("\n").slice(-2).join(" ")}`, {
          hint: "Check that the registry is reachable from this machine, or build or load the image yourself and create the sandbox again without --pull.",
        });
      }
      throw new SbxError("usage", `service ${s.name}: no local image ${s.image}`, {
        hint: `sbx pulls nothing unless asked: \`docker pull ${s.image}\` or build it (\`docker build -t ${s.image} …\`), or pass --pull; then create the sandbox again.`,
      });
    }
  }

  /** The paths its image declares VOLUMEs at. runs: docker image inspect --format '{{json .Config.Volumes}}' */
  private async volumePaths(image: string): Promise<string[]> {
    const r = await this.exec.run(["docker", "image", "inspect", "--format", "{{json .Config.Volumes}}", image]);
    const v = z.record(z.string(), z.unknown()).nullable().parse(JSON.parse(r.stdout.trim() || "null"));
    return Object.keys(v ?? {}).filter((p) => p.startsWith("/")).sort();
  }

  /**
   * Each service made if missing and started if not running (the sandbox's container runs: its namespace is theirs),
   * level by level (core/services.ts startLevels): a level starts once every service of the one before runs and those
   * with a healthcheck are healthy. One that exits or turns unhealthy fails the call with its last log lines (a create
   * that fails removes everything, these too).
   */
  async ensure(spec: SandboxSpec, services: readonly ServiceSpec[], o: { sandboxStarted: boolean; healthTimeoutMs?: number; imageOf?: ImageOf }): Promise<void> {
    if (services.length === 0) return;
    const healthTimeoutMs = o.healthTimeoutMs ?? 120_000;
    const imageOf: ImageOf = o.imageOf ?? (async (s) => s.image ?? "");
    if (o.sandboxStarted) await this.dropStale(spec);
    const present = new Set(await this.containers(spec.id));
    for (const s of services) {
      const name = serviceContainerName(spec.id, s.name);
      if (!present.has(name)) {
        const image = await imageOf(s);
        const paths = await this.volumePaths(image);
        for (const m of serviceMounts(spec.id, s, paths)) await this.exec.run(serviceVolumeArgs(spec, s, this.root, m));
        await this.exec.run(serviceCreateArgs(spec, s, this.root, paths, image));
      }
    }
    const views = new Map((await this.list(spec.id)).map((v) => [v.name, v]));
    // All running already (every command into a started sandbox asks): nothing to wait for, one that turned unhealthy
    // since is for `sbx services` to say, not a reason to refuse the command.
    if (services.every((s) => views.get(s.name)?.state === "running")) return;
    for (const level of startLevels(services)) {
      const toStart = level.filter((s) => views.get(s.name)?.state !== "running").map((s) => serviceContainerName(spec.id, s.name));
      if (toStart.length > 0) await this.exec.run(["docker", "start", ...toStart]);
      await this.waitReady(spec, level, services, healthTimeoutMs);
    }
  }

  /**
   * Only after the sandbox's container was started (the only time it can have been made anew): a service that
   * joined an earlier container of the sandbox (a rebuild, a container removed by hand) would not start; it is made
   * anew in this one's namespace, its volumes kept.
   */
  private async dropStale(spec: SandboxSpec): Promise<void> {
    const sandbox = (await this.exec.run(["docker", "inspect", "--type", "container", "--format", "{{.Id}}", containerName(spec.id)])).stdout.trim();
    const stale = (await this.list(spec.id)).filter((v) => v.networkMode !== `container:${sandbox}`).map((v) => v.container);
    if (stale.length === 0) return;
    this.expect(stale);
    await this.exec.run(["docker", "rm", "--force", ...stale]);
  }

  /** Waits until each of `level` runs and is healthy where it has a healthcheck; one a later service needs healthy must have one. */
  private async waitReady(spec: SandboxSpec, level: readonly ServiceSpec[], all: readonly ServiceSpec[], timeoutMs: number): Promise<void> {
    const until = Date.now() + timeoutMs;
    const neededHealthy = new Set(all.flatMap((s) => (s.dependsOn ?? []).filter((d) => d.healthy).map((d) => d.name)));
    await Bun.sleep(200); // one that cannot run at all (a bad command, a missing user) exits at once
    for (;;) {
      const views = new Map((await this.list(spec.id)).map((v) => [v.name, v]));
      let waiting = false;
      for (const s of level) {
        const v = views.get(s.name);
        if (v === undefined) throw new SbxError("internal", `service ${s.name} of ${spec.name} vanished while it started`, { hint: "Try again; `sbx services` shows them." });
        if (v.state !== "running" || v.health === "unhealthy") await this.fail(spec, v);
        if (v.health === "starting") waiting = true;
        if (v.health === "none" && neededHealthy.has(s.name)) {
          const by = all.filter((x) => x.dependsOn?.some((d) => d.name === s.name && d.healthy)).map((x) => x.name);
          await this.fail(spec, v, `has no healthcheck, and ${by.join(", ")} wait${by.length === 1 ? "s" : ""} for it to be healthy`);
        }
      }
      if (!waiting) return;
      if (Date.now() > until) {
        const v = level.map((s) => views.get(s.name)!).find((x) => x.health === "starting")!;
        await this.fail(spec, v, `not healthy within ${Math.round(timeoutMs / 1000)} s`);
      }
      await Bun.sleep(250);
    }
  }

  private async fail(spec: SandboxSpec, v: ServiceView, why?: string): Promise<never> {
    const tail = await this.logs(v.container, SERVICE_LOG_LINES).catch(() => "");
    const said = why ?? (v.state === "running" ? "failed its healthcheck" : `exited (code ${v.exitCode})`);
    throw new SbxError("exec_failed", `service ${v.name} of sandbox ${spec.name} (${v.image}) ${said}${tail ? `; its last log lines:\n${tail}` : ""}`, {
      hint: "A service runs as its image's own user with no capabilities, in the sandbox's network (loopback only, no volumes but its own): fix its image for that, then create the sandbox again.",
    });
  }

  /** Its output (both streams), the last `tail` lines, control characters but tab and newline taken out. runs: docker logs --tail N <container> */
  async logs(container: string, tail: number): Promise<string> {
    const r = await this.exec.run(["docker", "logs", "--tail", String(tail), container], { check: false });
    return `${r.stdout}${r.stderr}`.replace(/[\x00-\x08\x0b-\x1f\x7f]/g, "").trimEnd();
  }

  /** runs: docker stop --time 5 <its services> (before the sandbox: their namespace goes with it) */
  async stop(id: string): Promise<void> {
    const names = await this.containers(id);
    if (names.length === 0) return;
    this.expect(names);
    await this.exec.run(["docker", "stop", "--time", "5", ...names], { check: false });
  }

  /** runs: docker rm --force <its services> (their volumes go with the sandbox's, by label) */
  async remove(id: string): Promise<void> {
    const names = await this.containers(id);
    if (names.length === 0) return;
    this.expect(names);
    await this.exec.run(["docker", "rm", "--force", ...names]);
  }

  /** runs: docker restart --time 5 <its container> */
  async restart(container: string): Promise<void> {
    this.expect([container]);
    await this.exec.run(["docker", "restart", "--time", "5", container]);
  }
}
