// Two terminals, one shell: a session relayed over ws+unix is joined read-write by a second client (WebSocket clients, and real terminals driven with tmux).
import { afterEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { ServerFrameSchema } from "../../../src/daemon/protocol";
import { type DaemonProc, killDaemonProc, makeWorld, seedSandbox, startDaemonProc, type World, startSandbox } from "../../support/daemon-proc";

let w: World;
let d: DaemonProc | undefined;
let tmuxSocket: string | undefined;
afterEach(async () => {
  if (tmuxSocket) {
    Bun.spawnSync(["tmux", "-S", tmuxSocket, "kill-server"]);
    tmuxSocket = undefined;
  }
  await killDaemonProc(d);
  d = undefined;
  w?.cleanup();
});

class WsTerm {
  out = "";
  exit: number | null = null;
  closed: Promise<void>;
  ws: WebSocket;
  constructor(url: string) {
    this.ws = new WebSocket(url);
    this.ws.binaryType = "arraybuffer";
    this.ws.onmessage = (e) => {
      if (typeof e.data === "string") {
        const f = ServerFrameSchema.parse(JSON.parse(e.data));
        if (f.type === "exit") this.exit = f.code;
      } else this.out += new TextDecoder().decode(e.data as ArrayBuffer);
    };
    this.closed = new Promise((r) => (this.ws.onclose = () => r()));
  }
  opened(): Promise<void> {
    return new Promise((r) => (this.ws.readyState === WebSocket.OPEN ? r() : (this.ws.onopen = () => r())));
  }
  type(s: string) {
    this.ws.send(new TextEncoder().encode(s));
  }
  async waitFor(re: RegExp, ms = 5000) {
    const until = Date.now() + ms;
    while (!re.test(this.out)) {
      if (Date.now() > until) throw new Error(`timed out waiting for ${re}: ${JSON.stringify(this.out)}`);
      await Bun.sleep(10);
    }
  }
}

const hasTmux = Bun.spawnSync(["sh", "-c", "command -v tmux"]).exitCode === 0;

describe("shared sessions through the daemon", () => {
  test("two WebSocket clients on one session: both type, both see, both get the exit code; ps lists it", async () => {
    w = makeWorld();
    seedSandbox(w, "demo");
    d = await startDaemonProc(w);
    await startSandbox(w, "demo");
    const s = await w.client.createSession({ name: "demo", cwd: "/tmp", cols: 90, rows: 25 });
    const a = new WsTerm(w.client.attachUrl(s.id));
    await a.opened();
    const b = new WsTerm(w.client.attachUrl(s.id));
    await b.opened();
    a.type("echo one-$((40+2))\n");
    await b.waitFor(/one-42/);
    b.type("echo two-$((50+5))\n");
    await a.waitFor(/two-55/);
    const listed = (await w.client.sessions()).sessions;
    expect(listed.map((x) => [x.id, x.sandbox, x.clients])).toEqual([[s.id, "demo", 2]]);
    a.ws.send(JSON.stringify({ type: "resize", cols: 120, rows: 33 }));
    await Bun.sleep(50);
    b.type("stty size\n");
    await a.waitFor(/33 120/);
    b.type("exit 6\n");
    await Promise.all([a.closed, b.closed]);
    expect([a.exit, b.exit]).toEqual([6, 6]);
  });

  test("attaching to an unknown session is a JSON error, not a dead socket", async () => {
    w = makeWorld();
    d = await startDaemonProc(w);
    const res = await fetch("http://sbx/v1/attach?session=nope-0000", {
      unix: w.paths.controlSocket,
      headers: { upgrade: "websocket", connection: "upgrade", "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==", "sec-websocket-version": "13" },
    });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { hint: string }).hint).toContain("sbx ps");
  });

  describe.skipIf(!hasTmux)(`two real terminals (tmux)${hasTmux ? "" : " (skipped: tmux is not installed)"}`, () => {
    /**
     * Opens a shell in tmux window 0 with the client-side relay, joins it from window 1 with `attachArgv`,
     * and checks both terminals type into and see one shell, ^C, and the exit code in both.
     */
    async function twoTerminals(attachArgv: (session: string) => string[], env: (w: World) => Record<string, string>) {
      w = makeWorld();
      seedSandbox(w, "demo");
      d = await startDaemonProc(w);
      await startSandbox(w, "demo");
      tmuxSocket = join(w.root, "tmux.sock");
      const term = join(import.meta.dir, "..", "..", "support", "daemon-term.ts");
      const tmux = (...args: string[]) => {
        const r = Bun.spawnSync(["tmux", "-S", tmuxSocket!, ...args], { env: { ...env(w), TERM: "xterm-256color" } });
        if (r.exitCode !== 0) throw new Error(`tmux ${args.join(" ")}: ${r.stderr.toString()}`);
        return r.stdout.toString();
      };
      const capture = (target: string) => tmux("capture-pane", "-p", "-J", "-t", target);
      const waitPane = async (target: string, re: RegExp, ms = 8000) => {
        const until = Date.now() + ms;
        for (;;) {
          const text = capture(target);
          if (re.test(text)) return text;
          if (Date.now() > until) throw new Error(`pane ${target} never matched ${re}:\n${text}`);
          await Bun.sleep(50);
        }
      };
      tmux("new-session", "-d", "-s", "t", "-x", "100", "-y", "30", process.execPath, term, w.paths.controlSocket, "open", "demo");
      tmux("set-option", "-t", "t", "remain-on-exit", "on");
      await waitPane("t:0", /\$ $/m);
      const [session] = (await w.client.sessions()).sessions;
      expect(session?.sandbox).toBe("demo");
      tmux("new-window", "-t", "t:1", "sh", "-c", `${attachArgv(session!.id).map((a) => `'${a}'`).join(" ")}; echo "[attach exited: $?]"; sleep 30`);
      // Type only once the daemon counts the second client: under a loaded CI machine the CLI can take longer than any fixed pause.
      const until = Date.now() + 8000;
      while ((await w.client.sessions()).sessions[0]?.clients !== 2) {
        if (Date.now() > until) throw new Error(`the second terminal never joined:\n${capture("t:1")}`);
        await Bun.sleep(50);
      }
      tmux("send-keys", "-t", "t:1", "echo typed-in-two-$((20+3))", "Enter");
      await waitPane("t:0", /^typed-in-two-23$/m);
      tmux("send-keys", "-t", "t:0", "echo typed-in-one-$((30+4))", "Enter");
      await waitPane("t:1", /^typed-in-one-34$/m);
      // ^C in the raw terminal reaches the sandbox's foreground process, not sbx's relay.
      tmux("send-keys", "-t", "t:0", "sleep 30", "Enter");
      await Bun.sleep(300);
      tmux("send-keys", "-t", "t:1", "C-c");
      // The sleep ends at once (not after 30 s) and the shell prompts again; keys typed before that would be echoed by the
      // line discipline while sleep still runs, so the next command waits for the prompt.
      await waitPane("t:0", /^\$ sleep 30\n\^C\n\$ $/m);
      tmux("send-keys", "-t", "t:1", "echo still-here", "Enter");
      await waitPane("t:0", /^still-here$/m);
      tmux("send-keys", "-t", "t:0", "exit 4", "Enter");
      await waitPane("t:0", /\[session ended: exit=4\]/);
      return waitPane("t:1", /exit(ed)?[:=] ?4\]/);
    }

    // Two bun terminal clients, a daemon and tmux: well over the default 5 s when the whole suite runs in parallel.
    test("a second terminal attaches read-write to the first one's shell, and both end with its exit code", async () => {
      const term = join(import.meta.dir, "..", "..", "support", "daemon-term.ts");
      await twoTerminals((id) => [process.execPath, term, w.paths.controlSocket, "attach", id], (w) => w.env);
    }, 30_000);

    test("the real CLI joins it: sbx shell --attach <session> (and exits with the shell's code)", async () => {
      const cli = join(import.meta.dir, "..", "..", "..", "src", "cli", "main.ts");
      const pane = await twoTerminals((id) => [process.execPath, cli, "shell", "--attach", id], (w) => w.env);
      expect(pane).toContain("[attach exited: 4]");
    }, 30_000);

    test("the real CLI joins it by its sandbox's name: sbx attach demo", async () => {
      const cli = join(import.meta.dir, "..", "..", "..", "src", "cli", "main.ts");
      const pane = await twoTerminals(() => [process.execPath, cli, "attach", "demo"], (w) => w.env);
      expect(pane).toContain("[attach exited: 4]");
    }, 30_000);
  });
});
