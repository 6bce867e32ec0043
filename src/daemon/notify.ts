// Desktop notifications of blocked requests: notify-send (Linux) or osascript (macOS) through Exec, at most one per sandbox and host per interval, and a few per sandbox per minute.
import { patternFor } from "../core/egress";
import { sandboxRate } from "../events/rate";
import type { Exec } from "../sys/exec";
import type { FeedEvent } from "../events/feed";
import type { Logger } from "../sys/log";

export type EgressFeedEvent = Extract<FeedEvent, { kind: "egress" }>;

export interface Notification {
  title: string;
  body: string;
}

/** Pure: what the person reads. The host comes from inside the sandbox: it is only ever an argv element, never code. */
export function blockedNotification(e: EgressFeedEvent): Notification {
  if (e.reason === "blocked-raw") {
    // Not a proxy request: nothing to allow. Say what happened and where to look.
    return {
      title: `sbx: ${e.sandbox.name} tried to connect around its proxy`,
      body: `${e.method} ${e.host}:${e.port} was dropped by the firewall. Only traffic through the sbx proxy leaves a sandbox; \`sbx logs --sandbox ${e.sandbox.name}\` lists these attempts.`,
    };
  }
  const pattern = e.suggest ?? patternFor(e.host, e.port);
  return {
    title: `sbx: ${e.sandbox.name} was refused ${e.host}`,
    body: `${e.method} ${e.host}:${e.port}${e.reason ? ` (${e.reason})` : ""}. To allow it: sbx allow ${pattern} --sandbox ${e.sandbox.name}`,
  };
}

/** notify-send bodies may be read as a small markup language: show the text as text. */
function escapeMarkup(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/**
 * Pure: the argv that shows a notification, or null where sbx knows no notifier.
 * macOS passes title and body as osascript's run arguments, so no text is ever spliced into AppleScript source.
 */
export function notificationArgv(platform: NodeJS.Platform, n: Notification): string[] | null {
  if (platform === "linux") return ["notify-send", "--app-name=sbx", "--urgency=normal", n.title, escapeMarkup(n.body)];
  if (platform === "darwin") {
    return [
      "osascript",
      "-e", "on run argv",
      "-e", "display notification (item 2 of argv) with title (item 1 of argv)",
      "-e", "end run",
      n.title,
      n.body,
    ];
  }
  return null;
}

export interface DesktopNotifierOptions {
  exec: Exec;
  platform: NodeJS.Platform;
  log: Logger;
  /** One notification per sandbox and host per this interval (default 5 minutes). */
  minIntervalMs?: number;
  now?: () => number;
}

export interface DesktopNotifier {
  /** Feed listener: notifies of denied egress, ignores everything else. */
  onEvent(e: FeedEvent): void;
  /** Resolves when every notification asked for so far has been sent (tests). */
  idle(): Promise<void>;
  /** False once the notifier program turned out to be missing. */
  readonly enabled: boolean;
}

/**
 * runs: notify-send --app-name=sbx --urgency=normal <title> <body>   (Linux)
 *       osascript -e 'on run argv' -e 'display notification …' -e 'end run' <title> <body>   (macOS)
 * A missing program (exit 127) switches the notifier off with one log line; other failures are logged and skipped.
 */
export function createDesktopNotifier(opts: DesktopNotifierOptions): DesktopNotifier {
  const minInterval = opts.minIntervalMs ?? 5 * 60_000;
  const now = opts.now ?? Date.now;
  const last = new Map<string, number>();
  const rate = sandboxRate();
  let enabled = notificationArgv(opts.platform, { title: "", body: "" }) !== null;
  let queue: Promise<void> = Promise.resolve();

  const send = async (argv: string[]) => {
    if (!enabled) return;
    const r = await opts.exec.run(argv, { check: false, timeoutMs: 5000 }).catch((e: unknown) => ({ exitCode: -1, stderr: String(e) }));
    if (r.exitCode === 127) {
      enabled = false;
      opts.log.info("desktop notifications off: no notifier program", { program: argv[0] });
    } else if (r.exitCode !== 0) {
      opts.log.warn("desktop notification failed", { program: argv[0], code: r.exitCode, stderr: r.stderr.trim().slice(0, 200) });
    }
  };

  return {
    get enabled() {
      return enabled;
    },
    onEvent(e) {
      if (!enabled || e.kind !== "egress" || e.action !== "denied") return;
      const key = `${e.sandbox.id}\0${e.host}`;
      const t = now();
      const prev = last.get(key);
      if (prev !== undefined && t - prev < minInterval) return;
      last.set(key, t);
      if (last.size > 1000) for (const [k, v] of last) if (t - v >= minInterval) last.delete(k);
      // And a few per sandbox per minute, whatever the hosts: a flood of names is one line, not a thousand.
      const budget = rate.take(e.sandbox.id, t);
      if (budget === "drop") return;
      const n = budget === "send" ? blockedNotification(e) : { title: `sbx: ${e.sandbox.name} is blocked more`, body: `More blocked requests from ${e.sandbox.name}; sbx approvals lists them.` };
      const argv = notificationArgv(opts.platform, n);
      if (argv) queue = queue.then(() => send(argv));
    },
    idle: () => queue,
  };
}
