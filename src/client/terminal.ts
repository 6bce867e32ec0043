// The terminal side of the PTY relay: the user's tty in raw mode, keystrokes and resizes to the daemon, output back, the tty restored on exit.
import { DetachMatcher } from "../core/detach-keys";
import { SbxError } from "../core/errors";
import { TerminalModes } from "../core/terminal-modes";
import { forOutput } from "../core/terminal-vars";
import { ServerFrameSchema, TERMINAL_ENV, type ClientFrame } from "../daemon/protocol";
import type { DaemonClient } from "./client";

/** The user's terminal, as the relay sees it (process stdio in the CLI, a fake in tests). */
export interface Tty {
  readonly isTTY: boolean;
  size(): { cols: number; rows: number };
  setRawMode(on: boolean): void;
  /** Subscribes to keystrokes (or piped stdin); `onEnd` when stdin closes. Returns an unsubscribe. */
  onInput(onData: (d: Uint8Array) => void, onEnd: () => void): () => void;
  write(d: Uint8Array): void;
  /** Subscribes to window size changes (SIGWINCH). Returns an unsubscribe. */
  onResize(cb: () => void): () => void;
  /** Subscribes to the signals that end this client (SIGTERM, SIGHUP, SIGINT from kill). Returns an unsubscribe. */
  onSignal?(cb: (signal: LeaveSignal) => void): () => void;
}

/** The signals on which a client leaves its session (the session goes on), with their exit codes (128 + number). */
const LEAVE_SIGNALS = { SIGHUP: 129, SIGINT: 130, SIGTERM: 143 } as const;
export type LeaveSignal = keyof typeof LEAVE_SIGNALS;

/** The real terminal of this process. */
export function processTty(): Tty {
  const stdin = process.stdin;
  const stdout = process.stdout;
  return {
    isTTY: Boolean(stdin.isTTY),
    size: () => ({ cols: stdout.columns || 80, rows: stdout.rows || 24 }),
    setRawMode(on) {
      if (stdin.isTTY) stdin.setRawMode(on);
    },
    onInput(onData, onEnd) {
      const data = (d: Buffer) => onData(new Uint8Array(d));
      stdin.on("data", data);
      stdin.on("end", onEnd);
      stdin.resume();
      return () => {
        stdin.off("data", data);
        stdin.off("end", onEnd);
        stdin.pause();
      };
    },
    write(d) {
      // After SIGHUP the terminal may be gone: a failed write must not end the restore (nor the process) early.
      try {
        stdout.write(d, () => {});
      } catch {}
    },
    onResize(cb) {
      process.on("SIGWINCH", cb);
      return () => void process.off("SIGWINCH", cb);
    },
    onSignal(cb) {
      const handlers = Object.keys(LEAVE_SIGNALS).map((sig) => [sig, () => cb(sig as LeaveSignal)] as const);
      for (const [sig, h] of handlers) process.on(sig, h);
      return () => {
        for (const [sig, h] of handlers) process.off(sig, h);
      };
    },
  };
}

/** The terminal variables a session inherits from the user's environment (nothing else crosses). */
export function terminalEnv(env: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && TERMINAL_ENV.test(k)) out[k] = v;
  return out;
}

/**
 * Relays one session between the tty and the daemon until the session ends; returns its exit code.
 * The tty is put in raw mode (so ^C reaches the sandbox's PTY as a byte) and always restored.
 */
export async function relayTerminal(url: string, tty: Tty, opts: RelayOptions = {}): Promise<number> {
  const ws = new WebSocket(url);
  const matcher = opts.detachKeys && tty.isTTY ? new DetachMatcher(opts.detachKeys) : null;
  // The modes the session's program turns on in this terminal, undone whenever this client leaves before it ends.
  const modes = tty.isTTY ? new TerminalModes() : null;
  let detached = false;
  let signalled: LeaveSignal | null = null;
  ws.binaryType = "arraybuffer";
  const send = (f: ClientFrame) => ws.readyState === WebSocket.OPEN && ws.send(JSON.stringify(f));
  let exitCode: number | null = null;
  let failure: SbxError | null = null;
  const cleanups: (() => void)[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      ws.onopen = () => {
        if (tty.isTTY) tty.setRawMode(true);
        const size = tty.size();
        if (opts.repaint) {
          // A size change is what makes a full-screen program draw everything again (and turn its modes back on):
          // one row less, then the real size.
          send({ type: "resize", cols: size.cols, rows: size.rows > 1 ? size.rows - 1 : size.rows + 1 });
          const t = setTimeout(() => send({ type: "resize", ...tty.size() }), 60);
          cleanups.push(() => clearTimeout(t));
        } else send({ type: "resize", ...size });
        cleanups.push(tty.onResize(() => send({ type: "resize", ...tty.size() })));
        if (tty.onSignal) {
          cleanups.push(
            tty.onSignal((sig) => {
              signalled ??= sig;
              ws.close();
            }),
          );
        }
        cleanups.push(
          tty.onInput(
            (d) => {
              if (ws.readyState !== WebSocket.OPEN) return;
              if (!matcher) return void ws.send(d);
              const m = matcher.feed(d);
              if (m.forward.length > 0) ws.send(m.forward);
              if (m.detach) {
                // The session goes on in the daemon; only this terminal leaves it.
                detached = true;
                ws.close();
              }
            },
            // Piped stdin ran out: ^D tells the shell in the PTY there is no more input.
            () => ws.readyState === WebSocket.OPEN && ws.send(new Uint8Array([4])),
          ),
        );
      };
      ws.onmessage = (ev) => {
        if (typeof ev.data === "string") {
          const f = ServerFrameSchema.safeParse(JSON.parse(ev.data));
          if (!f.success) return;
          if (f.data.type === "exit") exitCode = f.data.code;
          else if (f.data.type === "error") failure = new SbxError(f.data.error, f.data.message, { hint: f.data.hint });
          return;
        }
        const data = new Uint8Array(ev.data as ArrayBuffer);
        modes?.feed(data);
        tty.write(data);
      };
      ws.onerror = () => {
        failure ??= new SbxError("unavailable", "lost the connection to the sbx daemon", {
          hint: "The daemon may have stopped: `sbx status`; the session's processes ended with it.",
        });
      };
      ws.onclose = () => (failure && exitCode === null && !detached && !signalled ? reject(failure) : resolve());
    });
  } finally {
    for (const c of cleanups) c();
    // Whatever way this client leaves (the session's end, detach keys, a signal, the daemon gone), the modes the
    // program left on are turned off here: the program goes on elsewhere, or ended without undoing them.
    if (modes) {
      const inline = modes.drewInline();
      const resets = modes.resets();
      if (resets.length > 0) tty.write(resets);
      // A program drawing in the main screen (no alternate screen) leaves the cursor inside what it drew: the note
      // goes below all of it, on the screen's last row.
      if (inline && exitCode === null) tty.write(new TextEncoder().encode("\x1b[999;1H"));
      // The error that follows (the daemon gone) starts on a line of its own too.
      if (exitCode === null && !detached && !signalled) tty.write(new TextEncoder().encode("\r\n"));
    }
    if (tty.isTTY) tty.setRawMode(false);
  }
  const id = opts.session ?? "<session>";
  const again = `\`sbx attach ${id}\` joins it again (\`sbx ps\` lists sessions).`;
  if (signalled && exitCode === null) {
    tty.write(new TextEncoder().encode(`\r\nsbx: ${signalled} ended this client; session ${id} goes on running. ${again}\r\n`));
    return LEAVE_SIGNALS[signalled];
  }
  if (detached && exitCode === null) {
    tty.write(new TextEncoder().encode(`\r\nsbx: detached; session ${id} goes on running. ${again}\r\n`));
    return 0;
  }
  if (exitCode === null) {
    throw new SbxError("unavailable", "the session's connection closed before it ended", {
      hint: "It may still run: `sbx ps`, then `sbx attach <session>`.",
    });
  }
  return exitCode;
}

export interface RelayOptions {
  /** The keys that leave the session running (parseDetachKeys); null or absent: none. */
  detachKeys?: Uint8Array | null;
  /** The session's id, for the line a detach prints. */
  session?: string;
  /** Joining a running session: nudge its size so the program repaints the screen (and its modes). */
  repaint?: boolean;
}

export interface ShellOptions {
  name: string;
  repo?: string;
  /** Command to run; empty for the login shell. */
  argv: string[];
  /** The command as the person started it, for `sbx ps`. */
  command?: string[];
  cwd: string;
  env: Record<string, string | undefined>;
  detachKeys?: Uint8Array | null;
  /** Whether this client's output is a terminal (a pipe or a file gets no colour: forOutput); a terminal when not said. */
  outputIsTTY?: boolean;
}

/** `sbx shell NAME [-- cmd]`: a new session in the sandbox, relayed to this terminal; returns its exit code. */
export async function openShell(client: DaemonClient, opts: ShellOptions, tty: Tty): Promise<number> {
  const session = await client.createSession({
    name: opts.name,
    ...(opts.repo ? { repo: opts.repo } : {}),
    argv: opts.argv,
    ...(opts.command ? { command: opts.command } : {}),
    cwd: opts.cwd,
    ...tty.size(),
    env: forOutput(terminalEnv(opts.env), opts.outputIsTTY ?? true),
  });
  return relayTerminal(client.attachUrl(session.id), tty, { detachKeys: opts.detachKeys ?? null, session: session.id });
}

/** `sbx attach SESSION` (`sbx shell --attach`): joins a running session read-write. */
export function attachShell(client: DaemonClient, session: string, tty: Tty, detachKeys: Uint8Array | null = null): Promise<number> {
  return relayTerminal(client.attachUrl(session), tty, { detachKeys, session, repaint: true });
}
