// Several sbx commands at once, no daemon running: each starts one, one wins the lock, the others exit 75. A command
// whose daemon lost waits for the winner (still starting) instead of failing; any other exit at start is an error.
import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connectDaemon } from "../../../src/client/autostart";
import { API_VERSION } from "../../../src/daemon/protocol";
import type { Paths } from "../../../src/sys/paths";

let dir = "";
let server: ReturnType<typeof Bun.serve> | null = null;
afterEach(() => {
  server?.stop(true);
  server = null;
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function world(): Paths {
  dir = mkdtempSync(join(tmpdir(), "sbx-autostart-"));
  return { runtimeDir: dir, controlSocket: join(dir, "control.sock"), daemonLog: join(dir, "daemon.log") } as Paths;
}

/** The winning daemon, answering /health on the control socket from `afterMs` on. */
function winnerAfter(paths: Paths, afterMs: number): void {
  setTimeout(() => {
    server = Bun.serve({
      unix: paths.controlSocket,
      fetch: () => Response.json({ ok: true, api: API_VERSION, pid: 4242, version: "t", startedAt: 0, socket: paths.controlSocket }),
    });
  }, afterMs);
}

test("our daemon lost the lock (exit 75) while the winner was still starting: the command waits for the winner", async () => {
  const paths = world();
  // The winner holds the lock (a live process: this test's), and answers a moment later.
  writeFileSync(join(paths.runtimeDir, "daemon.pid"), `${process.pid}\n`);
  winnerAfter(paths, 700);
  const client = await connectDaemon({ paths, env: {}, launch: () => ({ pid: 1, exited: Promise.resolve(75) }), timeoutMs: 5000 });
  expect((await client.health())?.pid).toBe(4242);
});

test("any other exit at start is an error that names the log; so is 75 when no other daemon holds the lock", async () => {
  const paths = world();
  for (const code of [70, 75]) {
    const started = Date.now();
    const e = await connectDaemon({ paths, env: {}, launch: () => ({ pid: 1, exited: Promise.resolve(code) }), timeoutMs: 60_000 }).catch((x: unknown) => x as Error);
    expect((e as Error).message).toBe(`the sbx daemon exited at start (code ${code})`);
    expect(Date.now() - started).toBeLessThan(20_000); // at once, not after the whole 60 s wait
  }
});
