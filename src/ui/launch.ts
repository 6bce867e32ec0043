// Opening the dashboard without the launch secret on any argv: a 0600 page in the private runtime dir redirects the browser, the opener only sees its path.
import { randomBytes } from "node:crypto";
import { closeSync, openSync, unlinkSync, writeSync } from "node:fs";
import { join } from "node:path";
import { SbxError } from "../core/errors";

function attr(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** Pure: a page that sends the browser on to the launch URL at once (no script), with a link as a fallback. */
export function renderLaunchPage(url: string): string {
  const u = attr(url);
  return [
    "<!doctype html>",
    '<html lang="en"><head><meta charset="utf-8">',
    '<meta name="referrer" content="no-referrer">',
    `<meta http-equiv="refresh" content="0;url=${u}">`,
    "<title>sbx dashboard</title></head>",
    `<body><p>Opening the sbx dashboard… <a href="${u}">continue</a></p></body></html>`,
    "",
  ].join("\n");
}

/** Pure: the argv that opens a file in the person's browser, or null where sbx knows no opener. */
export function openerArgv(platform: NodeJS.Platform, file: string): string[] | null {
  if (platform === "linux" || platform === "freebsd" || platform === "openbsd") return ["xdg-open", file];
  if (platform === "darwin") return ["open", file];
  return null;
}

/** Writes the launch page, mode 0600 from its creation (never readable by others), in `dir` (the 0700 runtime dir). */
export function writeLaunchFile(dir: string, url: string): string {
  const file = join(dir, `ui-launch-${randomBytes(8).toString("hex")}.html`);
  const fd = openSync(file, "wx", 0o600);
  try {
    writeSync(fd, renderLaunchPage(url));
  } finally {
    closeSync(fd);
  }
  return file;
}

export interface OpenDeps {
  platform: NodeJS.Platform;
  runtimeDir: string;
  /** The single-use launch URL (from the daemon). */
  url: string;
  /** Starts the opener and does not wait for it (xdg-open may stay as long as a browser it started). */
  spawn: (argv: string[]) => { exited: Promise<number> };
  /** Polled until the ticket is used (the browser got there) or can no longer be. */
  ticketState: () => Promise<"unused" | "used" | "expired" | "unknown">;
  timeoutMs: number;
  pollMs?: number;
}

/**
 * Opens the dashboard: writes the launch page, runs the opener on its path, waits until the browser used the
 * ticket, then removes the page. The page is removed whatever happens; a failed opener or a ticket never used
 * is an error whose hint is `sbx ui --print`.
 * runs: xdg-open <page> (Linux) | open <page> (macOS)
 */
export async function openDashboard(deps: OpenDeps): Promise<void> {
  const file = writeLaunchFile(deps.runtimeDir, deps.url);
  try {
    const argv = openerArgv(deps.platform, file);
    if (!argv) throw new SbxError("not_available", `sbx does not know how to open a browser on ${deps.platform}`, { hint: "Run `sbx ui --print` and open the URL it prints." });
    const opener = deps.spawn(argv);
    let openerCode: number | null = null;
    void opener.exited.then((c) => (openerCode = c));
    const until = Date.now() + deps.timeoutMs;
    while (Date.now() < until) {
      const state = await deps.ticketState();
      if (state === "used") return;
      if (state !== "unused") break;
      if (openerCode !== null && openerCode !== 0) {
        throw new SbxError("unavailable", `\`${argv[0]}\` could not open a browser (exit ${openerCode})`, { hint: "Run `sbx ui --print` and open the URL it prints." });
      }
      await Bun.sleep(deps.pollMs ?? 200);
    }
    throw new SbxError("unavailable", `no browser reached the dashboard within ${Math.round(deps.timeoutMs / 1000)} s`, {
      hint: "Run `sbx ui --print` and open the URL it prints (it works once, for 10 minutes).",
    });
  } finally {
    try {
      unlinkSync(file);
    } catch {
      /* already gone */
    }
  }
}
