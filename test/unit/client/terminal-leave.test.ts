// terminal-restore: every way the relay leaves a session before it ends (detach keys, SIGHUP/SIGTERM/SIGINT, the
// daemon's socket gone) writes the resets of what the session turned on, then its note on a fresh line; a session
// that ends leaves nothing to reset when its program cleaned up; a join nudges the size (one row less, then the size).
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { relayTerminal, type LeaveSignal, type Tty } from "../../../src/client/terminal";

const dec = (b: Uint8Array[]) => b.map((x) => new TextDecoder().decode(x)).join("");
const MODES = "\x1b[?1049h\x1b[?1003h\x1b[?1006h\x1b[?25l";
const RESETS = "\x1b[?1049l\x1b[?1003l\x1b[?1006l\x1b[?25h";

let dir: string | undefined;
let server: ReturnType<typeof Bun.serve> | undefined;
afterEach(() => {
  server?.stop(true);
  server = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** A daemon's attach socket that sends `output` and records the client's text frames; `close` ends it from the daemon's side. */
function fakeDaemon(output: string, after: "hold" | "exit" = "hold") {
  dir = mkdtempSync(join(tmpdir(), "sbx-leave-"));
  const socket = join(dir, "d.sock");
  const frames: unknown[] = [];
  let peer: { close(): void } | undefined;
  server = Bun.serve({
    unix: socket,
    fetch(req, srv) {
      return srv.upgrade(req, { data: undefined }) ? undefined : new Response("no", { status: 400 });
    },
    websocket: {
      open(ws) {
        peer = ws;
        ws.send(new TextEncoder().encode(output));
        if (after === "exit") setTimeout(() => (ws.send(JSON.stringify({ type: "exit", code: 3 })), ws.close()), 50);
      },
      message(_ws, m) {
        if (typeof m === "string") frames.push(JSON.parse(m));
      },
    },
  });
  return { url: `ws+unix://${socket}:/v1/attach?session=s-1`, frames, close: () => peer?.close() };
}

function fakeTty() {
  const written: Uint8Array[] = [];
  let input: ((d: Uint8Array) => void) | undefined;
  let signal: ((s: LeaveSignal) => void) | undefined;
  const tty: Tty = {
    isTTY: true,
    size: () => ({ cols: 90, rows: 20 }),
    setRawMode() {},
    onInput(onData) {
      input = onData;
      return () => {};
    },
    write: (d) => void written.push(d),
    onResize: () => () => {},
    onSignal(cb) {
      signal = cb;
      return () => (signal = undefined);
    },
  };
  return { tty, written, type: (s: string) => input!(new TextEncoder().encode(s)), signal: (s: LeaveSignal) => signal!(s) };
}

const until = async (f: () => boolean) => {
  for (let i = 0; i < 200 && !f(); i++) await Bun.sleep(10);
};

describe("terminal-restore: the relay's ways out", () => {
  test.each([["SIGHUP", 129], ["SIGTERM", 143], ["SIGINT", 130]] as const)("%s: resets, then the note on a line of its own; exit %d", async (sig, code) => {
    const d = fakeDaemon(MODES + "drawn");
    const t = fakeTty();
    const done = relayTerminal(d.url, t.tty, { session: "s-1" });
    await until(() => dec(t.written).includes("drawn"));
    t.signal(sig);
    expect(await done).toBe(code);
    expect(dec(t.written)).toBe(`${MODES}drawn${RESETS}\r\nsbx: ${sig} ended this client; session s-1 goes on running. \`sbx attach s-1\` joins it again (\`sbx ps\` lists sessions).\r\n`);
  });

  test("detach keys: resets before the note", async () => {
    const d = fakeDaemon(MODES);
    const t = fakeTty();
    const done = relayTerminal(d.url, t.tty, { session: "s-1", detachKeys: new Uint8Array([0x10, 0x11]) });
    await until(() => dec(t.written).length > 0);
    t.type("\x10\x11");
    expect(await done).toBe(0);
    expect(dec(t.written)).toStartWith(`${MODES}${RESETS}\r\nsbx: detached;`);
  });

  test("the daemon gone: resets, a fresh line, then the error", async () => {
    const d = fakeDaemon(MODES);
    const t = fakeTty();
    const done = relayTerminal(d.url, t.tty, { session: "s-1" });
    await until(() => dec(t.written).length > 0);
    d.close();
    await expect(done).rejects.toThrow(/closed before it ended/);
    expect(dec(t.written)).toBe(`${MODES}${RESETS}\r\n`);
  });

  test("a session that ends after its program cleaned up: nothing written after its output; its exit code", async () => {
    const d = fakeDaemon(`${MODES}bye\x1b[?25h\x1b[?1006l\x1b[?1003l\x1b[?1049l`, "exit");
    const t = fakeTty();
    expect(await relayTerminal(d.url, t.tty, { session: "s-1" })).toBe(3);
    expect(dec(t.written)).toBe(`${MODES}bye\x1b[?25h\x1b[?1006l\x1b[?1003l\x1b[?1049l`);
  });

  test("joining (repaint): the size one row less, then the terminal's own", async () => {
    const d = fakeDaemon("");
    const t = fakeTty();
    const done = relayTerminal(d.url, t.tty, { session: "s-1", repaint: true });
    await until(() => d.frames.length >= 2);
    t.signal("SIGTERM");
    await done;
    expect(d.frames.slice(0, 2)).toEqual([{ type: "resize", cols: 90, rows: 19 }, { type: "resize", cols: 90, rows: 20 }]);
  });
});
