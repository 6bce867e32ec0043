// PTY sessions: a shell under a PTY sbx owns, shared read-write by two clients, with replay for late joiners, resize, ^C and the exit code.
import { afterEach, describe, expect, test } from "bun:test";
import type { SandboxSpec, ShellRequest } from "../../../src/core/spec";
import type { ServerFrame } from "../../../src/daemon/protocol";
import type { SessionClient } from "../../../src/daemon/sessions";
import { FakeBackend } from "../../fakes/backend";
import { makeHarness, post, type Harness } from "../../support/daemon-harness";

/** A backend whose "inside" is a local shell, so the PTY plumbing runs for real. */
class LocalShellBackend extends FakeBackend {
  override shellArgv(_spec: SandboxSpec, req: ShellRequest): string[] {
    return ["env", "-C", req.cwd, "PS1=$ ", ...Object.entries(req.env).map(([k, v]) => `${k}=${v}`), ...(req.argv.length ? req.argv : ["sh", "-i"])];
  }
}

class Client implements SessionClient {
  out = "";
  frames: ServerFrame[] = [];
  closed = false;
  sendData(d: Uint8Array) {
    this.out += new TextDecoder().decode(d);
  }
  sendFrame(f: ServerFrame) {
    this.frames.push(f);
  }
  close() {
    this.closed = true;
  }
  async waitFor(re: RegExp, ms = 5000): Promise<void> {
    const until = Date.now() + ms;
    while (!re.test(this.out)) {
      if (Date.now() > until) throw new Error(`timed out waiting for ${re}; got ${JSON.stringify(this.out)}`);
      await Bun.sleep(10);
    }
  }
  async waitExit(ms = 5000): Promise<number> {
    const until = Date.now() + ms;
    for (;;) {
      const f = this.frames.find((x) => x.type === "exit");
      if (f && f.type === "exit") return f.code;
      if (Date.now() > until) throw new Error("no exit frame");
      await Bun.sleep(10);
    }
  }
}

let h: Harness<LocalShellBackend>;
afterEach(async () => h?.close());

async function startedHarness(): Promise<Harness<LocalShellBackend>> {
  const hh = makeHarness({ backend: () => new LocalShellBackend() });
  hh.store.createSandbox({ name: "demo", repo: "/r", backend: "fake" });
  await hh.start("demo");
  return hh;
}

describe("PTY sessions", () => {
  test("two clients on one shell: either can type, both see everything, a late joiner gets the recent screen", async () => {
    h = await startedHarness();
    const s = await h.sessions.create({ name: "demo", cwd: "/tmp", cols: 100, rows: 30 });
    const a = new Client();
    h.sessions.attach(s.id, a);
    h.sessions.input(s.id, "echo from-a-$((6*7))\n");
    await a.waitFor(/from-a-42/);

    const b = new Client();
    h.sessions.attach(s.id, b);
    expect(b.out).toContain("from-a-42");
    expect(h.sessions.list()[0]!.clients).toBe(2);

    h.sessions.input(s.id, "echo from-b-$((7*7))\n");
    await a.waitFor(/from-b-49/);
    await b.waitFor(/from-b-49/);

    h.sessions.resize(s.id, 132, 40);
    h.sessions.input(s.id, "stty size\n");
    await b.waitFor(/40 132/);

    h.sessions.detach(s.id, b);
    h.sessions.input(s.id, "exit 3\n");
    expect(await a.waitExit()).toBe(3);
    expect(a.closed).toBe(true);
    expect(b.frames.some((f) => f.type === "exit")).toBe(false);
    expect(h.sessions.list()[0]!.exitCode).toBe(3);
  });

  test("^C reaches the foreground process through the PTY, not the daemon", async () => {
    h = await startedHarness();
    const s = await h.sessions.create({ name: "demo", cwd: "/tmp" });
    const a = new Client();
    h.sessions.attach(s.id, a);
    h.sessions.input(s.id, "sleep 30; echo slept\n");
    await Bun.sleep(300);
    h.sessions.input(s.id, "\x03");
    h.sessions.input(s.id, "echo after-int\n");
    await a.waitFor(/after-int\r?\n/);
    // The typed line echoes "echo slept"; the command's own output line never came.
    expect(a.out).not.toMatch(/\nslept\r?\n/);
    h.sessions.input(s.id, "exit 0\n");
    expect(await a.waitExit()).toBe(0);
  });

  test("a command's exit code survives a client that attaches after it ended", async () => {
    h = await startedHarness();
    const s = await h.sessions.create({ name: "demo", cwd: "/tmp", argv: ["sh", "-c", "echo done-here; exit 5"] });
    await Bun.sleep(400);
    const late = new Client();
    h.sessions.attach(s.id, late);
    expect(late.out).toContain("done-here");
    expect(await late.waitExit()).toBe(5);
    const audit = h.store.listAudit().filter((e) => e.kind === "session").map((e) => e.action);
    expect(audit).toEqual(["session.start", "session.exit"]);
  });

  test("the session runs in the requested directory with only terminal variables passed in", async () => {
    h = await startedHarness();
    const res = await post(h, "/v1/sessions", { name: "demo", cwd: "/usr", argv: ["sh", "-c", "pwd; echo T=$TERM"], env: { TERM: "xterm-test" } });
    expect(res.status).toBe(201);
    const { id } = (await res.json()) as { id: string };
    const c = new Client();
    h.sessions.attach(id, c);
    expect(await c.waitExit()).toBe(0);
    expect(c.out).toContain("/usr\r\n");
    expect(c.out).toContain("T=xterm-test");
  });
});
