// An in-memory Docker engine behind the backend's Engine seam, with the real engine's rules where sbx relies on them:
// a name in use refuses a create, an unknown image or container is an error, a volume in use cannot be removed, a
// started container's forwarder prints its ready line (or exits, as on a musl image), labels filter what is found.
import { createRequestFromArgs, FORWARDER_READY, LABEL, parseMountValue } from "../../src/drivers/docker/args";
import type { StreamedRun } from "../../src/sys/exec";
import type { Engine, Found, LogsAndState, Seen } from "../../src/drivers/docker/engine-client";
import { SbxError } from "../../src/core/errors";
import { tarArchive } from "../../src/core/tar";
import { cleanPath, dockerignoreMatcher, parseDockerignore } from "../../src/core/dockerignore";
import { lstatSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { join, posix, relative } from "node:path";
import { tarEntries } from "../support/tar-read";

/** One entry of a build context or an image's files. */
interface CtxEntry {
  type: "file" | "dir" | "symlink" | "other";
  content: Uint8Array;
  target: string;
}

/**
 * What the docker CLI sends of a context dir: every entry (links as links), less what its .dockerignore leaves out,
 * the Dockerfile (`dockerfile`, relative; null when outside) and .dockerignore always kept.
 */
function walkContext(dir: string, dockerfile: string | null): Map<string, CtxEntry> {
  let patterns: string[] = [];
  try {
    patterns = parseDockerignore(readFileSync(join(dir, ".dockerignore"), "utf8"));
  } catch {
    /* none */
  }
  const out = dockerignoreMatcher(patterns);
  const keep = new Set([".dockerignore", ...(dockerfile === null ? [] : [cleanPath(dockerfile)])]);
  const m = new Map<string, CtxEntry>();
  const walk = (rel: string) => {
    for (const n of readdirSync(join(dir, rel)).sort()) {
      const r = rel === "" ? n : `${rel}/${n}`;
      const st = lstatSync(join(dir, r));
      const left = out(r) && !keep.has(r);
      if (st.isDirectory()) {
        if (!left) m.set(r, { type: "dir", content: new Uint8Array(), target: "" });
        walk(r); // an exception may bring back what is under a left-out dir
      } else if (!left) {
        if (st.isSymbolicLink()) m.set(r, { type: "symlink", content: new Uint8Array(), target: readlinkSync(join(dir, r)) });
        else if (st.isFile()) m.set(r, { type: "file", content: readFileSync(join(dir, r)), target: "" });
      }
    }
  };
  walk("");
  return m;
}

/** The image's files from a Dockerfile's COPY/ADD steps (no `--from`; plain paths and `.`, no wildcards or URLs). */
function runCopies(dockerfile: string, ctx: Map<string, CtxEntry>): Map<string, CtxEntry> {
  const files = new Map<string, CtxEntry>();
  let workdir = "/";
  for (const line of dockerfile.replace(/\\\r?\n/g, " ").split(/\r?\n/)) {
    const m = /^\s*(COPY|ADD|WORKDIR)\s+(.*)$/i.exec(line);
    if (!m) continue;
    if (m[1]!.toUpperCase() === "WORKDIR") {
      workdir = posix.resolve(workdir, m[2]!.trim());
      continue;
    }
    let rest = m[2]!.trim();
    if (/(^|\s)--from=/.test(rest)) continue;
    while (/^--[a-z-]+=\S*\s+/.test(rest)) rest = rest.replace(/^--[a-z-]+=\S*\s+/, "");
    const args: string[] = rest.startsWith("[") ? (JSON.parse(rest) as string[]) : rest.split(/\s+/);
    const dest = args.pop()!;
    for (const src of args) {
      if (/[*?[]|^[a-z]+:\/\//i.test(src)) throw new Error(`fake engine: COPY/ADD ${src} (wildcards, URLs) is not modelled`);
      const from = cleanPath(src.replace(/^\/+/, ""));
      const abs = posix.resolve(workdir, dest);
      const hits = [...ctx].filter(([p]) => from === "." || p === from || p.startsWith(`${from}/`));
      if (hits.length === 0) throw new Error(`COPY failed: file not found in build context or excluded by .dockerignore: stat ${from}: file does not exist`);
      const single = hits.length === 1 && hits[0]![0] === from && hits[0]![1].type !== "dir";
      for (const [p, e] of hits) {
        const to = single ? (dest.endsWith("/") || args.length > 1 ? posix.join(abs, posix.basename(p)) : abs) : posix.join(abs, from === "." ? p : p.slice(from.length + 1));
        if (to !== abs || !single || e.type !== "dir") files.set(to, e);
      }
    }
  }
  return files;
}

interface Container {
  name: string;
  image: string;
  labels: Record<string, string>;
  volumes: string[];
  status: "created" | "running" | "exited";
  exitCode: number;
  log: { at: number; line: string }[];
  archives: Uint8Array[];
  /** HostConfig's limit fields as the create (or a later update) set them. */
  limits: { Memory?: number; MemorySwap?: number; NanoCpus?: number; PidsLimit?: number };
  /** The host pid a test says the container's first process has (its cgroup counters are read from it). */
  pid: number;
  oomKilled: boolean;
  /** Bind mounts, container path → host path: what a command inside sees where. */
  binds: Map<string, string>;
  /** Volume mounts, container path → volume name. */
  volumeAt: Map<string, string>;
  /** Its healthcheck's state, when it has one (healthy, unhealthy, starting). */
  health?: string;
}

interface Volume {
  name: string;
  labels: Record<string, string>;
  /** The local driver's options as created (an overlay's `o=lowerdir=…,upperdir=…,workdir=…`); fixed from then on. */
  opts: Record<string, string>;
}

const refused = (msg: string) => new SbxError("exec_failed", msg, { hint: "fake engine" });

export class FakeDockerEngine implements Engine {
  readonly containers = new Map<string, Container>();
  readonly volumesByName = new Map<string, Volume>();
  readonly images = new Map<string, Record<string, string>>();
  /** Paths every container's image has (resolveShell asks). */
  imagePaths = new Set(["/bin/sh", "/bin/bash", "/usr/bin/bash"]);
  /** What the next start does: the forwarder listens (the default) or the container exits at once with this code. */
  nextStartExits: { code: number; log: string } | null = null;
  /** Every call that changed the engine's state, in order. */
  readonly mutations: string[] = [];
  /** Builds that fail with this exit code and output (a bad Dockerfile). */
  failBuild: { code: number; output: string } | null = null;
  /** Each built image's own files, as its COPY/ADD steps put them there from the context it was sent (absolute path). */
  readonly builtFiles = new Map<string, Map<string, CtxEntry>>();
  /** Every build's context as the daemon received it: path → a file's text, or its type. */
  readonly builtContexts: Map<string, string>[] = [];
  /** The engine is down: every call fails as a client's does when nothing answers on the socket. */
  down = false;

  constructor(images: string[] = []) {
    for (const i of images) this.images.set(i, {});
  }

  private container(name: string): Container {
    const c = this.containers.get(name);
    if (!c) throw refused(`Error response from daemon: No such container: ${name}`);
    return c;
  }

  async seen(name: string): Promise<Seen | null> {
    if (this.down) throw new SbxError("unavailable", "the Docker engine did not answer: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?");
    const c = this.containers.get(name);
    return c ? { status: c.status, root: c.labels[LABEL.root] ?? "", dir: c.labels[LABEL.dir] ?? "", pid: c.status === "running" ? c.pid : 0, oomKilled: c.oomKilled } : null;
  }

  async createContainer(argv: string[]): Promise<void> {
    const { name, body } = createRequestFromArgs(argv);
    if (this.containers.has(name)) throw refused(`Conflict. The container name "/${name}" is already in use`);
    const image = String((body as { Image?: unknown }).Image ?? "");
    if (!this.images.has(image)) throw refused(`Error response from daemon: No such image: ${image}`);
    const hc = (body as { HostConfig?: { Mounts?: { Type?: string; Source?: string }[]; Memory?: number; MemorySwap?: number; NanoCpus?: number; PidsLimit?: number } }).HostConfig ?? {};
    const limits = Object.fromEntries((["Memory", "MemorySwap", "NanoCpus", "PidsLimit"] as const).flatMap((k) => (hc[k] === undefined ? [] : [[k, hc[k]]])));
    const volumes = (hc.Mounts ?? []).filter((m) => m.Type === "volume" && m.Source).map((m) => m.Source!);
    const binds = new Map((hc.Mounts ?? []).filter((m) => m.Type === "bind").map((m) => [String((m as { Target?: string }).Target), String(m.Source)]));
    const volumeAt = new Map((hc.Mounts ?? []).filter((m) => m.Type === "volume" && m.Source).map((m) => [String((m as { Target?: string }).Target), String(m.Source)]));
    // The real engine makes a named volume a create refers to when it is missing (unlabelled, default driver).
    for (const v of volumes) if (!this.volumesByName.has(v)) this.volumesByName.set(v, { name: v, labels: {}, opts: {} });
    const labels = ((body as { Labels?: Record<string, string> }).Labels ?? {}) as Record<string, string>;
    this.containers.set(name, { name, image, labels, volumes, status: "created", exitCode: 0, log: [], archives: [], limits, pid: 0, oomKilled: false, binds, volumeAt });
    this.mutations.push(`create ${name}`);
  }

  async createVolume(req: { argv: string[]; body: Record<string, unknown> }): Promise<void> {
    const name = String(req.body.Name ?? "");
    if (this.volumesByName.has(name)) return; // the real engine returns the existing volume unchanged
    this.volumesByName.set(name, { name, labels: (req.body.Labels ?? {}) as Record<string, string>, opts: (req.body.DriverOpts ?? {}) as Record<string, string> });
    this.mutations.push(`volume create ${name}`);
  }

  async putArchive(name: string, tar: Uint8Array): Promise<void> {
    this.container(name).archives.push(tar);
    this.mutations.push(`archive ${name}`);
  }

  /**
   * A container's image id as the real engine's is: a hash of what the image holds (here its tag and the files this fake
   * gives its containers), so an image whose files change is another image.
   */
  async imageOf(name: string): Promise<string> {
    const tag = this.container(name).image;
    const files = JSON.stringify([tag, [...this.imageFiles], [...(this.builtFiles.get(tag) ?? new Map())]]);
    return `sha256:${new Bun.CryptoHasher("sha256").update(files).digest("hex")}`;
  }

  /** Archive GETs answered, per path (what the backend reads of an image, and how often). */
  archiveReads: string[] = [];

  /** Files every container's image has (its base's), path → content (the archive GET answers a tar of one). */
  imageFiles = new Map<string, string>([["/etc/passwd", "root:x:0:0:root:/root:/bin/bash\n"], ["/etc/group", "root:x:0:\n"]]);

  async getArchive(name: string, path: string): Promise<Uint8Array | null> {
    this.archiveReads.push(path);
    const built = this.builtFiles.get(this.container(name).image)?.get(path);
    if (built !== undefined && built.type !== "file") return tarArchive([{ path: path.split("/").pop()!, type: "dir", mode: 0o755, uid: 0, gid: 0 }]);
    const content = built?.content ?? (this.imageFiles.has(path) ? new TextEncoder().encode(this.imageFiles.get(path)!) : undefined);
    if (content === undefined) return null;
    return tarArchive([{ path: path.split("/").pop()!, type: "file", mode: 0o644, uid: 0, gid: 0, content }]);
  }

  async start(name: string): Promise<void> {
    const c = this.container(name);
    if (c.status === "running") return; // 304
    const now = Date.now() / 1000;
    this.mutations.push(`start ${name}`);
    if (this.nextStartExits) {
      const { code, log } = this.nextStartExits;
      this.nextStartExits = null;
      c.status = "exited";
      c.exitCode = code;
      c.log.push({ at: now, line: log });
      return;
    }
    c.status = "running";
    c.log.push({ at: now, line: FORWARDER_READY });
  }

  async stop(name: string): Promise<void> {
    const c = this.container(name);
    if (c.status !== "running") return;
    c.status = "exited";
    c.exitCode = 143;
    this.mutations.push(`stop ${name}`);
  }

  async update(name: string, l: { memory: number | null; cpus: number | null; pids: number | null }): Promise<void> {
    const c = this.container(name);
    c.limits = { Memory: l.memory ?? 0, MemorySwap: l.memory ?? -1, NanoCpus: l.cpus === null ? 0 : Math.round(l.cpus * 1e9), PidsLimit: l.pids ?? -1 };
    this.mutations.push(`update ${name}`);
  }

  async removeContainer(name: string): Promise<void> {
    this.container(name);
    this.containers.delete(name);
    this.mutations.push(`rm ${name}`);
  }

  async removeVolume(name: string): Promise<void> {
    if (!this.volumesByName.has(name)) return; // --force: a missing volume is fine
    const user = [...this.containers.values()].find((c) => c.volumes.includes(name));
    if (user) throw refused(`Error response from daemon: remove ${name}: volume is in use - [${user.name}]`);
    this.volumesByName.delete(name);
    this.mutations.push(`volume rm ${name}`);
  }

  async volumes(labels: string[]): Promise<string[]> {
    const match = (l: Record<string, string>) => labels.every((kv) => (kv.includes("=") ? l[kv.slice(0, kv.indexOf("="))] === kv.slice(kv.indexOf("=") + 1) : kv in l));
    return [...this.volumesByName.values()].filter((v) => match(v.labels)).map((v) => v.name);
  }

  async found(root: string): Promise<Found[]> {
    const ours = (l: Record<string, string>) => l[LABEL.root] === root && LABEL.sandbox in l;
    const out: Found[] = [];
    for (const c of this.containers.values()) {
      if (!ours(c.labels) || c.labels[LABEL.role] === "cleanup") continue;
      const l = c.labels;
      const role = l[LABEL.role] ?? "";
      // The engine's status line, as the list answers it ("Up 2 seconds (healthy)", "Exited (3) 1 second ago").
      const status = c.status === "running" ? `Up 1 second${c.health ? ` (${c.health === "starting" ? "health: starting" : c.health})` : ""}` : `Exited (${c.exitCode}) 1 second ago`;
      out.push({ kind: "container", name: c.name, sandbox: l[LABEL.sandbox] ?? "", dir: l[LABEL.dir] ?? "", repo: l[LABEL.repo] ?? "", id: l[LABEL.name] ?? "", state: c.status, ...(role === "service" ? { role, service: l["sbx.service"] ?? "", status } : {}) });
    }
    for (const v of this.volumesByName.values()) {
      if (!ours(v.labels)) continue;
      const l = v.labels;
      out.push({ kind: "volume", name: v.name, sandbox: l[LABEL.sandbox] ?? "", dir: l[LABEL.dir] ?? "", repo: l[LABEL.repo] ?? "", id: l[LABEL.name] ?? "", state: "" });
    }
    return out;
  }

  async logsAndState(name: string, since?: number): Promise<LogsAndState> {
    const c = this.container(name);
    const logs = c.log.filter((l) => since === undefined || l.at >= since).map((l) => `${l.line}\n`).join("");
    return { logs, running: c.status === "running", exitCode: c.exitCode };
  }

  async followLogsFor(name: string, text: string, _until: number, since?: number): Promise<boolean> {
    return (await this.logsAndState(name, since)).logs.includes(text);
  }

  async pathsExist(name: string, paths: readonly string[]): Promise<Set<string>> {
    this.container(name);
    return new Set(paths.filter((p) => this.imagePaths.has(p)));
  }

  async runToEnd(argv: string[]): Promise<{ exitCode: number; stderr: string }> {
    this.mutations.push(`run ${argv.slice(2).join(" ")}`);
    return { exitCode: 0, stderr: "" };
  }

  /**
   * A command inside: only git, run for real by the test process in the host dir its `-C` path is bound from (what
   * the container's git would see there), as this uid.
   */
  execStream(name: string, _user: string, env: Record<string, string>, argv: readonly string[], stdin?: string): StreamedRun {
    const c = this.container(name);
    if (c.status !== "running") throw refused(`Error response from daemon: container ${name} is not running`);
    this.mutations.push(`exec ${name} ${argv.filter((a) => !a.startsWith("/")).slice(0, 8).join(" ")}`);
    return this.gitThrough(c.binds, argv, env, stdin);
  }

  /** A throwaway container (`docker run --rm -i … --entrypoint git <image> …`): its binds from the argv. */
  runStream(argv: readonly string[], stdin?: string): StreamedRun {
    const binds = new Map<string, string>();
    argv.forEach((a, i) => {
      if (argv[i - 1] !== "--mount") return;
      const f = Object.fromEntries(parseMountValue(a).map((x) => x.split("=") as [string, string]));
      if (f.type === "bind" && f.src && f.dst) binds.set(f.dst, f.src);
    });
    const at = argv.indexOf("--entrypoint");
    const image = argv[at + 2] ?? "";
    if (!this.images.has(image)) throw refused(`Unable to find image '${image}' locally`);
    this.mutations.push(`run-git ${image}`);
    return this.gitThrough(binds, [argv[at + 1]!, ...argv.slice(at + 3)], { PATH: process.env.PATH ?? "/usr/bin:/bin" }, stdin);
  }

  private gitThrough(binds: Map<string, string>, argv: readonly string[], env: Record<string, string>, stdin?: string): StreamedRun {
    if (argv[0] !== "git") throw refused(`fake engine: only git runs inside (${argv[0]})`);
    const map = (p: string) => {
      const t = [...binds.keys()].filter((d) => p === d || p.startsWith(`${d}/`)).sort((a, b) => b.length - a.length)[0];
      return t === undefined ? `/nonexistent-in-container${p}` : `${binds.get(t)}${p.slice(t.length)}`;
    };
    const args = argv.map((a, i) => (argv[i - 1] === "-C" ? map(a) : a));
    const p = Bun.spawn([...args], { env: { ...env, PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: "/nonexistent" }, stdin: stdin === undefined ? "ignore" : Buffer.from(stdin), stdout: "pipe", stderr: "pipe" });
    return { stdout: p.stdout, done: Promise.all([p.exited, new Response(p.stderr).text()]).then(([exitCode, stderr]) => ({ exitCode, stderr })) };
  }

  async imagesLabelled(label: string): Promise<string[]> {
    const [k = "", v = ""] = label.split("=");
    return [...this.images.entries()].filter(([, l]) => l[k] === v).map(([tag]) => tag);
  }

  async imageExists(tag: string): Promise<boolean> {
    return this.images.has(tag);
  }

  /**
   * The build as the docker CLI and the classic builder do it: the context is the tar sent on stdin (argv ends with
   * `-`, `--file` names the Dockerfile inside it) or a host dir the CLI walks (its .dockerignore applied, the Dockerfile
   * and .dockerignore always sent); the daemon drops those two when .dockerignore names them; then each COPY/ADD
   * (not `--from`) puts what it names into the image's files (`builtFiles`), which is what a container of it reads.
   */
  /** The default bridge's gateway this engine names (null: none). */
  gateway: string | null = null;
  /** Each build's environment for the CLI (the values of `--build-arg NAME` given without one). */
  readonly builtEnvs: Record<string, string>[] = [];

  async bridgeGateway(): Promise<string | null> {
    return this.gateway;
  }

  async build(argv: string[], onOutput: (chunk: string) => void, context?: ReadableStream<Uint8Array>, env: Record<string, string> = {}): Promise<number> {
    this.builtEnvs.push(env);
    // The CLI's rule: `--build-arg NAME` without a value takes NAME's value from its environment (the arg is lost when
    // that has none): sbx always gives it, so a name without one is refused here.
    for (const [i, a] of argv.entries()) if (argv[i - 1] === "--build-arg" && !a.includes("=") && env[a] === undefined) throw refused(`fake engine: --build-arg ${a} has no value in the CLI's environment`);
    const sent = context === undefined ? null : new Uint8Array(await new Response(context).arrayBuffer());
    if (this.failBuild) {
      onOutput(this.failBuild.output);
      return this.failBuild.code;
    }
    const tag = argv[argv.indexOf("--tag") + 1] ?? "";
    const file = argv[argv.indexOf("--file") + 1] ?? "Dockerfile";
    const last = argv.at(-1) ?? "";
    let ctx: Map<string, CtxEntry>;
    let dockerfile: string;
    if (last === "-") {
      if (sent === null) throw refused("fake engine: `docker build -` read no context on stdin");
      ctx = new Map(tarEntries(sent).map((e) => [cleanPath(e.path), { type: e.type, content: e.content, target: e.target }]));
      const df = ctx.get(cleanPath(file));
      if (!df || df.type !== "file") {
        onOutput(`unable to prepare context: Cannot locate specified Dockerfile: ${file}\n`);
        return 1;
      }
      dockerfile = new TextDecoder().decode(df.content);
    } else {
      const rel = relative(last, file);
      dockerfile = readFileSync(file, "utf8");
      ctx = walkContext(last, rel.startsWith("..") ? null : rel);
      // The CLI adds a Dockerfile from outside the context under a random name, listed in .dockerignore.
    }
    this.builtContexts.push(new Map([...ctx].map(([k, v]) => [k, v.type === "file" ? new TextDecoder().decode(v.content) : v.type])));
    // The daemon's removeDockerfile: .dockerignore and the Dockerfile go when .dockerignore names them.
    const di = ctx.get(".dockerignore");
    if (di?.type === "file") {
      const out = dockerignoreMatcher(parseDockerignore(new TextDecoder().decode(di.content)));
      for (const f of [".dockerignore", last === "-" ? cleanPath(file) : cleanPath(relative(last, file))]) if (out(f)) ctx.delete(f);
    }
    let files: Map<string, CtxEntry>;
    try {
      files = runCopies(dockerfile, ctx);
    } catch (e) {
      onOutput(`${(e as Error).message}\n`);
      return 1;
    }
    // The builder's rule: a base it does not have is fetched from a registry (always asked again with --pull).
    const stages: string[] = [];
    for (const m of dockerfile.matchAll(/^\s*FROM\s+(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?/gim)) {
      const base = m[1]!;
      if (base !== "scratch" && !stages.includes(base.toLowerCase()) && (argv.includes("--pull") || !this.images.has(base))) {
        this.mutations.push(`pull ${base}`);
        this.images.set(base, {});
      }
      if (m[2]) stages.push(m[2].toLowerCase());
    }
    onOutput(`Step 1/1 : FROM sbx-base\nSuccessfully tagged ${tag}\n`);
    const labels = Object.fromEntries(argv.flatMap((a, i) => (argv[i - 1] === "--label" ? [a.split("=") as [string, string]] : [])));
    this.images.set(tag, labels);
    this.builtFiles.set(tag, files);
    this.mutations.push(`build ${tag}`);
    return 0;
  }

  /** A file of an image as a container of it reads it (what its COPY/ADD steps put there), or null. */
  imageFile(tag: string, path: string): string | null {
    const e = this.builtFiles.get(tag)?.get(path);
    return e?.type === "file" ? new TextDecoder().decode(e.content) : null;
  }

}
