// Which Docker engine answers, and whether it can give a sandbox the host user's uid on bind mounts.
import { statSync } from "node:fs";
import { z } from "zod";
import { SbxError } from "../../core/errors";
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

/** The socket file's identity (device, inode, change time): a restarted engine makes its socket afresh. */
function socketIdentity(socket: string): string | undefined {
  try {
    const st = statSync(socket);
    return `${st.dev}:${st.ino}:${st.ctimeMs}`;
  } catch {
    return undefined;
  }
}

/** GET /_ping: whether the engine on `socket` answers at all (≈1 ms; /info makes dockerd run runc and docker-init). */
export async function pingEngineApi(socket: string): Promise<boolean> {
  try {
    const res = await fetch("http://docker/_ping", { unix: socket, signal: AbortSignal.timeout(5_000) } as RequestInit);
    await res.arrayBuffer();
    return res.ok;
  } catch {
    return false;
  }
}

/** How long a good answer of the engine is trusted without asking again (beside a ping each time). */
const ENGINE_CHECK_KEEP_MS = 10 * 60_000;

/**
 * requireSameUidEngine, remembered for the daemon's life: the engine's /info costs 40–100 ms of every create here
 * (dockerd runs `runc --version` and `docker-init --version` to answer it), and its answer (rootful or not) changes only
 * when the engine restarts. So a good answer is kept while the socket is the same file, the engine answers a ping, and
 * it is younger than ENGINE_CHECK_KEEP_MS; anything else asks in full again, so a failure says what it said before.
 * Without an API socket (the CLI probe) nothing is kept.
 */
export class EngineCheck {
  private good: { id: string; at: number } | undefined;
  constructor(
    private readonly exec: Exec,
    private readonly socket: string | undefined,
    private readonly now: () => number = Date.now,
  ) {}

  async require(): Promise<void> {
    const socket = this.socket;
    const id = socket === undefined ? undefined : socketIdentity(socket);
    const kept = this.good;
    if (socket !== undefined && id !== undefined && kept?.id === id && this.now() - kept.at < ENGINE_CHECK_KEEP_MS && (await pingEngineApi(socket))) return;
    this.good = undefined;
    await requireSameUidEngine(this.exec, socket);
    // The identity read before the full answer: a socket made afresh meanwhile does not match next time.
    if (id !== undefined) this.good = { id, at: this.now() };
  }
}
