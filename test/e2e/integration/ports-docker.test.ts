// `sbx port` (issue 23): a server a Docker sandbox runs on its own loopback is reached from the host at 127.0.0.1
// (another address only when the person writes one), through sbx (the container has no network), for as long as the
// sandbox runs; forwards are kept with the sandbox, changed live, and a host port in use is refused with nothing
// changed. Real CLI, real engine, a second uid.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import type { Fixture } from "../docker/fixture";
import { acquireFixture, canRun, makeRepo, must, releaseFixture, removeRepoImages, skipReason } from "./harness";

const tag = Math.random().toString(36).slice(2, 8);
let f: Fixture;
let repo = "";
const sbx = (args: string[]) => f.sbx(args, { cwd: repo });

/** A port free on the host's loopback right now. */
async function freePort(): Promise<number> {
  const s = createServer();
  const p = await new Promise<number>((r) => s.listen(0, "127.0.0.1", () => r((s.address() as { port: number }).port)));
  await new Promise<void>((r) => s.close(() => r()));
  return p;
}

/** Starts a web server inside on `port` (bound to `bind`), serving index.html as the shell command `make` writes it. */
function serveInside(port: number, bind: string, make: string): void {
  must(sbx(["exec", "web", "--", "sh", "-c", `mkdir -p /tmp/www-${port} && cd /tmp/www-${port} && ${make} > index.html && setsid -f python3 -m http.server ${port} --bind ${bind} >/dev/null 2>&1 </dev/null; for i in $(seq 50); do python3 -c "import socket,sys; s=socket.socket(); s.connect(('127.0.0.1', ${port}))" 2>/dev/null && exit 0; sleep 0.1; done; exit 1`]), `serve ${port}`);
}

const get = async (port: number) => {
  try {
    const r = await fetch(`http://127.0.0.1:${port}/index.html`, { signal: AbortSignal.timeout(5000) });
    return await r.text();
  } catch (e) {
    return `error: ${(e as Error).message}`;
  }
};

/** The addresses the host listens on for `port` (from /proc/net/tcp and tcp6: hex address:port). */
function listeners(port: number): string[] {
  const hex = port.toString(16).toUpperCase().padStart(4, "0");
  const out: string[] = [];
  for (const f of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    for (const line of readFileSync(f, "utf8").split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols[3] === "0A" && cols[1]?.endsWith(`:${hex}`)) out.push(cols[1]!.split(":")[0]!);
    }
  }
  return out;
}

describe.skipIf(!canRun)(`sbx port on Docker${canRun ? "" : ` — skipped: ${skipReason}`}`, () => {
  let p1 = 0;
  let p2 = 0;
  let h2 = 0;
  beforeAll(async () => {
    f = acquireFixture();
    repo = makeRepo(f, `ports-${tag}`);
    [p1, p2, h2] = [await freePort(), await freePort(), await freePort()];
    must(sbx(["create", "web", "--port", String(p1)]), "create --port");
  }, 180_000);

  afterAll(() => {
    if (repo) {
      sbx(["rm", "--force", "web"]);
      removeRepoImages(repo);
    }
    releaseFixture();
  }, 60_000);

  test("--port at create: the sandbox's server on its 127.0.0.1 answers at the host's 127.0.0.1, and only there", async () => {
    serveInside(p1, "127.0.0.1", `printf 'hello from ${tag}'`);
    expect(await get(p1)).toBe(`hello from ${tag}`);
    expect(listeners(p1)).toEqual(["0100007F"]);
    const list = JSON.parse(must(sbx(["port", "web", "--json"]), "port --json").stdout) as { ports: { port: number; host: number; state: string }[]; running: boolean };
    expect(list).toMatchObject({ running: true, ports: [{ port: p1, host: p1, state: "forwarding" }] });
    // The connection the agent makes inside is handed over (dial.sock): the daemon relays to it, no frames.
    const st = JSON.parse(must(sbx(["status", "--json"]), "status --json").stdout) as { sandboxes: { name: string; guards: { name: string; detail: string }[] }[] };
    expect(st.sandboxes.find((s) => s.name === "web")?.guards.find((g) => g.name === "exec-agent")?.detail).toContain("handed over");
  }, 120_000);

  test("sbx port NAME HOST:PORT while it runs: a server on 0.0.0.0 (a dev server's usual) is reached too; a megabyte comes through intact", async () => {
    serveInside(p2, "0.0.0.0", "head -c 1048576 /dev/zero | tr '\\0' x");
    must(sbx(["port", "web", `${h2}:${p2}`]), "port add");
    const body = await get(h2);
    expect(body.length).toBe(1 << 20);
    expect(body).toBe("x".repeat(1 << 20));
  }, 120_000);

  test("a host port in use is refused (69) and nothing changes", async () => {
    const busy = createServer();
    const port = await new Promise<number>((r) => busy.listen(0, "127.0.0.1", () => r((busy.address() as { port: number }).port)));
    try {
      const r = sbx(["port", "web", `${port}:${p1}`]);
      expect(r.code).toBe(69);
      // Who holds it is named when /proc says (sys/port-holders.ts), else that it is in use.
      expect(r.stderr).toMatch(new RegExp(`127\\.0\\.0\\.1:${port} (is in use on this machine|is held by [^;]+); nothing changed`));
      const list = JSON.parse(must(sbx(["port", "web", "--json"]), "port --json").stdout) as { ports: { host: number }[] };
      expect(list.ports.map((p) => p.host).sort()).toEqual([p1, h2].sort());
    } finally {
      await new Promise<void>((r) => busy.close(() => r()));
    }
  }, 60_000);

  test("another address only when written: 127.0.0.2 and 0.0.0.0 (said: others can reach it); one that is not this machine's is refused", async () => {
    const [h3, h4] = [await freePort(), await freePort()];
    const lo2 = sbx(["port", "web", `127.0.0.2:${h3}:${p1}`]);
    expect({ code: lo2.code, err: lo2.stderr }).toEqual({ code: 0, err: "" });
    expect(listeners(h3)).toEqual(["0200007F"]);
    const body = await fetch(`http://127.0.0.2:${h3}/index.html`, { signal: AbortSignal.timeout(5000) }).then((r) => r.text(), (e: Error) => `error: ${e.message}`);
    expect(body).toBe(`hello from ${tag}`);
    const wide = sbx(["port", "web", `0.0.0.0:${h4}:${p1}`]);
    expect(wide.code).toBe(0);
    expect(wide.stderr).toContain(`note: 0.0.0.0:${h4} is not loopback: other machines that reach this one reach sandbox web's port ${p1}`);
    expect(wide.stdout).toContain(`0.0.0.0:${h4}`);
    expect(listeners(h4)).toEqual(["00000000"]);
    expect(await get(h4)).toBe(`hello from ${tag}`);
    const foreign = sbx(["port", "web", `192.0.2.1:${h4 + 1}:${p1}`]);
    expect({ code: foreign.code, err: foreign.stderr }).toEqual({ code: 69, err: expect.stringContaining("192.0.2.1 is not an address of this machine; nothing changed") });
    must(sbx(["port", "web", "--rm", String(h3), "--rm", String(h4)]), "port --rm");
    expect([...listeners(h3), ...listeners(h4)]).toEqual([]);
  }, 60_000);

  test("--rm of a port it does not forward is said (66), and nothing changes", () => {
    const r = sbx(["port", "web", "--rm", "1"]);
    expect({ code: r.code, err: r.stderr }).toEqual({ code: 66, err: "sbx: sbx port --rm: sandbox web forwards no port 1; nothing changed\nhint: `sbx port web` lists what it forwards.\n" });
    const list = JSON.parse(must(sbx(["port", "web", "--json"]), "port --json").stdout) as { ports: { host: number }[] };
    expect(list.ports.map((p) => p.host).sort()).toEqual([p1, h2].sort());
  }, 60_000);

  test("--rm stops one at once; stop closes the rest, a start brings them back", async () => {
    must(sbx(["port", "web", "--rm", String(p2)]), "port --rm");
    expect(await get(h2)).toStartWith("error:");
    must(sbx(["stop", "web"]), "stop");
    expect(listeners(p1)).toEqual([]);
    expect(JSON.parse(must(sbx(["port", "web", "--json"]), "port --json").stdout)).toMatchObject({ running: false, ports: [{ port: p1, host: p1, state: "stopped" }] });
    must(sbx(["exec", "web", "--", "true"]), "start");
    serveInside(p1, "127.0.0.1", "printf 'back again'");
    expect(await get(p1)).toBe("back again");
  }, 120_000);
});
