// gone-when-removed (linux-user), tried as a hostile guest would: what a removed guest left in the shared temp dirs and
// in System V IPC is gone (removed without following a link it planted), and its uid is not given to a new guest while
// anything of it remains: the next guest reads nothing the last one left.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import type { SandboxSpec } from "../../../src/core/spec";
import type { Sandbox } from "../../../src/core/schemas";
import { makeDaemonWorld, type DaemonWorld } from "./daemon-world";
import { makeWorld, sh, whyNot, type World } from "./harness";

const skip = whyNot();

describe.skipIf(skip !== undefined)(`gone-when-removed: a removed guest's files and uid (linux-user)${skip ? ` (skipped: ${skip})` : ""}`, () => {
  let w: World;
  const made: string[] = [];
  const run = (spec: SandboxSpec, script: string) => sh(w.backend.shellArgv(spec, { argv: ["bash", "-c", script], cwd: w.repo, tty: false, env: {} }));
  const uidOf = (spec: SandboxSpec) => Number(sh(["id", "-u", w.backend.guest(spec)]).out.trim());
  /** System V IPC objects (shared memory, queues, semaphores) whose owner is `uid`. */
  const ipcOf = (uid: number): string[] =>
    ["shm", "msg", "sem"].flatMap((k) => {
      const [head = "", ...rows] = readFileSync(`/proc/sysvipc/${k}`, "utf8").trim().split("\n");
      const col = head.trim().split(/\s+/).indexOf("uid");
      return rows.filter((r) => r.trim().split(/\s+/)[col] === String(uid)).map((r) => `${k} ${r.trim()}`);
    });

  /** POSIX message queues of `uid` (their filesystem mounted in a mount namespace of the check's own). */
  const mqueuesOf = (uid: number): string[] => {
    const mnt = `/tmp/sbx-mq-${w.tag}`;
    mkdirSync(mnt, { recursive: true });
    const out = sh(["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", `mount -t mqueue mqueue ${mnt} && find ${mnt} -mindepth 1 -uid ${uid} -printf '%f\\n'`]).out;
    rmSync(mnt, { recursive: true, force: true });
    return out.split("\n").filter(Boolean);
  };

  beforeAll(async () => {
    w = await makeWorld();
  }, 60_000);
  afterAll(async () => {
    for (const p of made) rmSync(p, { recursive: true, force: true });
    await w?.teardown();
  }, 60_000);

  test("what a removed guest left in /tmp, /var/tmp and /dev/shm and in System V IPC is gone; the next guest reads none of it", async () => {
    const a = w.spec("gone-a");
    await w.backend.apply(a);
    const uid = uidOf(a);
    const files = [`/tmp/sbx-left-${w.tag}`, `/var/tmp/sbx-left-${w.tag}`, `/dev/shm/sbx-left-${w.tag}`, `/tmp/sbx-leftdir-${w.tag}/deep/file`];
    made.push(...files, `/tmp/sbx-leftdir-${w.tag}`, `/tmp/sbx-locked-${w.tag}`);
    const r = run(a, [
      `mkdir -p /tmp/sbx-leftdir-${w.tag}/deep`,
      ...files.map((f) => `echo secret-of-a > ${f} && chmod 600 ${f}`),
      // A dir it closed to everyone, itself included, around files of its own.
      `mkdir -p /tmp/sbx-locked-${w.tag}/in && echo secret-of-a > /tmp/sbx-locked-${w.tag}/in/f && chmod 000 /tmp/sbx-locked-${w.tag}/in /tmp/sbx-locked-${w.tag}`,
      // A shared memory segment only its owner may attach, and a POSIX message queue, left behind on purpose.
      "ipcmk -M 4096 -p 0600 >/dev/null && echo ipc",
      `python3 -c 'import ctypes,os; r=ctypes.CDLL("librt.so.1", use_errno=True); r.mq_open.restype=ctypes.c_int; import sys; fd=r.mq_open(b"/sbx-left-${w.tag}", os.O_CREAT|os.O_RDWR, 0o600, None); print("mq", fd, ctypes.get_errno()); sys.exit(0)'`,
      "echo wrote",
    ].join(" && "));
    expect(r.out).toContain("wrote");
    expect(ipcOf(uid).length).toBeGreaterThan(0);
    expect(mqueuesOf(uid)).toContain(`sbx-left-${w.tag}`);
    await w.backend.remove(a);

    // The next guest, whatever uid it gets, reads nothing of a's, nor attaches its memory.
    const b = w.spec("gone-b");
    await w.backend.apply(b);
    expect(run(b, files.map((f) => `cat ${f} 2>/dev/null`).join("; ")).out).not.toContain("secret-of-a");
    const shmid = readFileSync("/proc/sysvipc/shm", "utf8").split("\n").find((l) => l.trim().split(/\s+/)[7] === String(uid))?.trim().split(/\s+/)[1];
    if (shmid !== undefined) expect(run(b, `python3 -c 'import ctypes,sys; l=ctypes.CDLL(None); sys.exit(0 if l.shmat(${shmid},None,0) != ctypes.c_void_p(-1).value else 1)' && echo attached`).out).not.toContain("attached");
    await w.backend.remove(b);
    for (const f of files) expect({ f, left: existsSync(f) }).toEqual({ f, left: false });
    expect(existsSync(`/tmp/sbx-leftdir-${w.tag}`)).toBe(false);
    expect(existsSync(`/tmp/sbx-locked-${w.tag}`)).toBe(false);
    expect(ipcOf(uid)).toEqual([]);
    expect(mqueuesOf(uid)).toEqual([]);
    expect(existsSync(`${w.root}/held/${uid}`)).toBe(false);
  }, 120_000);

  test("a link the guest planted is removed, never what it points at (a file, a dir, a dir inside a dir of its own)", async () => {
    const a = w.spec("gone-links");
    await w.backend.apply(a);
    // The host user's precious files in a dir of theirs the guest may read but not write.
    const victim = `/tmp/sbx-victim-${w.tag}`;
    made.push(victim, `/tmp/sbx-link-${w.tag}`, `/tmp/sbx-dlink-${w.tag}`, `/tmp/sbx-own-${w.tag}`);
    mkdirSync(`${victim}/sub`, { recursive: true });
    writeFileSync(`${victim}/precious`, "precious\n");
    writeFileSync(`${victim}/sub/precious`, "precious\n");
    for (const p of [victim, `${victim}/sub`, `${victim}/precious`, `${victim}/sub/precious`]) chownSync(p, w.host.uid, w.host.gid);
    chmodSync(victim, 0o755);
    const r = run(a, [
      `ln -s ${victim}/precious /tmp/sbx-link-${w.tag}`,
      `ln -s ${victim} /tmp/sbx-dlink-${w.tag}`,
      `mkdir /tmp/sbx-own-${w.tag} && ln -s ${victim}/sub /tmp/sbx-own-${w.tag}/sub && ln -s ${victim}/sub/precious /tmp/sbx-own-${w.tag}/p`,
      "echo planted",
    ].join(" && "));
    expect(r.out).toContain("planted");
    await w.backend.remove(a);
    for (const l of [`/tmp/sbx-link-${w.tag}`, `/tmp/sbx-dlink-${w.tag}`, `/tmp/sbx-own-${w.tag}`]) expect({ l, left: sh(["test", "-L", l]).code === 0 || existsSync(l) }).toEqual({ l, left: false });
    expect(readFileSync(`${victim}/precious`, "utf8")).toBe("precious\n");
    expect(readFileSync(`${victim}/sub/precious`, "utf8")).toBe("precious\n");
    expect(readdirSync(victim).sort()).toEqual(["precious", "sub"]);
  }, 120_000);

  test("a file sbx cannot remove holds the uid: no new guest gets it until the file is gone", async () => {
    const a = w.spec("gone-held");
    await w.backend.apply(a);
    const uid = uidOf(a);
    // A dir of the host user's that was open to all when the guest wrote in it, and closed before the guest was removed.
    const shared = `/tmp/sbx-shared-${w.tag}`;
    made.push(shared);
    mkdirSync(shared);
    chownSync(shared, w.host.uid, w.host.gid);
    chmodSync(shared, 0o777);
    expect(run(a, `echo secret-of-a > ${shared}/kept && chmod 600 ${shared}/kept && echo wrote`).out).toContain("wrote");
    chmodSync(shared, 0o755);
    await w.backend.remove(a);
    expect(readFileSync(`${shared}/kept`, "utf8")).toBe("secret-of-a\n"); // the person's dir: sbx deleted nothing there as root
    expect(existsSync(`${w.root}/held/${uid}`)).toBe(true);
    expect(readFileSync(`${w.root}/held/${uid}`, "utf8")).toContain(`${shared}/kept`);

    const b = w.spec("gone-held-b");
    await w.backend.apply(b);
    expect(uidOf(b)).not.toBe(uid);
    expect(run(b, `cat ${shared}/kept`).out).not.toContain("secret-of-a");
    await w.backend.remove(b);

    // Once the file is gone, the uid is free again (held no longer).
    rmSync(`${shared}/kept`);
    const c = w.spec("gone-held-c");
    await w.backend.apply(c);
    expect(existsSync(`${w.root}/held/${uid}`)).toBe(false);
    await w.backend.remove(c);
  }, 120_000);
});

describe.skipIf(skip !== undefined)(`gone-when-removed: a removed guest's commits reach no other guest (linux-user, sbx rm)${skip ? ` (skipped: ${skip})` : ""}`, () => {
  let w: World;
  let d: DaemonWorld;
  let b: Sandbox;
  const ID = "-c user.email=agent@example.invalid -c user.name=agent";

  beforeAll(async () => {
    w = await makeWorld();
    d = await makeDaemonWorld(w);
  }, 60_000);
  afterAll(async () => {
    for (const n of ["objs-a", "objs-b"]) await d?.users.rm(n, { cwd: w.repo, force: true }).catch(() => undefined);
    await d?.close();
    await w?.teardown();
  }, 120_000);

  test("after `sbx rm --force a`, guest b reads nothing of a's unmerged commit, by id or by listing every object; the host keeps it", async () => {
    const a = (await d.users.create({ name: "objs-a", cwd: w.repo })).sandbox;
    b = (await d.users.create({ name: "objs-b", cwd: w.repo })).sandbox;
    const ws = d.backend.workspace(d.spec(a));
    const c = await d.asGuest(a, `cd ${ws} && git checkout -q -b work && echo secret > a.txt && git add a.txt && git ${ID} commit -qm 'unmerged work of a' && git rev-parse HEAD`);
    const sha = c.out.trim().split("\n").at(-1)!;
    expect(sha).toMatch(/^[0-9a-f]{40}$/);
    await d.users.rm("objs-a", { cwd: w.repo, force: true });
    const asHost = (args: string[]) => sh(["setpriv", `--reuid=${w.host.uid}`, `--regid=${w.host.gid}`, "--init-groups", "--reset-env", "--", "git", "-C", w.repo, ...args]);
    expect(asHost(["log", "-1", "--format=%s", "sandbox-objs-a/work"]).out.trim()).toBe("unmerged work of a");
    const wsB = d.backend.workspace(d.spec(b));
    expect((await d.asGuest(b, `cd ${wsB} && git cat-file -e ${sha} && echo readable`)).out).not.toContain("readable");
    expect((await d.asGuest(b, `cd ${wsB} && git cat-file --batch-all-objects --batch-check='%(objectname)'`)).out).not.toContain(sha);
  }, 180_000);
});
