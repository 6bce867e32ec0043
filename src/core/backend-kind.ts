// Pure: the kinds of user-account sandbox, and what `--backend` names on each OS (the CLI reads this without loading zod).
import { SbxError } from "./errors";

export type UserBackendKind = "linux-user" | "macos";
export const USER_BACKENDS: readonly UserBackendKind[] = ["linux-user", "macos"];

export function isUserBackend(kind: string): kind is UserBackendKind {
  return (USER_BACKENDS as readonly string[]).includes(kind);
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
