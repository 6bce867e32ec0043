// runtime-dir-own: the daemon's runtime dir (its control socket, its lock, every sandbox's socket dir) is made by the
// daemon's own user without following a link, and a dir another user planted there first is refused. The fallback
// `/tmp/sbx-<uid>` (root's is `/tmp/sbx-0`) sits in a dir everyone can write, so another account can be there first:
// with a symlink (to a dir the daemon's user owns, so an ownership check through it passes and the mode change lands on
// the target, and the link can be re-pointed later) or with a dir of its own. Real second uids, real sticky dirs.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { ensurePrivateDir } from "../../../src/daemon/server";
import { SbxError } from "../../../src/core/errors";
import { cannotCreateUsers, createTestUser, type TestUser } from "../../support/test-user";

const why = cannotCreateUsers();
const SERVER = join(import.meta.dir, "../../../src/daemon/server.ts");
const CLI = join(import.meta.dir, "../../../src/cli/main.ts");

/** The error ensurePrivateDir throws, or null when it accepted the dir. */
function refusalOf(dir: string, uid: number): SbxError | null {
  try {
    ensurePrivateDir(dir, uid);
    return null;
  } catch (e) {
    if (e instanceof SbxError) return e;
    throw e;
  }
}

describe.skipIf(why !== undefined)(`runtime-dir-own: a planted runtime dir is refused, never followed${why ? ` (skipped: ${why})` : ""}`, () => {
  let attacker: TestUser;
  let victim: TestUser;
  /** A sticky, world-writable dir like /tmp, private to this test. */
  let tmp: string;
  const made: string[] = [];
  beforeAll(() => {
    attacker = createTestUser({ groups: [] });
    victim = createTestUser({ groups: [] });
    tmp = mkdtempSync("/tmp/sbx-rtdir-e2e-");
    made.push(tmp);
    chmodSync(tmp, 0o1777);
  });
  afterAll(() => {
    for (const p of made) rmSync(p, { recursive: true, force: true });
    attacker?.remove();
    victim?.remove();
  });

  test("root's: a symlink another uid planted to a root-owned dir is refused, and the target's mode is left as it was", () => {
    const target = join(tmp, "root-owned-target");
    mkdirSync(target, { mode: 0o755 });
    chmodSync(target, 0o755);
    const dir = join(tmp, "sbx-0");
    expect(attacker.run(["ln", "-s", target, dir]).code).toBe(0);
    expect(lstatSync(dir).uid).toBe(attacker.uid);
    const e = refusalOf(dir, 0);
    expect(e?.code).toBe("permission");
    expect(e?.message).toContain("symlink");
    expect(e?.hint).toContain(dir);
    expect(statSync(target).mode & 0o7777).toBe(0o755);
    expect(readlinkSync(dir)).toBe(target);
  });

  test("root's: a dir another uid planted is refused, named with its owner", () => {
    const dir = join(tmp, "sbx-0-dir");
    expect(attacker.run(["mkdir", "-m", "0777", dir]).code).toBe(0);
    const e = refusalOf(dir, 0);
    expect(e?.code).toBe("permission");
    expect(e?.message).toContain(`uid ${attacker.uid}`);
    expect(statSync(dir).mode & 0o777).toBe(0o777);
  });

  test("root's: a fresh one is made 0700 and owned by root; a second call accepts it", () => {
    const dir = join(tmp, "sbx-0-fresh");
    expect(refusalOf(dir, 0)).toBeNull();
    const st = lstatSync(dir);
    expect({ dir: st.isDirectory(), uid: st.uid, mode: st.mode & 0o777 }).toEqual({ dir: true, uid: 0, mode: 0o700 });
    chmodSync(dir, 0o755);
    expect(refusalOf(dir, 0)).toBeNull();
    expect(lstatSync(dir).mode & 0o777).toBe(0o700);
  });

  test("any user's: a symlink another uid planted to the victim's own dir is refused when the victim's sbx sets it up", () => {
    const target = join(victim.home, "a-dir-of-mine");
    mkdirSync(target, { mode: 0o755 });
    chownSync(target, victim.uid, victim.gid);
    chmodSync(target, 0o755);
    const dir = join(tmp, `sbx-${victim.uid}`);
    expect(attacker.run(["ln", "-s", target, dir]).code).toBe(0);
    const script = `import { ensurePrivateDir } from ${JSON.stringify(SERVER)};
try { ensurePrivateDir(${JSON.stringify(dir)}, ${victim.uid}); console.log("accepted"); }
catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); }`;
    const r = victim.run(["bun", "--no-env-file", "--config=/dev/null", "-e", script], { cwd: "/" });
    expect(r.stderr).toBe("");
    const out = r.stdout.trim();
    expect(out).not.toBe("accepted");
    expect(JSON.parse(out)).toMatchObject({ code: "permission" });
    expect(statSync(target).mode & 0o777).toBe(0o755);
  });

  test("`sbx daemon` of a user without XDG_RUNTIME_DIR, whose /tmp/sbx-<uid> another uid planted as a symlink, refuses to start (exit 77) and says what to do", async () => {
    const dir = `/tmp/sbx-${victim.uid}`;
    rmSync(dir, { recursive: true, force: true });
    made.push(dir);
    const target = join(victim.home, "elsewhere");
    mkdirSync(target, { mode: 0o700 });
    chownSync(target, victim.uid, victim.gid);
    expect(attacker.run(["ln", "-s", target, dir]).code).toBe(0);
    const p = victim.spawn(["bun", "--no-env-file", "--config=/dev/null", CLI, "daemon"], { cwd: "/" });
    const exited = await Promise.race([p.exited, Bun.sleep(15_000).then(() => null)]);
    if (exited === null) {
      // It started (through the link): stop the daemon this test started (its pid is in the lock it took), then fail.
      const pid = Number.parseInt(readFileSync(join(target, "daemon.pid"), "utf8"), 10);
      if (pid > 0) process.kill(pid, "SIGKILL");
      p.kill("SIGKILL");
    }
    const code = await p.exited;
    const err = await new Response(p.stderr).text();
    expect({ exited, err }).toMatchObject({ exited: 77 });
    expect(code).toBe(77);
    expect(err).toContain(dir);
    expect(err).toContain("symlink");
    expect(lstatSync(dir).isSymbolicLink()).toBe(true);
  }, 30_000);

  test("the CLI of a user whose /tmp/sbx-<uid> another uid made (with a socket that answers like a daemon) never talks to it: exit 77, the fake daemon hears nothing", async () => {
    const dir = `/tmp/sbx-${victim.uid}`;
    rmSync(dir, { recursive: true, force: true });
    made.push(dir);
    expect(attacker.run(["mkdir", "-m", "0755", dir]).code).toBe(0);
    // The attacker's "daemon": answers /health and writes down every request it gets.
    const heard = join(dir, "heard");
    const server = attacker.spawn(["bun", "--no-env-file", "--config=/dev/null", "-e", `
      const fs = require("node:fs");
      Bun.serve({ unix: ${JSON.stringify(join(dir, "control.sock"))}, fetch(req) {
        fs.appendFileSync(${JSON.stringify(heard)}, new URL(req.url).pathname + "\\n");
        return Response.json({ ok: true, pid: 1, version: "x", uptimeS: 1, sandboxes: 0 });
      } });
      fs.chmodSync(${JSON.stringify(join(dir, "control.sock"))}, 0o777);
      fs.writeFileSync(${JSON.stringify(join(dir, "server.pid"))}, String(process.pid));`], { cwd: "/" });
    try {
      for (let i = 0; i < 100 && !existsSync(join(dir, "server.pid")); i++) await Bun.sleep(50);
      await Bun.sleep(100);
      expect(existsSync(join(dir, "control.sock"))).toBe(true);
      for (const verb of [["status"], ["list"]]) {
        const r = victim.run(["bun", "--no-env-file", "--config=/dev/null", CLI, ...verb], { cwd: "/" });
        expect({ verb, code: r.code }).toEqual({ verb, code: 77 });
        expect(r.stderr).toContain(dir);
      }
      expect(existsSync(heard) ? readFileSync(heard, "utf8") : "").toBe("");
    } finally {
      // runuser stays as the parent: the server this test started is stopped by its own pid.
      const pid = existsSync(join(dir, "server.pid")) ? Number(readFileSync(join(dir, "server.pid"), "utf8")) : 0;
      if (pid > 0) process.kill(pid, "SIGKILL");
      server.kill("SIGKILL");
      await server.exited;
    }
  }, 60_000);
});
