// The pflog audit with real child processes under sbx's PTY (a stand-in script prints what tcpdump would): lines across the PTY become audit rows, a dead child is restarted, stop kills the live one by pid.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorCommand } from "../../../src/drivers/macos/monitor";
import { silentLogger } from "../../../src/sys/log";
import { ptyLines, startPflogAudit, type SpawnLines } from "../../../src/drivers/macos/pflog-audit";
import { Store } from "../../../src/store/store";
import { createExec } from "../../../src/sys/exec";
import type { Paths } from "../../../src/sys/paths";

const dir = mkdtempSync(join(tmpdir(), "sbx-pflog-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Run n prints one blocked packet to 10.<n>.0.1; the first run then dies (as tcpdump does when pflog0 goes away), later ones stay.
const FIXTURE = join(dir, "fake-tcpdump.ts");
writeFileSync(
  FIXTURE,
  `import { existsSync, readFileSync, writeFileSync } from "node:fs";
const f = ${JSON.stringify(join(dir, "runs"))};
const n = existsSync(f) ? Number(readFileSync(f, "utf8")) : 0;
writeFileSync(f, String(n + 1));
console.error("tcpdump: listening on pflog0, link-type PFLOG (OpenBSD pflog file), snapshot length 524288 bytes");
console.log("00:00:00.000000 rule 1.sbx_7001.1/0(match) [uid 7001]: block out on en0: 192.168.1.20.52144 > 10." + n + ".0.1.443: Flags [S], seq 1, win 65535, length 0");
if (n === 0) process.exit(1);
setInterval(() => {}, 1000);
`,
);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(cond: () => boolean, ms = 10_000): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error("condition not met in time");
    await Bun.sleep(10);
  }
}

describe("pflog audit with real children under a PTY", () => {
  test("lines become audit rows of the sandbox; the dead child is restarted; stop kills the live one by pid", async () => {
    const store = new Store(":memory:");
    const row = store.createSandbox({
      name: "demo",
      repo: "/Users/alice/src/demo",
      backend: "macos",
      identity: { kind: "user", id: "0a1b2c3d4e5f", dir: "/x/demo", proxyPort: 17001, hostUser: { name: "alice", uid: 501, gid: 20, home: "/Users/alice", shell: "/bin/zsh" } },
    });
    const argvs: (readonly string[])[] = [];
    const pty = ptyLines(createExec({ PATH: process.env.PATH ?? "/usr/bin:/bin" }));
    // The real argv needs sudo and pflog0: the stand-in runs instead, through the same PTY-backed spawner.
    const spawn: SpawnLines = (argv, onLine) => {
      argvs.push(argv);
      return pty([process.execPath, FIXTURE], onLine);
    };
    const audit = startPflogAudit({
      backend: { guestUids: async () => new Map([[7001, "0a1b2c3d4e5f"]]) },
      spawn,
      store,
      paths: { runtimeDir: "/tmp/sbx-501", sandboxRoot: "/x" } as Paths,
      log: silentLogger,
      backoff: { minMs: 20, maxMs: 200 },
    });
    try {
      await until(() => store.listAudit({ sandboxId: row.id }).length === 2);
      expect(store.listAudit({ sandboxId: row.id }).map((r) => [r.action, r.detail.dst, r.detail.dport])).toEqual([
        ["blocked-raw", "10.0.0.1", 443],
        ["blocked-raw", "10.1.0.1", 443],
      ]);
      expect(audit.starts()).toBe(2);
      expect(argvs).toEqual([monitorCommand(), monitorCommand()]);
      const pid = audit.pid()!;
      expect(alive(pid)).toBe(true);
      await audit.stop();
      expect(alive(pid)).toBe(false);
      expect(audit.pid()).toBeNull();
      await Bun.sleep(100);
      expect(audit.starts()).toBe(2); // nothing restarted after stop
    } finally {
      await audit.stop();
      store.close();
    }
  });
});
