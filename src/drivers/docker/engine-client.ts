// The one seam between sbx and a Docker engine: every container, volume, archive, log and image call the backend makes.
//
// `Engine` is what the backend needs; `DockerEngine` serves it through the engine's HTTP API on its unix socket when
// one answers (a few ms, no process) and falls back to the docker CLI otherwise. Unit tests give the backend an
// in-memory engine (test/fakes/docker-engine.ts) with the same rules.
import type { Scanned } from "../../secrets/copy-in";
import { formatIp, parseIPv4 } from "../../core/addresses";
import { SbxError } from "../../core/errors";
import { streamRun, type Exec, type StreamedRun } from "../../sys/exec";
import { createRequestFromArgs, LABEL, limitHostConfig } from "./args";
import type { Limits } from "../../core/limits";
import { engineJson, engineMessage } from "./engine-exec";

/** A container as sbx reads it: its status and the labels that say whose it is. */
export interface Seen {
  status: string;
  root: string;
  dir: string;
  /** The container's first process on the host (0 when it does not run): its cgroups hold the limit counters. */
  pid: number;
  /** The kernel's OOM killer killed the container's first process (it stopped for lack of memory). */
  oomKilled: boolean;
}

/** Pure: an image id as the engine gives it (`sha256:<64 hex>`), or "" for anything else. */
export function imageIdOf(v: unknown): string {
  return typeof v === "string" && /^sha256:[0-9a-f]{64}$/.test(v) ? v : "";
}

export interface Found {
  kind: "container" | "volume";
  name: string;
  id: string;
  sandbox: string;
  dir: string;
  repo: string;
  state: string;
  /** A container's role label (a sandbox's own has none or `sandbox`; a service's is `service`). */
  role?: string;
  /** A service container's: its service's name, and the engine's status line ("Up 3 minutes (healthy)", "Exited (1) …"). */
  service?: string;
  status?: string;
}

export interface LogsAndState {
  logs: string;
  running: boolean;
  exitCode: number;
}

export interface Engine {
  /** A container's status and ownership labels; null when there is none of that name; throws when the engine does not answer. */
  seen(name: string): Promise<Seen | null>;
  /** Makes a container from `docker create` argv (dockerCreateArgs); a name in use is an error. */
  createContainer(argv: string[]): Promise<void>;
  /** Makes a named volume; one that exists is left as it is. Both forms of the same request. */
  createVolume(req: { argv: string[]; body: Record<string, unknown> }): Promise<void>;
  /** Extracts a tar at / in a container (made, not necessarily started): only one the copy-in door built (secrets/copy-in.ts). */
  putArchive(name: string, tar: Scanned<Uint8Array>): Promise<void>;
  /** One path of a container (made, not necessarily started) as the engine archives it: a tar; null when it is not there. */
  getArchive(name: string, path: string): Promise<Uint8Array | null>;
  /**
   * The id of a container's image (`sha256:…`, a hash of its content: what the image holds never changes under it), or ""
   * when it cannot be had in one API round trip (no API socket: no CLI process is started for it).
   */
  imageOf(name: string): Promise<string>;
  start(name: string): Promise<void>;
  stop(name: string, timeoutS: number): Promise<void>;
  /** Changes a container's resource limits, running or not (`none` takes a limit away). */
  update(name: string, limits: Limits): Promise<void>;
  /** Removes a container, running or not. */
  removeContainer(name: string): Promise<void>;
  /** Removes a volume; one a container still uses is an error. */
  removeVolume(name: string): Promise<void>;
  /** Names of the volumes with every one of these labels (`k=v`). */
  volumes(labels: string[]): Promise<string[]>;
  /** This state root's containers and volumes (label sbx.root=<root>); cleanup containers left out. */
  found(root: string): Promise<Found[]>;
  /** A container's log since `since` (epoch s) and whether it still runs. */
  logsAndState(name: string, since?: number): Promise<LogsAndState>;
  /** Follows a container's log until `text` appears (true), the log ends, or `until` (epoch ms) passes (false). */
  followLogsFor(name: string, text: string, until: number, since?: number): Promise<boolean>;
  /** Which of these absolute paths exist in a container. */
  pathsExist(name: string, paths: readonly string[], user: { uid: number; gid: number }): Promise<Set<string>>;
  /** Runs a throwaway container to its end (`docker run --rm` argv). */
  runToEnd(argv: string[]): Promise<{ exitCode: number; stderr: string }>;
  /** Runs argv in a running container as `user` (uid:gid), `env` added, stdin given whole, stdout as bytes (`docker exec -i`). */
  execStream(name: string, user: string, env: Record<string, string>, argv: readonly string[], stdin?: string): StreamedRun;
  /** Runs a throwaway container (`docker run --rm -i` argv) with stdin given whole and stdout as bytes. */
  runStream(argv: readonly string[], stdin?: string): StreamedRun;
  /** Ids of the images with this label. */
  imagesLabelled(label: string): Promise<string[]>;
  /** Whether an image of this tag exists. */
  imageExists(tag: string): Promise<boolean>;
  /**
   * Builds an image from `docker build … -` argv (dockerBuildArgs) with `context` (a tar) on its stdin, its output to
   * `onOutput` as it comes; the exit code.
   */
  build(argv: string[], onOutput: (chunk: string) => void, context: ReadableStream<Uint8Array>, env?: Record<string, string>): Promise<number>;
  /** The IPv4 gateway of the engine's default bridge network (where the classic builder's RUN steps run), or null. */
  bridgeGateway(): Promise<string | null>;
}

/** Pure: the IPv4 gateway of a network's IPAM config (GET /networks/bridge, or `docker network inspect`), or null. */
export function gatewayOf(ipamConfig: unknown): string | null {
  if (!Array.isArray(ipamConfig)) return null;
  const v4 = /^[0-9]{1,3}(\.[0-9]{1,3}){3}$/;
  for (const c of ipamConfig as { Gateway?: unknown }[]) {
    const g = c?.Gateway;
    if (typeof g === "string" && v4.test(g)) return g;
  }
  // dockerd 20.10 may record only the subnet for the default bridge (seen on a fresh machine where it made docker0 at
  // its start): the bridge then holds the subnet's first address, which it takes unless `--bip` names another (and
  // then the Gateway is recorded). A relay that cannot listen there says so (doctor's `image builds` line).
  for (const c of ipamConfig as { Subnet?: unknown }[]) {
    const m = typeof c?.Subnet === "string" ? /^([0-9.]+)\/([0-9]{1,2})$/.exec(c.Subnet) : null;
    const ip = m ? parseIPv4(m[1]!) : null;
    const prefix = Number(m?.[2]);
    if (!ip || prefix > 30) continue;
    // The network's first address: the host bits cleared, then the last one set (a prefix of 30 or less has two).
    const first = ip.map((b, i) => b & (0xff << Math.max(0, Math.min(8, 8 * (i + 1) - prefix)) & 0xff));
    first[3] = first[3]! | 1;
    const g = formatIp(first);
    if (!g.startsWith("127.") && g !== "0.0.0.1") return g;
  }
  return null;
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
  for (const c of containers as { Names?: unknown; Labels?: Record<string, unknown> | null; State?: unknown; Status?: unknown }[]) {
    const l = c?.Labels ?? {};
    if (!Array.isArray(c?.Names) || typeof c.Names[0] !== "string" || typeof c.State !== "string") return undefined;
    const role = str(l[LABEL.role]);
    if (role === "cleanup" || role === "git") continue;
    out.push({
      kind: "container", name: c.Names[0].replace(/^\//, ""), sandbox: str(l[LABEL.sandbox]), dir: str(l[LABEL.dir]), repo: str(l[LABEL.repo]), id: str(l[LABEL.name]), state: c.State, role,
      ...(role === "service" ? { service: str(l[LABEL.service]), status: str(c.Status) } : {}),
    });
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

/** The engine through its API on `apiSocket` when that answers, else through the docker CLI. */
export class DockerEngine implements Engine {
  constructor(
    private readonly exec: Exec,
    readonly apiSocket: string | undefined,
  ) {}

  /**
   * POST <path> on the engine socket with a JSON body: true when the engine did it (2xx, or 304 "already so"), false
   * when the API cannot answer (then the caller runs the docker CLI). An engine that answers with an error throws it.
   */
  private async apiPost(path: string, body?: unknown): Promise<boolean> {
    const sock = this.apiSocket;
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
   * API: GET /containers/<name>/json (404: absent); else runs:
   * docker inspect --type container --format '{{.State.Status}}\t{{index .Config.Labels "sbx.root"}}\t…' <name>
   */
  async seen(name: string): Promise<Seen | null> {
    const sock = this.apiSocket;
    if (sock !== undefined) {
      try {
        const res = await fetch(`http://docker/containers/${encodeURIComponent(name)}/json`, { unix: sock } as RequestInit);
        if (res.status === 404) return null;
        if (res.ok) {
          const body = (await res.json()) as { State?: { Status?: unknown; Pid?: unknown; OOMKilled?: unknown }; Config?: { Labels?: Record<string, unknown> | null } };
          if (typeof body.State?.Status === "string") {
            const l = body.Config?.Labels ?? {};
            const str = (v: unknown) => (typeof v === "string" ? v : "");
            const pid = typeof body.State.Pid === "number" ? body.State.Pid : 0;
            return { status: body.State.Status, root: str(l[LABEL.root]), dir: str(l[LABEL.dir]), pid, oomKilled: body.State.OOMKilled === true };
          }
        }
      } catch {
        /* the CLI below */
      }
    }
    const r = await this.exec.run(
      ["docker", "inspect", "--type", "container", "--format", `{{.State.Status}}\t{{index .Config.Labels "${LABEL.root}"}}\t{{index .Config.Labels "${LABEL.dir}"}}\t{{.State.Pid}}\t{{.State.OOMKilled}}`, name],
      { check: false },
    );
    if (r.exitCode !== 0) {
      // Only "no such container" means absent. An engine that does not answer is not an absent container: taking it
      // for one would show sandboxes as gone, and let a remove drop a row whose container still runs.
      if (/no such (container|object)/i.test(r.stderr)) return null;
      throw new SbxError("unavailable", `the Docker engine did not answer: ${r.stderr.trim().split("\n")[0] || `docker inspect exited ${r.exitCode}`}`, {
        hint: "Start the engine (sudo systemctl start docker, or dockerd), then retry; `sbx doctor` checks the setup.",
      });
    }
    const [status = "", root = "", dir = "", pid = "0", oom = "false"] = r.stdout.trim().split("\t");
    return { status, root: root === "<no value>" ? "" : root, dir: dir === "<no value>" ? "" : dir, pid: /^\d+$/.test(pid) ? Number(pid) : 0, oomKilled: oom === "true" };
  }

  /** API: GET /containers/<name>/json (its Image); "" without an API socket, or when it does not answer so. */
  async imageOf(name: string): Promise<string> {
    const sock = this.apiSocket;
    if (sock === undefined) return "";
    try {
      const res = await fetch(`http://docker/containers/${encodeURIComponent(name)}/json`, { unix: sock } as RequestInit);
      if (!res.ok) return "";
      return imageIdOf(((await res.json()) as { Image?: unknown }).Image);
    } catch {
      return "";
    }
  }

  /** API: POST /containers/create?name=<name> (the argv's request, translated: ≈30 ms less than a CLI); else runs argv. */
  async createContainer(argv: string[]): Promise<void> {
    const req = createRequestFromArgs(argv);
    if (await this.apiPost(`/containers/create?name=${encodeURIComponent(req.name)}`, req.body)) return;
    await this.exec.run(argv);
  }

  /**
   * A volume create of an existing name returns that volume unchanged (measured on 20.10, CLI and API).
   * API: POST /volumes/create; else runs: docker volume create --opt type=overlay …
   */
  async createVolume(req: { argv: string[]; body: Record<string, unknown> }): Promise<void> {
    if (await this.apiPost("/volumes/create", req.body)) return;
    await this.exec.run(req.argv);
  }

  /** API: PUT /containers/<name>/archive?path=/ (what `docker cp -` sends, without the process); else runs: docker cp - <name>:/ */
  async putArchive(name: string, tar: Scanned<Uint8Array>): Promise<void> {
    const sock = this.apiSocket;
    if (sock !== undefined) {
      try {
        const res = await fetch(`http://docker/containers/${encodeURIComponent(name)}/archive?path=%2F&noOverwriteDirNonDir=true`, {
          method: "PUT",
          unix: sock,
          body: tar,
          headers: { "content-type": "application/x-tar" },
        } as RequestInit);
        await res.arrayBuffer();
        if (res.ok) return;
      } catch {
        /* the CLI below */
      }
    }
    await this.exec.run(["docker", "cp", "-", `${name}:/`], { stdin: tar });
  }

  /** API: GET /containers/<name>/archive?path=<p> (200: the tar, 404: null); else runs: docker cp <name>:<p> - (throws when neither says) */
  async getArchive(name: string, path: string): Promise<Uint8Array | null> {
    const sock = this.apiSocket;
    if (sock !== undefined) {
      try {
        const res = await fetch(`http://docker/containers/${encodeURIComponent(name)}/archive?path=${encodeURIComponent(path)}`, { unix: sock } as RequestInit);
        const body = new Uint8Array(await res.arrayBuffer());
        if (res.status === 200) return body;
        if (res.status === 404) return null;
      } catch {
        /* the CLI below */
      }
    }
    const run = streamRun(this.exec, ["docker", "cp", `${name}:${path}`, "-"], { timeoutMs: 60_000 });
    const [bytes, r] = await Promise.all([new Response(run.stdout).arrayBuffer(), run.done]);
    if (r.exitCode === 0) return new Uint8Array(bytes);
    if (/Could not find the file|No such file or directory/i.test(r.stderr)) return null;
    throw new SbxError("exec_failed", `docker cp ${name}:${path} failed: ${r.stderr.trim()}`);
  }

  /** API: POST /containers/<name>/start; else runs: docker start <name> */
  async start(name: string): Promise<void> {
    if (await this.apiPost(`/containers/${encodeURIComponent(name)}/start`)) return;
    await this.exec.run(["docker", "start", name]);
  }

  /** runs: docker stop --time <s> <name> */
  async stop(name: string, timeoutS: number): Promise<void> {
    await this.exec.run(["docker", "stop", "--time", String(timeoutS), name]);
  }

  /**
   * API: POST /containers/<name>/update; else runs: docker update --memory … --memory-swap … --cpus … --pids-limit … <name>
   * (`none` as 0 / -1, which take a limit away).
   */
  async update(name: string, limits: Limits): Promise<void> {
    if (await this.apiPost(`/containers/${encodeURIComponent(name)}/update`, limitHostConfig(limits))) return;
    const h = limitHostConfig(limits);
    await this.exec.run(["docker", "update", "--memory", String(h.Memory), "--memory-swap", String(h.MemorySwap), "--cpus", String(h.NanoCpus / 1e9), "--pids-limit", String(h.PidsLimit), name]);
  }

  /** runs: docker rm --force <name> */
  async removeContainer(name: string): Promise<void> {
    await this.exec.run(["docker", "rm", "--force", name]);
  }

  /** runs: docker volume rm --force <name> */
  async removeVolume(name: string): Promise<void> {
    await this.exec.run(["docker", "volume", "rm", "--force", name]);
  }

  /** runs: docker volume ls --quiet --filter label=<k=v> … */
  async volumes(labels: string[]): Promise<string[]> {
    const r = await this.exec.run(["docker", "volume", "ls", "--quiet", ...labels.flatMap((l) => ["--filter", `label=${l}`])]);
    return r.stdout.split("\n").map((s) => s.trim()).filter(Boolean);
  }

  /**
   * API: GET /containers/json?all=1&filters=…, GET /volumes?filters=…; else runs: docker ps --all --filter
   * label=sbx.root=<hash> --format …; docker volume ls --filter label=sbx.root=<hash> --format …
   */
  async found(root: string): Promise<Found[]> {
    const sock = this.apiSocket;
    if (sock !== undefined) {
      const filters = encodeURIComponent(JSON.stringify({ label: [`${LABEL.root}=${root}`, LABEL.sandbox] }));
      try {
        const [c, v] = await Promise.all([engineJson(sock, "GET", `/containers/json?all=1&filters=${filters}`), engineJson(sock, "GET", `/volumes?filters=${filters}`)]);
        if (c.status === 200 && v.status === 200) {
          const fast = foundFromApi(c.json, v.json);
          if (fast !== undefined) return fast;
        }
      } catch {
        /* the CLI below */
      }
    }
    const fmt = (fields: string[]) => fields.join("\t");
    const lbl = (k: string) => `{{.Label "${k}"}}`;
    const c = await this.exec.run([
      "docker", "ps", "--all", "--no-trunc", "--filter", `label=${LABEL.root}=${root}`, "--filter", `label=${LABEL.sandbox}`,
      "--format", fmt(["{{.Names}}", lbl(LABEL.sandbox), lbl(LABEL.dir), lbl(LABEL.repo), lbl(LABEL.name), "{{.State}}", lbl(LABEL.role), lbl(LABEL.service), "{{.Status}}"]),
    ]);
    const v = await this.exec.run([
      "docker", "volume", "ls", "--filter", `label=${LABEL.root}=${root}`, "--filter", `label=${LABEL.sandbox}`,
      "--format", fmt(["{{.Name}}", lbl(LABEL.sandbox), lbl(LABEL.dir), lbl(LABEL.repo), lbl(LABEL.name)]),
    ]);
    const rows = (s: string) => s.split("\n").filter((l) => l.trim() !== "").map((l) => l.split("\t"));
    const out: Found[] = [];
    for (const [name = "", sandbox = "", dir = "", repo = "", sname = "", state = "", role = "", service = "", status = ""] of rows(c.stdout)) {
      if (role === "cleanup" || role === "git") continue;
      out.push({ kind: "container", name, sandbox, dir, repo, id: sname, state, role, ...(role === "service" ? { service, status } : {}) });
    }
    for (const [name = "", sandbox = "", dir = "", repo = "", sname = ""] of rows(v.stdout)) {
      out.push({ kind: "volume", name, sandbox, dir, repo, id: sname, state: "" });
    }
    return out;
  }

  /** API: GET /containers/<name>/logs, GET /containers/<name>/json; else runs: docker logs <name>; docker inspect … */
  async logsAndState(name: string, since?: number): Promise<LogsAndState> {
    const sock = this.apiSocket;
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
   * API: GET /containers/<name>/logs?follow=1[&since=…]. The stream is multiplexed (8-byte frame headers); a line
   * written at once sits inside one frame. False without an API (the caller polls logsAndState).
   */
  async followLogsFor(name: string, text: string, until: number, since?: number): Promise<boolean> {
    const sock = this.apiSocket;
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

  /**
   * API: HEAD /containers/<name>/archive?path=<p> (a stat, no process: ≈80 ms less than a docker exec); else runs:
   * docker exec --user <uid>:<gid> <name> ls -d -- <paths…>
   */
  async pathsExist(name: string, paths: readonly string[], user: { uid: number; gid: number }): Promise<Set<string>> {
    const sock = this.apiSocket;
    if (sock !== undefined) {
      try {
        const codes = await Promise.all(
          paths.map(async (p) => {
            const res = await fetch(`http://docker/containers/${encodeURIComponent(name)}/archive?path=${encodeURIComponent(p)}`, { method: "HEAD", unix: sock } as RequestInit);
            return [p, res.status] as const;
          }),
        );
        if (codes.every(([, c]) => c === 200 || c === 404)) return new Set(codes.filter(([, c]) => c === 200).map(([p]) => p));
      } catch {
        /* the CLI below */
      }
    }
    const r = await this.exec.run(["docker", "exec", "--user", `${user.uid}:${user.gid}`, name, "ls", "-d", "--", ...paths], { check: false });
    return new Set(r.stdout.split("\n").map((s) => s.trim()).filter((s) => paths.includes(s)));
  }

  /** runs: argv (docker run --rm …) */
  async runToEnd(argv: string[]): Promise<{ exitCode: number; stderr: string }> {
    const r = await this.exec.run(argv, { check: false });
    return { exitCode: r.exitCode, stderr: r.stderr };
  }

  /** runs: docker exec -i --user <user> --env K=V… <name> <argv…> */
  execStream(name: string, user: string, env: Record<string, string>, argv: readonly string[], stdin?: string): StreamedRun {
    const e = Object.entries(env).flatMap(([k, v]) => ["--env", `${k}=${v}`]);
    return streamRun(this.exec, ["docker", "exec", "-i", "--user", user, ...e, name, ...argv], { timeoutMs: 600_000, ...(stdin === undefined ? {} : { stdin }) });
  }

  /** runs: <argv> (docker run --rm -i …) */
  runStream(argv: readonly string[], stdin?: string): StreamedRun {
    return streamRun(this.exec, argv, { timeoutMs: 600_000, ...(stdin === undefined ? {} : { stdin }) });
  }

  /** API: GET /images/<tag>/json; else runs: docker image inspect <tag> */
  imageExists(tag: string): Promise<boolean> {
    return imageExists(this.exec, tag, this.apiSocket);
  }

  /**
   * runs: docker build … - with the context tar on its stdin. Its progress comes on stdout as each step runs, a
   * terminal or not (the classic builder's `Step n/m` lines and the steps' output; measured with client 28.2 on
   * engine 20.10); stderr (the builder's notices, errors) goes the same way.
   */
  async build(argv: string[], onOutput: (chunk: string) => void, context: ReadableStream<Uint8Array>, env?: Record<string, string>): Promise<number> {
    // `env`: the values of `--build-arg NAME` given without one (the proxy args: never in an argv others can read).
    const r = await this.exec.run(argv, { stdin: context, onStdout: onOutput, onStderr: onOutput, check: false, ...(env ? { env } : {}) });
    return r.exitCode;
  }

  /**
   * API: GET /networks/bridge (its IPAM config's IPv4 gateway); else runs:
   * docker network inspect --format '{{json .IPAM.Config}}' bridge
   */
  async bridgeGateway(): Promise<string | null> {
    const sock = this.apiSocket;
    if (sock !== undefined) {
      try {
        const r = await engineJson(sock, "GET", "/networks/bridge");
        if (r.status === 200) return gatewayOf((r.json as { IPAM?: { Config?: unknown } } | null)?.IPAM?.Config);
        if (r.status === 404) return null;
      } catch {
        /* the CLI below */
      }
    }
    const r = await this.exec.run(["docker", "network", "inspect", "--format", "{{json .IPAM.Config}}", "bridge"], { check: false });
    if (r.exitCode !== 0) return null;
    try {
      return gatewayOf(JSON.parse(r.stdout));
    } catch {
      return null;
    }
  }

  /** runs: docker image ls --quiet --filter label=<label> */
  async imagesLabelled(label: string): Promise<string[]> {
    const r = await this.exec.run(["docker", "image", "ls", "--quiet", "--filter", `label=${label}`], { check: false });
    return r.stdout.split("\n").map((s) => s.trim()).filter(Boolean);
  }
}

/**
 * Whether the image exists: GET /images/<tag>/json on the engine socket when given (200/404), else
 * runs: docker image inspect <tag> (its exit code says whether the image exists)
 */
export async function imageExists(exec: Exec, tag: string, apiSocket?: string): Promise<boolean> {
  if (apiSocket !== undefined) {
    try {
      const res = await fetch(`http://docker/images/${encodeURIComponent(tag)}/json`, { unix: apiSocket } as RequestInit);
      await res.arrayBuffer();
      if (res.status === 200) return true;
      if (res.status === 404) return false;
    } catch {
      /* fall back to the CLI */
    }
  }
  const r = await exec.run(["docker", "image", "inspect", "--format", "{{.Id}}", tag], { check: false });
  return r.exitCode === 0;
}
