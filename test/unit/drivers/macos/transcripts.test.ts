// Golden command transcripts of the macOS backend on a fake Mac: create, apply again, stop, reboot re-apply, remove, cleanup.
import { describe, expect, test } from "bun:test";
import { runRootOp } from "../../../../src/drivers/macos/privileged";
import { FakeMac, macRootContext, macSpec } from "../../../fakes/mac";
import { golden } from "./golden";

const ROOT_CTX = macRootContext(null);

describe("macOS backend command transcripts", () => {
  test("create: group, hidden user, secured home, mirror, clone, provisioning, socket ACLs, pf", async () => {
    const mac = new FakeMac();
    expect((await mac.backend().apply(macSpec("demo", { port: 17001 }))).changed).toBe(true);
    golden("create.txt", mac.transcript());
    mac.exec.assertDone();
  });

  test("apply again: only reads, no mutation", async () => {
    const mac = new FakeMac();
    const b = mac.backend();
    const s = macSpec("demo", { port: 17001 });
    await b.apply(s);
    const from = mac.exec.calls.length;
    const before = mac.mutations();
    expect((await b.apply(s)).changed).toBe(false);
    expect(mac.mutations()).toBe(before);
    golden("apply-again.txt", mac.transcript(from));
  });

  test("stop, then apply restarts logins", async () => {
    const mac = new FakeMac();
    const b = mac.backend();
    const s = macSpec("demo", { port: 17001 });
    await b.apply(s);
    const from = mac.exec.calls.length;
    await b.stop(s);
    await b.apply(s);
    golden("stop-start.txt", mac.transcript(from));
  });

  test("reboot: the daemon's reapply takes a new token and re-loads the anchor; a second reapply does nothing", async () => {
    const mac = new FakeMac();
    const b = mac.backend();
    const s = macSpec("demo", { port: 17001 });
    await b.apply(s);
    const before = new Set(mac.pf.tokens);
    mac.reboot();
    expect(mac.pf.anchors.size).toBe(0);
    const from = mac.exec.calls.length;
    expect((await b.reapply([s])).changed).toBe(true);
    golden("reboot-reapply.txt", mac.transcript(from));
    expect(mac.pf.enabled).toBe(true);
    expect([...mac.pf.anchors.keys()]).toEqual([7001]);
    expect([...mac.pf.tokens].some((t) => before.has(t))).toBe(false);
    const m = mac.mutations();
    expect((await b.reapply([s])).changed).toBe(false);
    expect(mac.mutations()).toBe(m);
  });

  test("reboot: the root helper's reapply-all (LaunchDaemon at boot) restores every recorded anchor", async () => {
    const mac = new FakeMac();
    const b = mac.backend();
    await b.apply(macSpec("one", { port: 17001 }));
    await b.apply(macSpec("two", { port: 17002 }));
    mac.reboot();
    const from = mac.exec.calls.length;
    const r = await runRootOp(mac.rootExec(), ROOT_CTX, { op: "reapply-all" });
    expect(r.changed).toBe(true);
    golden("reboot-reapply-all.txt", mac.transcript(from));
    expect([...mac.pf.anchors.keys()].sort()).toEqual([7001, 7002]);
    expect(mac.pf.tokens.size).toBe(2);
    expect((await runRootOp(mac.rootExec(), ROOT_CTX, { op: "reapply-all" })).changed).toBe(false);
  });

  test("remove: kill, drop ACEs, unload anchor and release the token, delete the user and its leftovers", async () => {
    const mac = new FakeMac();
    const b = mac.backend();
    const s = macSpec("demo", { port: 17001 });
    await b.apply(s);
    mac.procs.add(`sbx_alice_${s.id}`);
    const from = mac.exec.calls.length;
    expect((await b.remove(s)).changed).toBe(true);
    golden("remove.txt", mac.transcript(from));
    expect(mac.users.has(`sbx_alice_${s.id}`)).toBe(false);
    expect([...mac.files.keys()].filter((k) => k.includes(s.id))).toEqual([]);
    expect(mac.pf.anchors.size).toBe(0);
    expect(mac.pf.tokens.size).toBe(0);
    for (const d of ["/tmp/sbx-501", "/tmp/sbx-501/sb", "/private/var/sbx/alice"]) expect(mac.files.get(d)!.acl).toEqual([]);
    expect((await b.remove(s)).changed).toBe(false);
  });

  test("cleanup: orphan user, a home without an account, an anchor without an account, stale sockets", async () => {
    const mac = new FakeMac();
    const b = mac.backend();
    const keep = macSpec("keep", { port: 17001 });
    const orphan = macSpec("orphan", { port: 17002 });
    await b.apply(keep);
    await b.apply(orphan);
    // What a crash can leave: a home whose account is gone, an anchor and token of a deleted UID, a socket dir.
    mac.mk("/Users/sbx_alice_deadbeef0000", "dir", 0o700, "root");
    mac.pf.anchors.set(7042, "block drop out log quick inet proto { tcp udp } from any to any user 7042\n");
    mac.mk("/private/var/db/sbx/pf/sbx_7042.token", "file", 0o600, "root", "42\n");
    mac.mk("/tmp/sbx-501/sb/cafe00000000", "dir", 0o700, "alice");
    // Someone else's sandbox user is never touched.
    mac.users.set("sbx_bob_0123456789ab", { uid: 7100, gid: 7099, shell: "/bin/zsh", attrs: new Map() });
    mac.pf.anchors.set(7100, "block drop out log quick inet proto { tcp udp } from any to any user 7100\n");
    const from = mac.exec.calls.length;
    const dry = await b.cleanup(new Set([keep.id]), { dryRun: true });
    expect(mac.transcript(from).split("\n").filter((l) => l !== "").every((l) => !/ -create | -delete |rm -rf|pfctl -a \S+ -F|sysadminctl/.test(l))).toBe(true);
    golden("cleanup-dry-run.txt", `${dry.removed.join("\n")}\n`);
    const from2 = mac.exec.calls.length;
    const real = await b.cleanup(new Set([keep.id]));
    expect(real.removed).toEqual(dry.removed);
    golden("cleanup.txt", `# removed:\n${real.removed.map((r) => `#   ${r}`).join("\n")}\n${mac.transcript(from2)}`);
    expect(mac.users.has(`sbx_alice_${orphan.id}`)).toBe(false);
    expect(mac.users.has(`sbx_alice_${keep.id}`)).toBe(true);
    expect(mac.users.has("sbx_bob_0123456789ab")).toBe(true);
    expect([...mac.pf.anchors.keys()].sort()).toEqual([7001, 7100]);
    expect(mac.files.has("/Users/sbx_alice_deadbeef0000")).toBe(false);
    expect(mac.files.has("/tmp/sbx-501/sb/cafe00000000")).toBe(false);
    expect((await b.cleanup(new Set([keep.id]))).removed).toEqual([]);
  });
});
