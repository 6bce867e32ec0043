// Which Docker engine answers, and whether it can give a sandbox the host user's uid on bind mounts.
import { z } from "zod";
import type { Exec } from "../../sys/exec";

export const DockerInfoSchema = z.object({
  ServerVersion: z.string().default(""),
  OperatingSystem: z.string().default(""),
  SecurityOptions: z.array(z.string()).nullable().default([]),
  Name: z.string().default(""),
  Driver: z.string().default(""),
  DockerRootDir: z.string().default(""),
});
export type DockerInfo = z.infer<typeof DockerInfoSchema>;

export type EngineKind = "rootful" | "rootless" | "userns-remap" | "docker-desktop";

export interface EngineClass {
  kind: EngineKind;
  /** Whether same-uid bind mounts work (sbx's same-identity invariant). */
  sameUidWorks: boolean;
  why: string;
}

/** Pure: classifies `docker info` output. */
export function classifyEngine(info: DockerInfo): EngineClass {
  const sec = info.SecurityOptions ?? [];
  if (/docker desktop/i.test(info.OperatingSystem)) {
    return {
      kind: "docker-desktop",
      sameUidWorks: false,
      why: "Docker Desktop runs containers in a VM whose file sharing maps ownership, so the sandbox user cannot be the host user on bind mounts",
    };
  }
  if (sec.some((s) => /(^|,)name=rootless(,|$)/.test(s))) {
    return {
      kind: "rootless",
      sameUidWorks: false,
      why: "rootless Docker maps container uids into a subordinate range, so files written inside are not owned by you on the host",
    };
  }
  if (sec.some((s) => /(^|,)name=userns(,|$)/.test(s))) {
    return {
      kind: "userns-remap",
      sameUidWorks: false,
      why: "userns-remap shifts container uids, so the sandbox user cannot have your uid on the host",
    };
  }
  return { kind: "rootful", sameUidWorks: true, why: "rootful engine: container uids are host uids" };
}

export type EngineProbe =
  | { ok: true; info: DockerInfo; class: EngineClass }
  | { ok: false; reason: "no-client" | "no-engine" | "permission"; detail: string };

/**
 * GET /info on the engine's unix socket (no docker CLI process). Undefined when the socket gives no usable answer
 * (missing, refused, odd reply): then the CLI probe says precisely what is wrong.
 */
export async function probeEngineApi(socket: string): Promise<EngineProbe | undefined> {
  try {
    const res = await fetch("http://docker/info", { unix: socket, signal: AbortSignal.timeout(15_000) } as RequestInit);
    if (!res.ok) return undefined;
    const info = DockerInfoSchema.safeParse(await res.json());
    return info.success ? { ok: true, info: info.data, class: classifyEngine(info.data) } : undefined;
  } catch {
    return undefined;
  }
}

/** The API probe when there is a socket and it answers, else `docker info`. */
export async function probeEngineFast(exec: Exec, socket: string | undefined): Promise<EngineProbe> {
  const fast = socket === undefined ? undefined : await probeEngineApi(socket);
  return fast ?? probeEngine(exec);
}

/** runs: docker info --format '{{json .}}' */
export async function probeEngine(exec: Exec): Promise<EngineProbe> {
  const r = await exec.run(["docker", "info", "--format", "{{json .}}"], { check: false, timeoutMs: 15_000 });
  if (r.exitCode === 127) return { ok: false, reason: "no-client", detail: r.stderr.trim() };
  if (r.exitCode !== 0) {
    const detail = (r.stderr || r.stdout).trim();
    const reason = /permission denied/i.test(detail) ? "permission" : "no-engine";
    return { ok: false, reason, detail };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(r.stdout);
  } catch {
    return { ok: false, reason: "no-engine", detail: `unreadable docker info output: ${r.stdout.slice(0, 200)}` };
  }
  // `docker info` exits 0 with ServerErrors when the client works but the engine does not answer.
  const errs = (raw as { ServerErrors?: string[] }).ServerErrors;
  if (Array.isArray(errs) && errs.length > 0) {
    const detail = errs.join("; ");
    return { ok: false, reason: /permission denied/i.test(detail) ? "permission" : "no-engine", detail };
  }
  const info = DockerInfoSchema.parse(raw);
  return { ok: true, info, class: classifyEngine(info) };
}
