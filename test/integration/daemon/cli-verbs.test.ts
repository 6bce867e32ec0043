// The daemon's CLI verbs against a running daemon: status (table and JSON), ps, and logs with --sandbox, --json and --follow.
import { afterEach, describe, expect, test } from "bun:test";
import { CLI, type DaemonProc, killDaemonProc, makeWorld, seedSandbox, startDaemonProc, type World, startSandbox } from "../../support/daemon-proc";

let w: World;
let d: DaemonProc | undefined;
afterEach(async () => {
  await killDaemonProc(d);
  d = undefined;
  w?.cleanup();
});

async function sbx(...args: string[]) {
  const p = Bun.spawn([process.execPath, CLI, ...args], { env: w.env, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const [code, stdout, stderr] = await Promise.all([p.exited, new Response(p.stdout).text(), new Response(p.stderr).text()]);
  return { code, stdout, stderr };
}

describe("daemon CLI verbs", () => {
  test("status shows each sandbox's state in sbx's one word and its guards (a stopped one is unguarded); --json says the same", async () => {
    w = makeWorld();
    seedSandbox(w, "good");
    seedSandbox(w, "idle");
    d = await startDaemonProc(w);
    await startSandbox(w, "good");
    const r = await sbx("status");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`daemon: running pid ${d.pid}`);
    expect(r.stdout).toMatch(/^good\s+running\s+yes\s+proxy ok, bridge ok/m);
    expect(r.stdout).toMatch(/^idle\s+stopped\s+no\s+/m);
    expect(r.stdout).not.toMatch(/\b(active|absent)\b/);
    const j = JSON.parse((await sbx("status", "--json")).stdout) as { sandboxes: Record<string, unknown>[] };
    expect(j.sandboxes.map((s) => [s.name, s.state, "phase" in s])).toEqual([["good", "running", false], ["idle", "stopped", false]]);
  });

  test("ps lists sessions with their clients and state", async () => {
    w = makeWorld();
    seedSandbox(w, "demo");
    d = await startDaemonProc(w);
    await startSandbox(w, "demo");
    const s = await w.client.createSession({ name: "demo", cwd: "/tmp", argv: ["sleep", "30"] });
    const r = await sbx("ps");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^${s.id}\\s+demo\\s+${s.pid}\\s+0\\s+.*running\\s+sleep 30$`, "m"));
    const j = JSON.parse((await sbx("ps", "--json")).stdout);
    expect(j[0].id).toBe(s.id);
    expect(j[0].startedAt).toBe(new Date(s.startedAt).toISOString().replace(/\.\d{3}Z$/, "Z"));
  });

  test("ps shows an agent as the person started it (claude -p …), sbx's launcher only with --verbose", async () => {
    w = makeWorld();
    seedSandbox(w, "demo");
    d = await startDaemonProc(w);
    await startSandbox(w, "demo");
    const launcher = ["/bin/sh", "-c", 'b=$1 s=$2; shift 2; exec "$@"', "sbx-agent", "x", "y", "sleep", "30"];
    const s = await w.client.createSession({ name: "demo", cwd: "/tmp", argv: launcher, command: ["claude", "-p", "fix the tests"] });
    const r = await sbx("ps");
    expect(r.stdout).toMatch(new RegExp(`^${s.id}\\s+demo\\s+.*running\\s+claude -p fix the tests$`, "m"));
    expect(r.stdout).not.toContain("sbx-agent");
    expect((await sbx("ps", "--verbose")).stdout).toMatch(/running\s+\/bin\/sh -c b=\$1 s=\$2; shift 2; exec "\$@" sbx-agent x y sleep 30$/m);
    const [j] = JSON.parse((await sbx("ps", "--json")).stdout);
    expect([j.command, j.argv]).toEqual([["claude", "-p", "fix the tests"], launcher]);
  });

  test("logs: filtered by sandbox, as JSON lines, and --follow prints entries written later", async () => {
    w = makeWorld();
    seedSandbox(w, "a");
    seedSandbox(w, "b");
    d = await startDaemonProc(w);
    await startSandbox(w, "a");
    await startSandbox(w, "b");
    const only = await sbx("logs", "--sandbox", "a", "--json");
    expect(only.code).toBe(0);
    const entries = only.stdout.trim().split("\n").map((l) => JSON.parse(l));
    expect(entries.length).toBeGreaterThan(0);
    expect(entries.every((e: { sandbox: string }) => e.sandbox === "a")).toBe(true);
    expect(entries.map((e: { action: string }) => e.action)).toContain("sandbox.started");
    // Times as ISO 8601 in UTC, in JSON lines and in lines for people alike.
    expect(entries.every((e: { ts: unknown }) => typeof e.ts === "string" && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/.test(e.ts))).toBe(true);

    const human = await sbx("logs", "--sandbox", "b");
    expect(human.stdout).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ  b\s+daemon\s+sandbox\.started/m);

    const follow = Bun.spawn([process.execPath, CLI, "logs", "--follow", "--json", "--sandbox", "a"], { env: w.env, stdout: "pipe", stderr: "pipe" });
    try {
      const store = w.store();
      const sb = store.findSandbox("/r", "a")!;
      await Bun.sleep(500);
      store.audit({ sandboxId: sb.id, kind: "egress", action: "denied", detail: { host: "example.org" } });
      const reader = follow.stdout.getReader();
      let out = "";
      const until = Date.now() + 5000;
      while (!out.includes('"denied"') && Date.now() < until) {
        const { value, done } = await Promise.race([reader.read(), Bun.sleep(5000).then(() => ({ value: undefined, done: true }))]);
        if (done) break;
        out += new TextDecoder().decode(value);
      }
      expect(out).toContain('"action":"denied"');
      expect(out).toContain("example.org");
    } finally {
      follow.kill();
      await follow.exited;
    }
  });
});
