// Pure: the shapes every kind shares: a sandbox's spec (what a driver converges), what the system holds of it, and the account it is for.
import type { ServiceStatus } from "./services";
import type { Limits } from "./limits";
import type { ImageSource } from "./image-source";

/** An account: the host user a sandbox stands in for (Docker) or is kept apart from (macOS, Linux users); who that is: sys/host-user.ts. */
export interface HostUser {
  name: string;
  uid: number;
  gid: number;
  home: string;
  shell: string;
}

/** A sandbox's socket dir (the proxy's and the bridge's sockets in it), given to the sandbox as a directory. */
export interface SandboxSockets {
  readonly dir: string;
  readonly proxy: string;
  readonly bridge: string;
}

/** Everything a driver needs to converge one sandbox. Built from the stored identity; drivers never read the store. */
export interface SandboxSpec {
  /** Short stable id (socket dirs, labels, account names). */
  id: string;
  name: string;
  /** Real path of the host repo the sandbox was created from. */
  repo: string;
  /** The sandbox dir under the per-repo cache dir. */
  dir: string;
  hostUser: HostUser;
  /** The per-sandbox socket dir (proxy, bridge), given to the sandbox as a directory. */
  sockets: SandboxSockets;
  /** Environment the sandbox's processes get (already filtered: no host secrets). */
  env: Record<string, string>;
  /** Host dirs overlaid copy-on-write inside (Docker) or provisioned (user accounts). */
  overlays: string[];
  /** What only its kind reads: the image and shell of a container, a guest's loopback proxy port. */
  options: SandboxOptions;
  /** What the sandbox may use (memory, CPUs, processes); absent on sandboxes made before limits existed. */
  limits?: Limits;
}

/** A Docker sandbox's own part of its spec. */
export interface DockerOptions {
  readonly driver: "docker";
  /** The image its container is made from (absent until the first build). */
  image?: string;
  /** The login shell inside (resolved at the first start). */
  shell?: string;
  /** How the host's Claude login reaches the sandbox. */
  claudeAuth: "inject" | "overlay";
  /** The in-sandbox forwarder's port (default 3128). */
  proxyPort?: number;
  /** Where its image comes from (absent: the repo's Dockerfile): `sbx list` and starts compare it with the image. */
  imageSource?: ImageSource;
  /** sha256 of the Dockerfile the image was built from (compared at start when the tag cannot tell). */
  imageDockerfile?: string;
  /** The transparent path: the container's resolv.conf names the forwarder's DNS stub, which also takes 80/443. */
  transparent?: boolean;
  /** `--expose-credentials` at create: what the copy-in scan finds in its overlays is said, and copied in anyway. */
  exposeCredentials?: boolean;
  /**
   * Files a new container's home gets once, before its first start, where the image has none (relative to the home):
   * the host's settings that only a file carries (cargo's mirror of crates.io).
   */
  homeFiles?: readonly { path: string; text: string }[];
}

/** A user-account sandbox's (linux-user, macos): the loopback port its guest reaches its proxy on. */
export interface UserOptions {
  readonly driver: "user";
  proxyPort: number;
  /** Linux: the guest's DNS and its 80/443 to named addresses are redirected to its port (the transparent path). */
  transparent?: boolean;
}

/** A test driver's: it reads nothing of its own. */
export interface FakeOptions {
  readonly driver: "fake";
}

/** One typed shape per kind of driver; a driver narrows on `driver` and reads only its own. */
export type SandboxOptions = DockerOptions | UserOptions | FakeOptions;

/** What the system holds for a sandbox, whatever the store says. */
export type Phase = "running" | "stopped" | "absent";

export interface Observed {
  id: string;
  name: string;
  repo: string;
  phase: Phase;
  /** Kind-specific facts for `sbx status` (container id, uid, …); `dir` is its sandbox dir when the kind knows it. */
  detail: Record<string, string>;
  /** Its services as the system holds them (a kind with services: Docker). */
  services?: ServiceStatus[];
}

export interface Change {
  /** False when the system already matched and nothing was mutated. */
  changed: boolean;
}

export interface CleanupReport {
  /** What was (or, with dryRun, would be) removed, one line each, each naming the sandbox id it belonged to. */
  removed: string[];
}

export interface ShellRequest {
  /** Command to run; empty means the sandbox user's login shell. */
  argv: string[];
  /** Working directory inside; the driver maps host paths when needed. */
  cwd: string;
  tty: boolean;
  env: Record<string, string>;
  /** Whether stdin data will be forwarded (non-interactive; Docker keeps stdin open for it). */
  stdin?: boolean;
  /** The daemon's session this terminal belongs to: a kind whose process can outlive its client records it by this. */
  session?: string;
}
