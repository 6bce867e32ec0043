// Render half of the Docker backend: pure functions from a SandboxSpec to docker argv, labels, overlay options and seed entries.
import { createHash } from "node:crypto";
import { basename, dirname, join, posix } from "node:path";
import type { SandboxSpec, ShellRequest } from "../../core/spec";
import { sandboxLayout } from "../../workspace/layout";
import { DEFAULT_FORWARDER_PORT } from "../../core/egress";
import type { TarEntry } from "../../core/tar";
import { STUB_ADDRESS, TRANSPARENT_PORTS, transparentOn } from "../../core/transparent";
import { MAIN_RUNTIME_ENV } from "../../../shims/exec-agent";
import { inSandboxArgv, SESSION_VAR } from "./start-line";
import { dockerContainerName } from "../../core/backend-kind";

export { sandboxLayout };

/** Labels on every container and volume sbx makes, so it finds its own by label and never by name guessing. */
export const LABEL = {
  sandbox: "sbx.sandbox",
  name: "sbx.name",
  repo: "sbx.repo",
  dir: "sbx.dir",
  role: "sbx.role",
  /** A service container's service name (its role is `service`). */
  service: "sbx.service",
  /** sha256 of the state root's sandbox dir: one sbx install's things, never another user's or another root's. */
  root: "sbx.root",
} as const;

/** The built sandbox-main's name in its dir (main-bundle.ts), which appears at RUNTIME_MOUNT.main. */
export const MAIN_BUNDLE = "sandbox-main.js";

/** Where the per-sandbox socket dir (proxy, bridge) appears inside the container. */
export const SOCKET_MOUNT = "/run/sbx";

/** Where the host's Bun and sbx's shims dir appear inside, both read-only: the image needs nothing of sbx. */
export const RUNTIME_MOUNT = {
  bun: "/opt/sbx/bin/bun",
  shims: "/opt/sbx/shims",
  /** The host's agent cache (src/agents/cache.ts): the launchers in bin/, the agents and Node.js they run. */
  agents: "/opt/sbx/agents",
  main: "/opt/sbx/main", // sandbox-main built into one file (main-bundle.ts): nothing transpiled at a start
} as const;

/**
 * The PATH inside a container: the git/gh shims first (network git goes to the bridge), the agent launchers (each
 * runs the image's own agent when it has one, else sbx's cached one), then the usual system dirs.
 */
export const SANDBOX_PATH = `${RUNTIME_MOUNT.shims}:${RUNTIME_MOUNT.agents}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`;

/** The PATH for git that must NOT go through the shims (host → clone ref sync runs the image's own git). */
export const PLAIN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/**
 * Where sbx's login-shell snippets appear inside, read-only. Login shells reset PATH (Debian's /etc/profile sets it
 * from scratch), which would put the image's git before the shims; these put the shims back first. A dir the image
 * lacks is made in the container's own layer, never in the image.
 */
export const PROFILE_MOUNT = {
  sh: "/etc/profile.d/zz-sbx-shims.sh",
  fish: "/etc/fish/conf.d/sbx-shims.fish",
} as const;

/**
 * How a sandbox sees the host's Claude Code login (`--claude-auth`). `inject`: the LLM proxy adds the host's key or
 * OAuth token on the way out, and `~/.claude/.credentials.json` inside is an empty read-only file. `overlay`: the
 * host's credentials file is visible (and readable by the agent) through the ~/.claude overlay.
 */
export type ClaudeAuth = "inject" | "overlay";

/** Pure: the in-sandbox path masked in inject mode, or null (overlay mode, or no ~/.claude overlay). */
export function claudeCredentialsMask(spec: Pick<SandboxSpec, "hostUser" | "overlays" | "options">): string | null {
  if (spec.options.driver !== "docker" || spec.options.claudeAuth !== "inject") return null;
  const claude = posix.join(spec.hostUser.home, ".claude");
  return spec.overlays.includes(claude) ? posix.join(claude, ".credentials.json") : null;
}

/** Pure: the POSIX-sh snippet (/etc/profile sources /etc/profile.d/*.sh): the shims dir first on PATH. */
export function shProfileSnippet(shims: string = RUNTIME_MOUNT.shims): string {
  return [
    "# sbx (mounted read-only): the git/gh shims first on PATH, so network git goes through the host's bridge.",
    `case "$PATH" in`,
    `  ${shims}:*) ;;`,
    `  *) PATH="${shims}:$PATH" ;;`,
    "esac",
    "# The agent launchers (sbx run AGENT), after the image's own dirs.",
    `case ":$PATH:" in`,
    `  *:${RUNTIME_MOUNT.agents}/bin:*) ;;`,
    `  *) PATH="$PATH:${RUNTIME_MOUNT.agents}/bin" ;;`,
    "esac",
    "export PATH",
    "",
  ].join("\n");
}

/**
 * Pure: the fish snippet (conf.d runs in every fish, login or not). It keeps the shims first whenever PATH changes,
 * since the user's own config.fish (overlaid from the host) runs after conf.d and may set PATH from scratch.
 */
export function fishProfileSnippet(shims: string = RUNTIME_MOUNT.shims): string {
  return [
    "# sbx (mounted read-only): the git/gh shims first on PATH, so network git goes through the host's bridge.",
    "function __sbx_shims_first --on-variable PATH",
    `    if test "$PATH[1]" != ${shims}`,
    `        set -gx PATH ${shims} (string match -v -- ${shims} $PATH)`,
    "    end",
    "end",
    "__sbx_shims_first",
    "# The agent launchers (sbx run AGENT), after the image's own dirs.",
    `contains -- ${RUNTIME_MOUNT.agents}/bin $PATH; or set -gx PATH $PATH ${RUNTIME_MOUNT.agents}/bin`,
    "",
  ].join("\n");
}

/** Host paths of what RUNTIME_MOUNT shows inside. */
export interface RuntimeSources {
  bun: string;
  shims: string;
  /** The agent cache (absent: no agents are offered, as for a backend made without one). */
  agents?: string;
  /** The dir of the built sandbox-main (main-bundle.ts; absent: the container runs shims/sandbox-main.ts). */
  main?: string;
}

/** Pure: the value of the `sbx.root` label for a state root's sandbox dir. */
export function rootLabel(sandboxRoot: string): string {
  return createHash("sha256").update(sandboxRoot).digest("hex");
}

/** A sandbox's container (the CLI's `sbx code` names it the same way: core/backend-kind.ts). */
export const containerName = dockerContainerName;

function short(s: string): string {
  return createHash("sha256").update(s).digest("hex").slice(0, 10);
}

export function labels(spec: Pick<SandboxSpec, "id" | "name" | "repo" | "dir">, role: string, root: string): Record<string, string> {
  return {
    [LABEL.sandbox]: spec.id,
    [LABEL.name]: spec.name,
    [LABEL.repo]: spec.repo,
    [LABEL.dir]: spec.dir,
    [LABEL.role]: role,
    [LABEL.root]: root,
  };
}

function labelArgs(l: Record<string, string>): string[] {
  return Object.entries(l).flatMap(([k, v]) => ["--label", `${k}=${v}`]);
}

/** Escapes a path for overlayfs mount options: ',' separates options and ':' separates lower dirs. */
export function escapeOverlayPath(p: string): string {
  return p.replace(/[\\,:]/g, (c) => `\\${c}`);
}

export interface OverlayPlan {
  /** The host dir overlaid, and the path it appears at inside (the same). */
  target: string;
  volume: string;
  /**
   * The view sbx builds of the host dir for each new container (secrets/copy-in.ts: scanned, every hit removed, no
   * link followed, bounded), never the host dir itself: what the host's dir holds later reaches a sandbox only through
   * the next build, and its scan.
   */
  lower: string;
  upper: string;
  work: string;
}

/** Pure: where one overlaid dir's volume, view (its lower dir) and upper/work dirs live, all in the sandbox dir. */
export function overlayPlan(spec: Pick<SandboxSpec, "id" | "dir">, target: string): OverlayPlan {
  const slug = `${basename(target).replace(/[^A-Za-z0-9._-]/g, "_").replace(/^\.+/, "") || "dir"}-${short(target)}`;
  const base = join(sandboxLayout(spec.dir).overlays, slug);
  return {
    target,
    // `vw`: a view for its lower dir (volumes made before views, `ov`, name the host dir, and are not reused).
    volume: `sbx-${spec.id}-vw-${short(target)}`,
    lower: join(base, "view"),
    upper: join(base, "upper"),
    work: join(base, "work"),
  };
}

/** Pure: the overlay mount options of an overlay volume (paths escaped for the kernel's option parser). */
function overlayOptions(plan: OverlayPlan): string {
  return `lowerdir=${escapeOverlayPath(plan.lower)},upperdir=${escapeOverlayPath(plan.upper)},workdir=${escapeOverlayPath(plan.work)}`;
}

/** runs (rendered): docker volume create --driver local --opt type=overlay --opt device=overlay --opt o=… <name> */
export function overlayVolumeCreateArgs(spec: SandboxSpec, plan: OverlayPlan, root: string): string[] {
  return [
    "docker", "volume", "create", "--driver", "local",
    "--opt", "type=overlay", "--opt", "device=overlay", "--opt", `o=${overlayOptions(plan)}`,
    ...labelArgs(labels(spec, "overlay", root)),
    plan.volume,
  ];
}

/** Pure: the body of POST /volumes/create for the same volume as overlayVolumeCreateArgs (same driver, options, labels). */
export function overlayVolumeCreateBody(spec: SandboxSpec, plan: OverlayPlan, root: string): Record<string, unknown> {
  return {
    Name: plan.volume,
    Driver: "local",
    DriverOpts: { type: "overlay", device: "overlay", o: overlayOptions(plan) },
    Labels: labels(spec, "overlay", root),
  };
}

/** One `--mount` value; fields holding ',' or '"' are CSV-quoted, which is how docker reads them. */
export function mountValue(fields: readonly (string | [string, string])[]): string {
  return fields
    .map((f) => {
      const s = Array.isArray(f) ? `${f[0]}=${f[1]}` : f;
      return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
    })
    .join(",");
}

/** The line the forwarder prints once it listens: the backend waits for it before calling a sandbox started. */
export const FORWARDER_READY = "sbx forwarder listening";

/**
 * The container's long-lived process (shims/sandbox-main.ts; `built`: main-bundle.ts's) on the host's Bun, read-only:
 * the egress forwarder, the sandbox's only way out (127.0.0.1:<port>, handed to the proxy over /run/sbx/listen.sock,
 * else relayed to /run/sbx/proxy.sock), and the exec agent, which dials /run/sbx/agent.sock to run the daemon's
 * non-terminal commands. `--init` reaps and forwards signals. The port comes from `spec.options.proxyPort` (default 3128).
 */
export function containerCommand(spec: SandboxSpec, built = false): string[] {
  const transparent = transparentOn(spec) ? ["--dns-stub", STUB_ADDRESS, "--transparent-ports", TRANSPARENT_PORTS.join(",")] : [];
  const main = built ? `${RUNTIME_MOUNT.main}/${MAIN_BUNDLE}` : `${RUNTIME_MOUNT.shims}/sandbox-main.ts`;
  return ["-c", MAIN_LAUNCH, "sbx-main", RUNTIME_MOUNT.bun, main, "--port", String(forwarderPort(spec)), ...transparent];
}


/**
 * Pure: the transparent path's `docker create` flags: the resolv.conf Docker writes names the forwarder's stub (a
 * loopback address of the container's own), and the namespaced sysctl lets the forwarder, as the sandbox's user,
 * bind 53, 80 and 443 in the container's own network namespace. No capability is added.
 */
export function transparentArgs(spec: Pick<SandboxSpec, "options">): string[] {
  if (!transparentOn(spec)) return [];
  return ["--dns", STUB_ADDRESS, "--sysctl", `net.ipv4.ip_unprivileged_port_start=${Math.min(53, ...TRANSPARENT_PORTS)}`];
}

/**
 * The container's entrypoint, whatever the image's own ENTRYPOINT is (an image built from a Dockerfile that sets one
 * would otherwise get sandbox-main as its arguments), and the line it runs: sandbox-main's JSC settings
 * (MAIN_RUNTIME_ENV) for that process alone, so neither its commands nor a `docker exec` session inherit them (nor
 * the PWD the shell exports).
 */
export const CONTAINER_ENTRYPOINT = "/bin/sh";
export const MAIN_LAUNCH = `export ${Object.entries(MAIN_RUNTIME_ENV)
  .map(([k, v]) => `${k}=${v}`)
  .join(" ")}; unset PWD; exec "$@"`;

/** The in-sandbox forwarder port of a spec. */
export function forwarderPort(spec: Pick<SandboxSpec, "options">): number {
  const p = spec.options.driver === "docker" ? spec.options.proxyPort : undefined;
  return typeof p === "number" && Number.isInteger(p) && p > 0 && p < 65536 ? p : DEFAULT_FORWARDER_PORT;
}

export interface CreatePlan {
  image: string;
  overlays: readonly OverlayPlan[];
  command: readonly string[];
  /** Host paths of the Bun binary and the shims dir, mounted read-only at RUNTIME_MOUNT. */
  runtime: RuntimeSources;
  /** The `sbx.root` label value (rootLabel of the state root's sandbox dir). */
  root: string;
}

/**
 * Pure: the resource limits as `docker create`/`docker update` flags. Memory is RAM with no swap beyond it
 * (`--memory-swap` equal), so a hog is killed at the limit instead of thrashing the host's swap.
 */
export function limitArgs(spec: Pick<SandboxSpec, "limits">): string[] {
  const l = spec.limits;
  if (!l) return [];
  return [
    ...(l.memory === null ? [] : ["--memory", String(l.memory), "--memory-swap", String(l.memory)]),
    ...(l.cpus === null ? [] : ["--cpus", String(l.cpus)]),
    ...(l.pids === null ? [] : ["--pids-limit", String(l.pids)]),
  ];
}

/** Pure: the Engine API's HostConfig fields for the same limits (POST /containers/<id>/update takes them too). */
export function limitHostConfig(l: { memory: number | null; cpus: number | null; pids: number | null }): { Memory: number; MemorySwap: number; NanoCpus: number; PidsLimit: number } {
  // On an update, 0 / -1 take a limit away again; a create leaves them unset.
  return {
    Memory: l.memory ?? 0,
    MemorySwap: l.memory ?? -1,
    NanoCpus: l.cpus === null ? 0 : Math.round(l.cpus * 1e9),
    PidsLimit: l.pids ?? -1,
  };
}

/**
 * Pure: the host repo's objects, read-only, where the clone's alternates lead (never its config, hooks, refs or info/),
 * with an empty file over their own alternates list: the stores of other sandboxes it names stay out of sight.
 */
export function hostObjectsMounts(spec: Pick<SandboxSpec, "dir" | "repo">): string[] {
  const lay = sandboxLayout(spec.dir);
  return [
    "--mount", mountValue([["type", "bind"], ["src", join(spec.repo, ".git", "objects")], ["dst", join(lay.linkGit, "objects")], "readonly"]),
    "--mount", mountValue([["type", "bind"], ["src", lay.alternatesMask], ["dst", join(lay.linkGit, "objects", "info", "alternates")], "readonly"]),
  ];
}

/**
 * Pure: a one-off container that runs the sandbox's own git in its clone while the sandbox is stopped: the sandbox's
 * image, user and view of the repo (the clone read-only), no network, no capabilities, its limits. How the host reads
 * a stopped sandbox's clone without reading it itself.
 */
export function oneShotGitArgs(spec: SandboxSpec, image: string, root: string, git: readonly string[]): string[] {
  const u = spec.hostUser;
  const lay = sandboxLayout(spec.dir);
  return [
    "docker", "run", "--rm", "-i",
    "--user", `${u.uid}:${u.gid}`,
    "--network", "none",
    "--cap-drop", "ALL",
    "--security-opt", "no-new-privileges",
    ...limitArgs(spec),
    ...labelArgs(labels(spec, "git", root)),
    "--env", `HOME=${u.home}`,
    "--env", `PATH=${PLAIN_PATH}`,
    "--mount", mountValue([["type", "bind"], ["src", lay.clone], ["dst", spec.repo], "readonly"]),
    ...hostObjectsMounts(spec),
    "--workdir", spec.repo,
    "--entrypoint", "git",
    image,
    ...git,
  ];
}

/** Pure: the full `docker create` argv for a sandbox. Golden-tested. */
export function dockerCreateArgs(spec: SandboxSpec, plan: CreatePlan): string[] {
  const u = spec.hostUser;
  const lay = sandboxLayout(spec.dir);
  const mask = claudeCredentialsMask(spec);
  const env = Object.keys(spec.env)
    .filter((k) => k !== "HOME")
    .sort()
    .flatMap((k) => ["--env", `${k}=${spec.env[k]}`]);
  return [
    "docker", "create",
    "--name", containerName(spec.id),
    "--hostname", spec.name,
    // Its hostname is its own loopback, as on any machine (a server started inside is reached by it).
    "--add-host", `${spec.name}:127.0.0.1`,
    "--init",
    "--user", `${u.uid}:${u.gid}`,
    "--network", "none",
    "--cap-drop", "ALL",
    "--security-opt", "no-new-privileges",
    "--workdir", spec.repo,
    ...limitArgs(spec),
    ...transparentArgs(spec),
    ...labelArgs(labels(spec, "sandbox", plan.root)),
    // Identity: $HOME is the host's even when the image's passwd says otherwise (root's is /root).
    "--env", `HOME=${u.home}`,
    ...env,
    "--mount", mountValue([["type", "bind"], ["src", lay.clone], ["dst", spec.repo]]),
    ...hostObjectsMounts(spec),
    "--mount", mountValue([["type", "bind"], ["src", spec.sockets.dir], ["dst", SOCKET_MOUNT]]),
    "--mount", mountValue([["type", "bind"], ["src", plan.runtime.bun], ["dst", RUNTIME_MOUNT.bun], "readonly"]),
    "--mount", mountValue([["type", "bind"], ["src", plan.runtime.shims], ["dst", RUNTIME_MOUNT.shims], "readonly"]),
    ...(plan.runtime.agents ? ["--mount", mountValue([["type", "bind"], ["src", plan.runtime.agents], ["dst", RUNTIME_MOUNT.agents], "readonly"])] : []),
    ...(plan.runtime.main ? ["--mount", mountValue([["type", "bind"], ["src", plan.runtime.main], ["dst", RUNTIME_MOUNT.main], "readonly"])] : []),
    "--mount", mountValue([["type", "bind"], ["src", lay.shProfile], ["dst", PROFILE_MOUNT.sh], "readonly"]),
    "--mount", mountValue([["type", "bind"], ["src", lay.fishProfile], ["dst", PROFILE_MOUNT.fish], "readonly"]),
    ...plan.overlays.flatMap((o) => [
      "--mount",
      mountValue([["type", "volume"], ["src", o.volume], ["dst", o.target], "volume-nocopy"]),
    ]),
    // Over the ~/.claude overlay (docker mounts parents first): the host's credentials never show inside.
    ...(mask === null ? [] : ["--mount", mountValue([["type", "bind"], ["src", lay.credentialsMask], ["dst", mask], "readonly"])]),
    "--entrypoint", CONTAINER_ENTRYPOINT,
    plan.image,
    ...plan.command,
  ];
}

/** Pure: the fields of one `--mount` value (docker's CSV: a field in double quotes may hold ',' and '""'). */
export function parseMountValue(v: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i <= v.length) {
    let field = "";
    if (v[i] === '"') {
      i++;
      for (;;) {
        if (i >= v.length) throw new Error(`unterminated quote in mount value ${v}`);
        if (v[i] === '"' && v[i + 1] === '"') {
          field += '"';
          i += 2;
        } else if (v[i] === '"') {
          i++;
          break;
        } else field += v[i++];
      }
      if (i < v.length && v[i] !== ",") throw new Error(`text after a quoted field in mount value ${v}`);
    } else {
      const end = v.indexOf(",", i);
      field = v.slice(i, end < 0 ? v.length : end);
      i = end < 0 ? v.length : end;
    }
    out.push(field);
    i++;
  }
  return out;
}

export interface CreateRequestBody {
  name: string;
  body: Record<string, unknown>;
}

/**
 * Pure: the Engine API request (POST /containers/create?name=…) that makes the container `argv` (dockerCreateArgs)
 * makes, so the argv stays the one rendered, golden-tested description. Every flag dockerCreateArgs emits is mapped;
 * any other throws (a new flag must be mapped here too, or create falls back to the CLI).
 */
export function createRequestFromArgs(argv: readonly string[]): CreateRequestBody {
  if (argv[0] !== "docker" || argv[1] !== "create") throw new Error("not a docker create argv");
  let name = "";
  const config: Record<string, unknown> = { Env: [] as string[], Labels: {} as Record<string, string> };
  const host: Record<string, unknown> = { Mounts: [] as Record<string, unknown>[] };
  let i = 2;
  const value = (flag: string) => {
    const v = argv[++i];
    if (v === undefined) throw new Error(`${flag} has no value`);
    return v;
  };
  for (; i < argv.length && argv[i]!.startsWith("--"); i++) {
    const flag = argv[i]!;
    switch (flag) {
      case "--name": name = value(flag); break;
      case "--hostname": config.Hostname = value(flag); break;
      case "--init": host.Init = true; break;
      case "--user": config.User = value(flag); break;
      case "--network": host.NetworkMode = value(flag); break;
      case "--cap-drop": host.CapDrop = [...((host.CapDrop as string[] | undefined) ?? []), value(flag)]; break;
      case "--security-opt": host.SecurityOpt = [...((host.SecurityOpt as string[] | undefined) ?? []), value(flag)]; break;
      case "--workdir": config.WorkingDir = value(flag); break;
      case "--entrypoint": config.Entrypoint = [value(flag)]; break;
      case "--memory": host.Memory = intValue(flag, value(flag)); break;
      case "--memory-swap": host.MemorySwap = intValue(flag, value(flag)); break;
      case "--pids-limit": host.PidsLimit = intValue(flag, value(flag)); break;
      case "--cpus": {
        const v = Number(value(flag));
        if (!(v > 0)) throw new Error(`--cpus ${v} is not a positive number`);
        host.NanoCpus = Math.round(v * 1e9);
        break;
      }
      case "--env": (config.Env as string[]).push(value(flag)); break;
      case "--dns": host.Dns = [...((host.Dns as string[] | undefined) ?? []), value(flag)]; break;
      case "--add-host": host.ExtraHosts = [...((host.ExtraHosts as string[] | undefined) ?? []), value(flag)]; break;
      case "--sysctl": {
        const kv = value(flag);
        const eq = kv.indexOf("=");
        if (eq <= 0) throw new Error(`sysctl without '=': ${kv}`);
        host.Sysctls = { ...((host.Sysctls as Record<string, string> | undefined) ?? {}), [kv.slice(0, eq)]: kv.slice(eq + 1) };
        break;
      }
      case "--label": {
        const kv = value(flag);
        const eq = kv.indexOf("=");
        if (eq <= 0) throw new Error(`label without '=': ${kv}`);
        (config.Labels as Record<string, string>)[kv.slice(0, eq)] = kv.slice(eq + 1);
        break;
      }
      case "--mount": {
        const m: Record<string, unknown> = {};
        for (const f of parseMountValue(value(flag))) {
          const eq = f.indexOf("=");
          const [k, v] = eq < 0 ? [f, ""] : [f.slice(0, eq), f.slice(eq + 1)];
          if (k === "type") m.Type = v;
          else if (k === "src") m.Source = v;
          else if (k === "dst") m.Target = v;
          else if (k === "readonly" && eq < 0) m.ReadOnly = true;
          else if (k === "volume-nocopy" && eq < 0) m.VolumeOptions = { NoCopy: true, DriverConfig: {} }; // as the CLI sends it
          else throw new Error(`unmapped mount field ${f}`);
        }
        (host.Mounts as Record<string, unknown>[]).push(m);
        break;
      }
      default:
        throw new Error(`unmapped docker create flag ${flag}`);
    }
  }
  const image = argv[i];
  if (image === undefined || name === "") throw new Error("docker create argv without a name or an image");
  return { name, body: { ...config, Image: image, Cmd: argv.slice(i + 1), HostConfig: host } };
}

function intValue(flag: string, v: string): number {
  if (!/^\d+$/.test(v)) throw new Error(`${flag} ${v} is not a whole number`);
  return Number(v);
}

/** Every mount destination inside the container (for seeding their parents). */
export function mountTargets(spec: SandboxSpec, overlays: readonly OverlayPlan[]): string[] {
  return [spec.repo, join(sandboxLayout(spec.dir).linkGit, "objects"), ...overlays.map((o) => o.target)];
}

/** Pure: a home file's path inside (`.cargo/config.toml` → `/home/ann/.cargo/config.toml`), `..` and `.` dropped. */
export function homeFilePath(spec: SandboxSpec, rel: string): string {
  const parts = rel.split("/").filter((p) => p !== "" && p !== "." && p !== "..");
  return `${posix.normalize(spec.hostUser.home).replace(/\/+$/, "")}/${parts.join("/")}`;
}

/**
 * Pure: the spec's home files (DockerOptions.homeFiles) as seed entries, with the dirs above them, owned by the user;
 * those in `has` (the image has its own) are left as the image made them and listed in `kept`.
 */
export function homeFileEntries(spec: SandboxSpec, has: ReadonlySet<string>, mtime = 0): { entries: TarEntry[]; kept: string[] } {
  const { uid, gid } = spec.hostUser;
  const home = posix.normalize(spec.hostUser.home).replace(/\/+$/, "");
  const entries: TarEntry[] = [];
  const kept: string[] = [];
  if (home === "" || home === "/") return { entries, kept };
  for (const f of (spec.options.driver === "docker" ? spec.options.homeFiles : undefined) ?? []) {
    const parts = homeFilePath(spec, f.path).slice(home.length + 1).split("/");
    if (parts[0] === "") continue;
    if (has.has(f.path)) {
      kept.push(parts.join("/"));
      continue;
    }
    for (let i = 1; i < parts.length; i++) {
      const dir = `${home.slice(1)}/${parts.slice(0, i).join("/")}`;
      if (!entries.some((e) => e.path === dir)) entries.push({ path: dir, type: "dir", mode: 0o755, uid, gid, mtime });
    }
    entries.push({ path: `${home.slice(1)}/${parts.join("/")}`, type: "file", mode: 0o644, uid, gid, content: new TextEncoder().encode(f.text), mtime });
  }
  return { entries, kept };
}

/**
 * Pure: tar entries that create, owned by the host user, every dir from $HOME down to the parent of each mount
 * point under it (docker would make them root:root), plus a copy of ~/.claude.json when the host has one.
 */
export function seedEntries(spec: SandboxSpec, targets: readonly string[], claudeJson: Uint8Array | null, mtime = 0): TarEntry[] {
  const { uid, gid } = spec.hostUser;
  const home = posix.normalize(spec.hostUser.home).replace(/\/+$/, "");
  const dirs = new Set<string>();
  if (home !== "" && home !== "/") {
    dirs.add(home);
    for (const t of targets) {
      const n = posix.normalize(t);
      if (!n.startsWith(home + "/")) continue;
      // Strict parents only: `docker cp` writes through mounts, so a mount point itself must not be in the archive.
      for (let d = dirname(n); d !== home && d.startsWith(home + "/"); d = dirname(d)) dirs.add(d);
    }
    for (const t of targets) dirs.delete(posix.normalize(t));
  }
  const sorted = [...dirs].sort((a, b) => a.split("/").length - b.split("/").length || a.localeCompare(b));
  const entries: TarEntry[] = sorted.map((d) => ({
    path: d.slice(1),
    type: "dir",
    mode: d === home ? 0o700 : 0o755,
    uid,
    gid,
    mtime,
  }));
  if (claudeJson && home !== "" && home !== "/") {
    entries.push({ path: `${home.slice(1)}/.claude.json`, type: "file", mode: 0o600, uid, gid, content: claudeJson, mtime });
  }
  return entries;
}

/**
 * The engine's own detach sequence for a terminal session. Both the docker CLI and dockerd watch a `--tty` exec's input
 * for one (Ctrl-P Ctrl-Q unless told otherwise) and, on it, leave the process running inside unseen while the session
 * ends ("read escape sequence", exit 1). Detaching is sbx's (core/detach-keys.ts, keys chosen per attach, or none), so
 * the engine's is set to a sequence no one types: the keys a person picked, or Ctrl-P Ctrl-Q when they picked others,
 * reach the program. The engine holds a lone Ctrl-@ (Ctrl-Space) until the next key arrives, as it held Ctrl-P.
 */
export const ENGINE_DETACH_KEYS = "ctrl-@,ctrl-^,ctrl-_,ctrl-]";

/** Pure: the host argv that runs a shell or command inside a running sandbox. */
export function dockerExecArgs(spec: SandboxSpec, req: ShellRequest & { stdin?: boolean }, shell: string): string[] {
  const u = spec.hostUser;
  const env = Object.keys(req.env)
    .sort()
    .flatMap((k) => ["--env", `${k}=${req.env[k]}`]);
  const interactive = req.tty || req.stdin === true;
  const argv = req.argv.length > 0 ? req.argv : [shell, "-l"];
  return [
    "docker", "exec",
    ...(interactive ? ["--interactive"] : []),
    ...(req.tty ? ["--tty", "--detach-keys", ENGINE_DETACH_KEYS] : []),
    "--user", `${u.uid}:${u.gid}`,
    "--workdir", req.cwd,
    ...env,
    ...(req.session !== undefined ? ["--env", `${SESSION_VAR}=${req.session}`] : []),
    containerName(spec.id),
    ...inSandboxArgv(spec.name, argv, { tty: req.tty, ...(req.session !== undefined ? { session: req.session } : {}) }),
  ];
}
