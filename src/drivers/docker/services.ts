// A Docker sandbox's services (`--service NAME=IMAGE`): each a container in the SANDBOX's network namespace, so the
// agent reaches it on 127.0.0.1 and it has exactly the sandbox's network (loopback only; out only through the
// sandbox's own forwarder, under the sandbox's policy). Nothing of the host is mounted into it: no repo, no sbx
// socket, no runtime; its data lives in named volumes of this sandbox, removed with it.
import { createHash } from "node:crypto";
import { z } from "zod";
import type { SandboxSpec } from "../../core/spec";
import type { ServiceSpec } from "../../core/services";
import { SbxError } from "../../core/errors";
import type { Exec } from "../../sys/exec";
import { containerName, LABEL, labels, limitArgs, mountValue } from "./args";

/** The label that names a service container's service (beside the sandbox's own labels, role `service`). */
export const SERVICE_LABEL = "sbx.service";
/** How many of a failed service's last log lines a refusal shows. */
export const SERVICE_LOG_LINES = 40;

export function serviceContainerName(id: string, service: string): string {
  return `sbx-${id}-svc-${service}`;
}

/** One named volume per sandbox, per service, per path the image declares a VOLUME at. */
export function serviceVolumeName(id: string, service: string, path: string): string {
  return `sbx-${id}-svc-${service}-${createHash("sha256").update(path).digest("hex").slice(0, 10)}`;
}

function labelArgs(l: Record<string, string>): string[] {
  return Object.entries(l).flatMap(([k, v]) => ["--label", `${k}=${v}`]);
}

function serviceLabels(spec: Pick<SandboxSpec, "id" | "name" | "repo" | "dir">, service: string, root: string): Record<string, string> {
  return { ...labels(spec, "service", root), [SERVICE_LABEL]: service };
}

/**
 * Pure: the `docker create` of one service. The sandbox's network namespace (`container:sbx-<id>`: lo only, the
 * sandbox's DNS stub), every capability dropped and none added (the image's process runs as the image's USER: an image
 * whose entrypoint chowns and drops privileges as root, as the official postgres image does, needs CHOWN, SETUID,
 * SETGID, FOWNER and DAC_OVERRIDE, which sbx does not give; use one that runs as its own user), no-new-privileges,
 * the sandbox's limits, its own pid and ipc namespaces. No --env (its environment is the image's: nothing of the
 * host's, the proxy's or the sandbox's), no bind mount, only its named volumes.
 */
export function serviceCreateArgs(spec: SandboxSpec, svc: ServiceSpec, root: string, volumePaths: readonly string[]): string[] {
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
    ...volumePaths.flatMap((p) => ["--mount", mountValue([["type", "volume"], ["src", serviceVolumeName(spec.id, svc.name, p)], ["dst", p]])]),
    svc.image,
  ];
}

/** Pure: the `docker volume create` of one of its volumes, labelled so `sbx rm` (and prune) finds and removes it. */
export function serviceVolumeArgs(spec: SandboxSpec, svc: ServiceSpec, root: string, path: string): string[] {
  return ["docker", "volume", "create", ...labelArgs(serviceLabels(spec, svc.name, root)), serviceVolumeName(spec.id, svc.name, path)];
}

/** What `sbx services NAME` says of one. */
export interface ServiceView {
  name: string;
  image: string;
  container: string;
  /** The engine's word: running, exited, created, restarting… */
  state: string;
  /** healthy, unhealthy, starting; none when the image has no healthcheck. */
  health: string;
  exitCode: number;
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

/** The services of one sandbox, on the engine, through the docker CLI (a few calls per command, never on a hot path). */
export class DockerServices {
  constructor(
    private readonly exec: Exec,
    private readonly root: string,
  ) {}

  private filters(id: string): string[] {
    return ["--filter", `label=${LABEL.root}=${this.root}`, "--filter", `label=${LABEL.sandbox}=${id}`, "--filter", `label=${LABEL.role}=service`];
  }

  /** Its service containers' names (this state root's only). runs: docker ps --all --filter label=… */
  async containers(id: string): Promise<string[]> {
    const r = await this.exec.run(["docker", "ps", "--all", "--format", "{{.Names}}", ...this.filters(id)]);
    return r.stdout.split("\n").map((s) => s.trim()).filter(Boolean);
  }

  /** runs: docker inspect <its service containers> */
  async list(id: string): Promise<ServiceView[]> {
    const names = await this.containers(id);
    if (names.length === 0) return [];
    const r = await this.exec.run(["docker", "inspect", "--type", "container", ...names]);
    return InspectSchema.parse(JSON.parse(r.stdout))
      .map((c) => ({
        name: c.Config.Labels?.[SERVICE_LABEL] ?? c.Name.replace(/^\//, ""),
        image: c.Config.Image,
        container: c.Name.replace(/^\//, ""),
        state: c.State.Status,
        health: c.State.Health?.Status ?? "none",
        exitCode: c.State.ExitCode,
        networkMode: c.HostConfig.NetworkMode,
      }))
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Refuses an image the engine does not have (sbx pulls nothing), before anything is made. */
  async requireImages(services: readonly ServiceSpec[]): Promise<void> {
    for (const s of services) {
      const r = await this.exec.run(["docker", "image", "inspect", "--format", "{{.Id}}", s.image], { check: false });
      if (r.exitCode !== 0) {
        throw new SbxError("usage", `service ${s.name}: no local image ${s.image}`, {
          hint: `sbx pulls nothing: \`docker pull ${s.image}\` or build it (\`docker build -t ${s.image} …\`), then create the sandbox again.`,
        });
      }
    }
  }

  /** The paths its image declares VOLUMEs at. runs: docker image inspect --format '{{json .Config.Volumes}}' */
  private async volumePaths(image: string): Promise<string[]> {
    const r = await this.exec.run(["docker", "image", "inspect", "--format", "{{json .Config.Volumes}}", image]);
    const v = z.record(z.string(), z.unknown()).nullable().parse(JSON.parse(r.stdout.trim() || "null"));
    return Object.keys(v ?? {}).filter((p) => p.startsWith("/")).sort();
  }

  /**
   * Each service made if missing and started if not running (the sandbox's container runs: its namespace is theirs);
   * then each one with a healthcheck is waited for until healthy. One that exits or turns unhealthy fails the call with
   * its last log lines (a create that fails removes everything, these too).
   */
  async ensure(spec: SandboxSpec, services: readonly ServiceSpec[], o: { sandboxStarted: boolean; healthTimeoutMs?: number }): Promise<void> {
    if (services.length === 0) return;
    const healthTimeoutMs = o.healthTimeoutMs ?? 120_000;
    if (o.sandboxStarted) await this.dropStale(spec);
    const present = new Set(await this.containers(spec.id));
    for (const s of services) {
      const name = serviceContainerName(spec.id, s.name);
      if (!present.has(name)) {
        const paths = await this.volumePaths(s.image);
        for (const p of paths) await this.exec.run(serviceVolumeArgs(spec, s, this.root, p));
        await this.exec.run(serviceCreateArgs(spec, s, this.root, paths));
      }
    }
    const views = new Map((await this.list(spec.id)).map((v) => [v.name, v]));
    const toStart = services.filter((s) => views.get(s.name)?.state !== "running").map((s) => serviceContainerName(spec.id, s.name));
    // All running already (every command into a started sandbox asks): nothing to wait for, one that turned unhealthy
    // since is for `sbx services` to say, not a reason to refuse the command.
    if (toStart.length === 0) return;
    await this.exec.run(["docker", "start", ...toStart]);
    await this.waitReady(spec, services, healthTimeoutMs);
  }

  /**
   * Only after the sandbox's container was started (the only time it can have been made anew): a service that
   * joined an earlier container of the sandbox (a rebuild, a container removed by hand) would not start; it is made
   * anew in this one's namespace, its volumes kept.
   */
  private async dropStale(spec: SandboxSpec): Promise<void> {
    const sandbox = (await this.exec.run(["docker", "inspect", "--type", "container", "--format", "{{.Id}}", containerName(spec.id)])).stdout.trim();
    const stale = (await this.list(spec.id)).filter((v) => v.networkMode !== `container:${sandbox}`).map((v) => v.container);
    if (stale.length > 0) await this.exec.run(["docker", "rm", "--force", ...stale]);
  }

  private async waitReady(spec: SandboxSpec, services: readonly ServiceSpec[], timeoutMs: number): Promise<void> {
    const until = Date.now() + timeoutMs;
    await Bun.sleep(200); // one that cannot run at all (a bad command, a missing user) exits at once
    for (;;) {
      const views = new Map((await this.list(spec.id)).map((v) => [v.name, v]));
      let waiting = false;
      for (const s of services) {
        const v = views.get(s.name);
        if (v === undefined) throw new SbxError("internal", `service ${s.name} of ${spec.name} vanished while it started`, { hint: "Try again; `sbx services` shows them." });
        if (v.state !== "running" || v.health === "unhealthy") await this.fail(spec, v);
        if (v.health === "starting") waiting = true;
      }
      if (!waiting) return;
      if (Date.now() > until) {
        const v = services.map((s) => views.get(s.name)!).find((x) => x.health === "starting")!;
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

  /** Its output (both streams), the last `tail` lines. runs: docker logs --tail N <container> */
  async logs(container: string, tail: number): Promise<string> {
    const r = await this.exec.run(["docker", "logs", "--tail", String(tail), container], { check: false });
    return `${r.stdout}${r.stderr}`.replace(/[\x00-\x08\x0e-\x1f]/g, "").trimEnd();
  }

  /** runs: docker stop --time 5 <its services> (before the sandbox: their namespace goes with it) */
  async stop(id: string): Promise<void> {
    const names = await this.containers(id);
    if (names.length > 0) await this.exec.run(["docker", "stop", "--time", "5", ...names], { check: false });
  }

  /** runs: docker rm --force <its services> (their volumes go with the sandbox's, by label) */
  async remove(id: string): Promise<void> {
    const names = await this.containers(id);
    if (names.length > 0) await this.exec.run(["docker", "rm", "--force", ...names]);
  }

  /** runs: docker restart --time 5 <its container> */
  async restart(container: string): Promise<void> {
    await this.exec.run(["docker", "restart", "--time", "5", container]);
  }
}
