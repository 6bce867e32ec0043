// The path check: a path the sandbox names (a --body-file, -C, a clone's directory) mapped to a host path inside its
// workspace, or refused.
import type { PathCheck } from "./policy";

export interface PathCheckerOptions {
  /** The workspace as a host path. */
  workspace: string;
  /** The workspace as the sandbox sees it (Docker mounts the clone at the host repo's path). */
  workspaceView: string;
  /** realpath(3); returns null when the path does not exist. */
  realpath: (p: string) => string | null;
}

function normalize(p: string): string {
  const out: string[] = [];
  for (const c of p.split("/")) {
    if (c === "" || c === ".") continue;
    if (c === "..") out.pop();
    else out.push(c);
  }
  return "/" + out.join("/");
}

/**
 * Builds the path check: a sandbox path is mapped into the workspace's host path, then its realpath (or
 * its nearest existing parent's) must be the workspace itself or below it — exact prefix plus "/".
 */
export function makePathChecker(o: PathCheckerOptions): PathCheck {
  const viewRoot = normalize(o.workspaceView);
  return (p, cwd) => {
    if (p.includes("\0")) return { ok: false, reason: "path contains a NUL byte" };
    if (/^file:/i.test(p)) return { ok: false, reason: "file:// URLs are refused" };
    const abs = normalize(p.startsWith("/") ? p : `${cwd}/${p}`);
    if (abs !== viewRoot && !abs.startsWith(viewRoot + "/")) return { ok: false, reason: `${p} is outside the sandbox's workspace` };
    const rootReal = o.realpath(o.workspace);
    if (rootReal === null) return { ok: false, reason: "the sandbox's workspace is missing" };
    let host = o.workspace + abs.slice(viewRoot.length);
    let suffix = "";
    let real = o.realpath(host);
    while (real === null) {
      const cut = host.lastIndexOf("/");
      if (cut <= 0) return { ok: false, reason: `${p} is outside the sandbox's workspace` };
      suffix = host.slice(cut) + suffix;
      host = host.slice(0, cut);
      real = o.realpath(host);
    }
    if (real !== rootReal && !real.startsWith(rootReal + "/")) return { ok: false, reason: `${p} resolves outside the sandbox's workspace` };
    return { ok: true, hostPath: real + suffix };
  };
}
