// The terminal side of the PTY relay: the user's tty in raw mode, keystrokes and resizes to the daemon, output back, the tty restored on exit.
import { DetachMatcher } from "../core/detach-keys";
import { SbxError } from "../core/errors";
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
}

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
    write: (d) => void stdout.write(d),
    onResize(cb) {
      process.on("SIGWINCH", cb);
      return () => void process.off("SIGWINCH", cb);
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
  let detached = false;
  ws.binaryType = "arraybuffer";
  const send = (f: ClientFrame) => ws.readyState === WebSocket.OPEN && ws.send(JSON.stringify(f));
  let exitCode: number | null = null;
  let failure: SbxError | null = null;
  const cleanups: (() => void)[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      ws.onopen = () => {
        if (tty.isTTY) tty.setRawMode(true);
        send({ type: "resize", ...tty.size() });
        cleanups.push(tty.onResize(() => send({ type: "resize", ...tty.size() })));
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
        tty.write(new Uint8Array(ev.data as ArrayBuffer));
      };
      ws.onerror = () => {
        failure ??= new SbxError("unavailable", "lost the connection to the sbx daemon", {
          hint: "The daemon may have stopped: `sbx status`; the session's processes ended with it.",
        });
      };
      ws.onclose = () => (failure && exitCode === null && !detached ? reject(failure) : resolve());
    });
  } finally {
    for (const c of cleanups) c();
    if (tty.isTTY) tty.setRawMode(false);
  }
  if (detached && exitCode === null) {
    const id = opts.session ?? "<session>";
    tty.write(new TextEncoder().encode(`\r\nsbx: detached; session ${id} goes on running. \`sbx shell --attach ${id}\` joins it again (\`sbx ps\` lists sessions).\r\n`));
    return 0;
  }
  if (exitCode === null) {
    throw new SbxError("unavailable", "the session's connection closed before it ended", {
      hint: "It may still run: `sbx ps`, then `sbx shell --attach <session>`.",
    });
  }
  return exitCode;
}

export interface RelayOptions {
  /** The keys that leave the session running (parseDetachKeys); null or absent: none. */
  detachKeys?: Uint8Array | null;
  /** The session's id, for the line a detach prints. */
  session?: string;
}

export interface ShellOptions {
  name: string;
  repo?: string;
  /** Command to run; empty for the login shell. */
  argv: string[];
  cwd: string;
  env: Record<string, string | undefined>;
  detachKeys?: Uint8Array | null;
}

/** `sbx shell NAME [-- cmd]`: a new session in the sandbox, relayed to this terminal; returns its exit code. */
export async function openShell(client: DaemonClient, opts: ShellOptions, tty: Tty): Promise<number> {
  const session = await client.createSession({
    name: opts.name,
    ...(opts.repo ? { repo: opts.repo } : {}),
    argv: opts.argv,
    cwd: opts.cwd,
    ...tty.size(),
    env: terminalEnv(opts.env),
  });
  return relayTerminal(client.attachUrl(session.id), tty, { detachKeys: opts.detachKeys ?? null, session: session.id });
}

/** `sbx shell --attach SESSION`: joins a running session read-write. */
export function attachShell(client: DaemonClient, session: string, tty: Tty, detachKeys: Uint8Array | null = null): Promise<number> {
  return relayTerminal(client.attachUrl(session), tty, { detachKeys, session });
}
