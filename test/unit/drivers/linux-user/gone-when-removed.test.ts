// gone-when-removed on the fake Linux: removal sweeps what the guest's uid owns in the shared temp dirs AS THE GUEST and its
// System V IPC objects, holds the uid while anything remains, and the next guest never gets a held uid.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SandboxSpec } from "../../../../src/core/spec";
import { LinuxUserBackend } from "../../../../src/drivers/linux-user/backend";
import { idsOf, leftoversOf, parseSysIdRange, parseSysvIpc, pickGuestId } from "../../../../src/drivers/linux-user/ids";
import { renderBase, renderSandbox } from "../../../../src/drivers/linux-user/nft";
import { FakeLinux } from "../../../fakes/linux";

const host = { name: "alice", uid: 1000, gid: 1000, home: "/home/alice", repo: "/home/alice/src/proj" };
let dirs: string[] = [];
afterEach(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs = [];
});

function world() {
  const linux = new FakeLinux(host);
  linux.mk(`${host.repo}/.git`, "dir", 0o755, host.uid);
  for (const d of ["/tmp", "/var/tmp", "/dev/shm"]) linux.mk(d, "dir", 0o1777, 0);
  const cg = mkdtempSync(join(tmpdir(), "sbx-gone-cg-"));
  dirs.push(cg);
  const warnings: string[] = [];
  const backend = new LinuxUserBackend({ exec: linux.exec, root: "/var/lib/sbx", table: "sbx", cgroupRoot: join(cg, "none"), warn: (m) => void warnings.push(m) });
  const spec = (id: string): SandboxSpec => ({
    id,
    name: `s${id}`,
    repo: host.repo,
    dir: `/x/${id}`,
    hostUser: { name: host.name, uid: host.uid, gid: host.gid, home: host.home, shell: "/bin/bash" },
    sockets: { dir: `/run/sbx/sb/${id}`, proxy: `/run/sbx/sb/${id}/proxy.sock`, bridge: `/run/sbx/sb/${id}/bridge.sock` },
    env: {},
    overlays: [],
    options: { driver: "user", proxyPort: 21000 },
  });
  const uidOf = (s: SandboxSpec) => linux.accounts.get(backend.guest(s))!.uid;
  return { linux, backend, spec, uidOf, warnings };
}

describe("gone-when-removed (linux-user, fake Linux)", () => {
  test("rm sweeps the guest's files in the shared temp dirs as the guest (a dir it shut to itself included), its IPC objects and message queues", async () => {
    const { linux, backend, spec, uidOf } = world();
    const a = spec("aaa111");
    await backend.apply(a);
    const uid = uidOf(a);
    linux.mk("/tmp/left", "file", 0o600, uid, "secret");
    linux.mk("/dev/shm/left", "file", 0o600, uid, "secret");
    linux.mk("/tmp/shut/in/f", "file", 0o600, uid, "secret");
    linux.files.get("/tmp/shut")!.uid = uid;
    linux.files.get("/tmp/shut/in")!.uid = uid;
    linux.files.get("/tmp/shut")!.mode = 0;
    linux.mk("/tmp/theirs", "file", 0o600, host.uid, "the person's");
    linux.makeIpc("shm", uid);
    const other = linux.makeIpc("msg", 4321);
    linux.mqueues.push({ name: "left", uid }, { name: "theirs", uid: 4321 });
    linux.changes.length = 0;
    await backend.remove(a);
    for (const p of ["/tmp/left", "/dev/shm/left", "/tmp/shut/in/f", "/tmp/shut"]) expect({ p, left: linux.files.has(p) }).toEqual({ p, left: false });
    expect(linux.files.has("/tmp/theirs")).toBe(true);
    expect(linux.ipc.map((o) => o.id)).toEqual([other]);
    expect(linux.mqueues.map((q) => q.name)).toEqual(["theirs"]);
    // The delete ran as the guest, never as root; then the account went.
    const del = linux.changes.findIndex((c) => c.startsWith(`setpriv --reuid=${uid} find `) && c.endsWith("-delete"));
    expect(del).toBeGreaterThan(-1);
    expect(linux.changes.findIndex((c) => c.startsWith("userdel "))).toBeGreaterThan(del);
    expect(linux.files.has(`/var/lib/sbx/held/${uid}`)).toBe(false);
  });

  test("a file the guest can no longer delete holds its uid: the next guest gets another, and the uid is let go once the file is gone", async () => {
    const { linux, backend, spec, uidOf, warnings } = world();
    const a = spec("aaa222");
    await backend.apply(a);
    const uid = uidOf(a);
    // The person's dir, open when the guest wrote in it, closed since.
    linux.mk("/tmp/shared/kept", "file", 0o600, uid, "secret");
    linux.files.get("/tmp/shared")!.uid = host.uid;
    await backend.remove(a);
    expect(linux.files.has("/tmp/shared/kept")).toBe(true); // not root's to delete in the person's dir
    expect(linux.files.get(`/var/lib/sbx/held/${uid}`)?.content).toBe("/tmp/shared/kept\n");
    expect(warnings.join("\n")).toContain(`id ${uid} still owns 1 file(s) (/tmp/shared/kept)`);

    const b = spec("bbb222");
    await backend.apply(b);
    expect(uidOf(b)).not.toBe(uid);
    await backend.remove(b);

    linux.files.delete("/tmp/shared/kept");
    const c = spec("ccc222");
    await backend.apply(c);
    expect(linux.files.has(`/var/lib/sbx/held/${uid}`)).toBe(false);
    expect(uidOf(c)).toBe(uid); // the highest free id again, nothing of a's left to own
  });

  test("an id that already owns files in the shared temp dirs (as their owner or their group) is given to no new guest: it is held", async () => {
    const { linux, backend, spec, uidOf } = world();
    // What an earlier owner of 999 and 998 left (another sbx root's guest, a system account removed by hand): a JVM's
    // perf dir owned by 999, and a file of another uid whose group is 998.
    linux.mk("/tmp/hsperfdata_gone", "dir", 0o700, 999);
    linux.mk("/tmp/grouped", "file", 0o640, 4242, "secret");
    linux.files.get("/tmp/grouped")!.gid = 998;
    const a = spec("aaa555");
    await backend.apply(a);
    expect(uidOf(a)).toBe(997);
    expect(linux.files.get("/var/lib/sbx/held/999")?.content).toBe("/tmp/hsperfdata_gone\n");
    expect(linux.files.get("/var/lib/sbx/held/998")?.content).toBe("/tmp/grouped\n");
  });

  test("a uid sbx's firewall still names (a removal cut short before its rules went) is given to no new guest", async () => {
    const { linux, backend, spec, uidOf } = world();
    // Rules of a sandbox whose account is gone: in block-all form for uid 999 (run form would let its new owner in).
    await linux.exec.run(["nft", "-f", "-"], { stdin: renderBase("sbx") + renderSandbox({ id: "gone999", uid: 999, mode: "stop" }, "sbx") });
    const a = spec("aaa444");
    await backend.apply(a);
    expect(uidOf(a)).not.toBe(999);
  });

  test("a record's uid that another account has since taken is not swept (its files are that account's)", async () => {
    const { linux, backend, spec, uidOf } = world();
    const a = spec("aaa333");
    await backend.apply(a);
    const uid = uidOf(a);
    // The account went (a crash after userdel), and a package's account took the id before prune ran.
    linux.accounts.delete(backend.guest(a));
    linux.accounts.set("postgres", { name: "postgres", uid, gid: uid, gecos: "", home: "/var/lib/postgresql", shell: "/bin/sh" });
    linux.mk("/tmp/postgres-file", "file", 0o600, uid, "theirs");
    await backend.cleanup(new Set());
    expect(linux.files.has("/tmp/postgres-file")).toBe(true);
  });

  test("pure parts: the system id range, the highest free id, getent ids, IPC rows, leftovers by id", () => {
    expect(parseSysIdRange("")).toEqual({ min: 100, max: 999 });
    expect(parseSysIdRange("SYS_UID_MIN 201\nSYS_UID_MAX 899\n#SYS_GID_MAX 1\nSYS_GID_MAX 850\n")).toEqual({ min: 201, max: 850 });
    expect(pickGuestId(new Set([999, 998]), { min: 100, max: 999 })).toBe(997);
    expect(() => pickGuestId(new Set([100]), { min: 100, max: 100 })).toThrow(/no free system user id/);
    expect(idsOf("root:x:0:0::/root:/bin/sh\nbad\nsbx:x:995:\n")).toEqual([0, 995]);
    const shm = "       key      shmid perms                  size  cpid  lpid nattch   uid   gid  cuid  cgid\n 1 7 600 4096 1 1 0 995 995 995 995\n";
    expect(parseSysvIpc("shm", shm)).toEqual([{ flag: "-m", id: 7, uid: 995, cuid: 995 }]);
    expect(parseSysvIpc("sem", "junk\n")).toEqual([]);
    expect(leftoversOf("995 995 /tmp/a\n1000 995 /tmp/b\n1000 1000 /tmp/c\n", new Set([995]))).toEqual(new Map([[995, ["/tmp/a", "/tmp/b"]]]));
  });
});
