// Pure: what the CLI knows of each kind of sandbox before any driver is loaded (it loads none), and what `--backend`
// names on each OS. Data, read by key: the drivers report the same facts as their capabilities (a test holds them to
// this table), and nothing outside src/drivers/ compares a kind. The CLI reads this without loading zod.
import { SbxError } from "./errors";
import type { BackendKind } from "./schemas";

export type UserBackendKind = "linux-user" | "macos";

/** The options of `create`/`run`/`exec` that only some kinds take, with what they need. */
export interface KindOption {
  /** The flag, without its dashes. */
  readonly flag: string;
  /** Whether it was given (from commander's options). */
  set(opts: Record<string, unknown>): boolean;
  /** Who takes it, for the refusal: "Docker sandboxes", "--backend user on Linux". */
  readonly takenBy: string;
  /** What to do instead. */
  readonly hint: string;
}

const DOCKER_HINT = (flag: string) => `Drop --${flag}, or use --backend docker.`;
const docker = (flag: string, set: (o: Record<string, unknown>) => boolean): KindOption => ({ flag, set, takenBy: "Docker sandboxes", hint: DOCKER_HINT(flag) });

/** Every option some kinds do not take, in the order a refusal names the first one given. */
export const KIND_OPTIONS: readonly KindOption[] = [
  { flag: "allow-weaker", set: (o) => o.allowWeaker === true, takenBy: "--backend user on Linux", hint: "Drop it: Docker sandboxes (and macOS accounts) are confined without Landlock." },
  docker("rebuild", (o) => o.rebuild === true),
  docker("overlay", (o) => Array.isArray(o.overlay) && o.overlay.length > 0),
  docker("claude-auth", (o) => o.claudeAuth !== undefined),
  docker("expose-credentials", (o) => o.exposeCredentials === true),
  docker("dockerfile", (o) => o.dockerfile !== undefined),
  docker("context", (o) => o.context !== undefined),
  docker("image", (o) => o.image !== undefined),
  docker("port", (o) => Array.isArray(o.port) && o.port.length > 0),
  {
    flag: "service",
    set: (o) => Array.isArray(o.service) && o.service.length > 0,
    takenBy: "Docker sandboxes",
    hint: "A service runs as a container in a Docker sandbox's network namespace; a user-account sandbox has none to give it. Use --backend docker, or run the service inside the sandbox yourself.",
  },
  docker("service-env", (o) => Array.isArray(o.serviceEnv) && o.serviceEnv.length > 0),
  docker("pull", (o) => o.pull === true),
];

/** What a kind is, for the CLI. */
export interface KindFacts {
  /** The kind-specific options (KIND_OPTIONS' flags) a new sandbox of it takes. */
  readonly options: readonly string[];
  /** The CLI may start its clone before the daemon answers (its driver's DriverCaps.stagesClone). */
  readonly stagesClone: boolean;
  /** Its root work goes through the kit `sbx service install` puts in place: uninstalling waits for its sandboxes. */
  readonly rootKit: boolean;
  /** The daemon reads its repo under macOS's privacy protections (`sbx doctor` checks the daemon's access to it). */
  readonly privacyProtectedRepo: boolean;
  /** Said after "created sandbox NAME" (its kind, when it is not the usual one). */
  readonly label: string;
  /** How an editor on the host opens one (`sbx code`, docs/help/editors.md). */
  readonly editor: EditorReach;
}

/**
 * "container": VS Code's Dev Containers attaches to the sandbox's own container (dockerContainerName), as the sandbox's
 * user, its proxy and guards unchanged. null: no editor on the host can reach it; `why` and `instead` say so.
 */
export type EditorReach = { readonly attach: "container" } | { readonly attach: null; readonly why: string; instead(name: string): string };

/** A Docker sandbox's container: `sbx-<id>` (drivers/identity.ts sandboxId). */
export function dockerContainerName(id: string): string {
  return `sbx-${id}`;
}

/** What a person can do instead of an editor attached to a user-account sandbox (the same on Linux and macOS). */
function accountEditorInstead(name: string): string {
  return [
    `a terminal editor inside (\`sbx shell ${name}\`, then vim, nvim, emacs or hx: the host's own programs);`,
    `the sandbox's commits from your own checkout (\`git log sandbox-${name}/BRANCH\`, opened in any editor);`,
    `or a Docker sandbox for editor work (\`sbx create NEW-NAME --backend docker\`), which \`sbx code\` opens.`,
    `Do not open its clone in an editor on the host: the editor, its git and its extensions would read files the agent wrote, as you.`,
  ].join(" ");
}

export const KINDS: Readonly<Record<BackendKind, KindFacts>> = {
  docker: {
    options: KIND_OPTIONS.filter((o) => o.takenBy === "Docker sandboxes").map((o) => o.flag),
    stagesClone: true,
    rootKit: false,
    privacyProtectedRepo: false,
    label: "",
    editor: { attach: "container" },
  },
  "linux-user": {
    options: ["allow-weaker"],
    stagesClone: false,
    rootKit: false,
    privacyProtectedRepo: false,
    label: " (linux-user)",
    editor: {
      attach: null,
      why: "it is a Linux user account, not a container: VS Code would need Remote-SSH to that account, and sbx runs no SSH server for it",
      instead: accountEditorInstead,
    },
  },
  macos: {
    options: [],
    stagesClone: false,
    rootKit: true,
    privacyProtectedRepo: true,
    label: " (macos)",
    editor: {
      attach: null,
      why: "it is a hidden macOS account, not a container: VS Code would need Remote-SSH to that account, and sbx turns on no SSH login for it",
      instead: accountEditorInstead,
    },
  },
  fake: { options: [], stagesClone: false, rootKit: false, privacyProtectedRepo: false, label: " (fake)", editor: { attach: null, why: "it is a test sandbox", instead: () => "" } },
};

/** The kind of a new sandbox when `--backend` is not given: Docker on Linux, the hidden-account kind on macOS (Docker Desktop cannot keep the user's uid and paths). */
export function defaultKind(platform: NodeJS.Platform): BackendKind {
  return platform === "darwin" ? "macos" : "docker";
}

/** What to do about a kind this process has no driver for (said with "<kind> sandboxes cannot be run from here"). */
export function kindUnavailableHint(kind: string): string {
  return KIND_UNAVAILABLE[kind] ?? "Run `sbx doctor` to see which kinds of sandbox work on this host.";
}

const KIND_UNAVAILABLE: Readonly<Record<string, string>> = {
  docker: "Docker sandboxes run on Linux.",
  "linux-user": "Run sbx as root (sudo) for --backend user, on Linux with its tools (`sbx doctor`).",
  macos: "macOS sandboxes run on a Mac, in a daemon that runs as you (not as root).",
};

/** The kind `--backend WORD` names on this OS: docker, or `user` (this OS's account kind; `macos` and `linux-user` by name too). */
export function kindOfFlag(platform: NodeJS.Platform, flag: string): BackendKind {
  if (flag === "docker") return "docker";
  return userBackendKind(platform, flag);
}

/** `--backend user` means the user-account backend of this OS; `--backend macos` is accepted on a Mac too. */
export function userBackendKind(platform: NodeJS.Platform, flag: string): UserBackendKind {
  if (flag === "macos" || (flag === "user" && platform === "darwin")) {
    if (platform !== "darwin") throw new SbxError("usage", "--backend macos runs only on macOS", { hint: "On Linux use --backend user (as root) or docker." });
    return "macos";
  }
  if (flag === "user" || flag === "linux-user") {
    if (platform !== "linux") throw new SbxError("usage", `--backend user is not available on ${platform}`, { hint: "Use --backend docker." });
    return "linux-user";
  }
  throw new SbxError("usage", `unknown backend '${flag}'`, { hint: "Use --backend docker, user or macos." });
}
