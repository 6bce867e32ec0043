// Failure injection on the fake Mac: sysadminctl failing halfway, pf that will not enable, UID collisions, an open host home.
import { describe, expect, test } from "bun:test";
import { SbxError } from "../../../../src/core/errors";
import { SYSADMINCTL_TIMEOUT_MS } from "../../../../src/drivers/macos/privileged";
import { FakeMac, macSpec } from "../../../fakes/mac";

describe("macOS backend under failures", () => {
  test("sysadminctl exits 0 but leaves a record without a home: apply converges on retry", async () => {
    const mac = new FakeMac();
    mac.faults.sysadminctlHalfway = { exitCode: 0 };
    const b = mac.backend();
    const s = macSpec("half", { port: 17001 });
    await b.apply(s);
    const u = mac.users.get(`sbx_alice_${s.id}`)!;
    expect(u.attrs.get("IsHidden")).toBe("1");
    expect(u.attrs.has("AuthenticationAuthority")).toBe(false);
    const home = mac.files.get(`/Users/sbx_alice_${s.id}`)!;
    expect(home.mode).toBe(0o700);
    expect([...home.flags]).toEqual(["hidden"]);
    expect(mac.transcript()).toContain("createhomedir -c -u");
  });

  test("sysadminctl hangs after writing the record: it is killed at its time limit, the cache flushed, and the record found once the directory answers", async () => {
    const mac = new FakeMac();
    mac.faults.sysadminctlHangs = { lateReads: 2 };
    const b = mac.backend();
    const s = macSpec("slow", { port: 17001 });
    await b.apply(s);
    const add = mac.exec.calls.find((c) => c.argv.includes("-addUser"))!;
    expect(add.opts.timeoutMs).toBe(SYSADMINCTL_TIMEOUT_MS);
    expect(mac.transcript()).toContain("root# /usr/bin/dscacheutil -flushcache");
    expect(mac.users.get(`sbx_alice_${s.id}`)?.attrs.get("IsHidden")).toBe("1");
  });

  test("a crash right after sysadminctl (record made, nothing else) leaves state that cleanup removes", async () => {
    const mac = new FakeMac();
    const b = mac.backend();
    const keep = macSpec("keep", { port: 17001 });
    await b.apply(keep);
    const s = macSpec("broken", { port: 17002 });
    mac.faults.sysadminctlHalfway = { exitCode: 1 };
    // The daemon dies on the next command after sysadminctl: IsHidden, password and home are never set.
    const orig = mac.exec.run.bind(mac.exec);
    let sawAdd = false;
    mac.exec.run = async (argv, opts) => {
      if (sawAdd) throw new Error("daemon killed");
      if (argv.includes("-addUser")) sawAdd = true;
      return orig(argv, opts);
    };
    expect(await b.apply(s).catch((e: unknown) => (e as Error).message)).toBe("daemon killed");
    mac.exec.run = orig;
    const half = mac.users.get(`sbx_alice_${s.id}`)!;
    expect(half.attrs.get("IsHidden")).toBeUndefined();
    expect(half.attrs.has("AuthenticationAuthority")).toBe(true);
    const report = await b.cleanup(new Set([keep.id]));
    expect(report.removed).toEqual([`user sbx_alice_${s.id} (uid 7002) of sandbox ${s.id}`]);
    expect(mac.users.has(`sbx_alice_${s.id}`)).toBe(false);
    expect(mac.users.has(`sbx_alice_${keep.id}`)).toBe(true);
    expect((await b.cleanup(new Set([keep.id]))).removed).toEqual([]);
  });

  test("sysadminctl creating nothing (UID taken in a race) is an error with a hint; the retry picks a free UID", async () => {
    const mac = new FakeMac();
    const b = mac.backend();
    const s = macSpec("nothing", { port: 17001 });
    const orig = mac.exec.run.bind(mac.exec);
    let raced = false;
    mac.exec.run = async (argv, opts) => {
      if (argv.includes("-addUser") && !raced) {
        raced = true;
        mac.users.set("intruder", { uid: 7001, gid: 20, shell: "/bin/zsh", attrs: new Map() });
      }
      return orig(argv, opts);
    };
    const err = await b.apply(s).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SbxError);
    expect((err as SbxError).message).toContain("did not create");
    expect((err as SbxError).hint).toContain("sbx prune");
    expect(mac.users.has(`sbx_alice_${s.id}`)).toBe(false);
    await b.apply(s);
    expect(mac.users.get(`sbx_alice_${s.id}`)!.uid).toBe(7002);
  });

  test("UID collision: sbx never picks a UID or GID any account or group holds", async () => {
    const mac = new FakeMac();
    mac.users.set("carol", { uid: 7000, gid: 20, shell: "/bin/zsh", attrs: new Map() });
    mac.users.set("_svc", { uid: 7002, gid: 20, shell: "/usr/bin/false", attrs: new Map() });
    mac.groups.set("devs", 7001);
    const b = mac.backend();
    const s = macSpec("collide", { port: 17001 });
    await b.apply(s);
    expect(mac.groups.get("sbx_alice")).toBe(7003);
    expect(mac.users.get(`sbx_alice_${s.id}`)!.uid).toBe(7004);
    expect([...mac.pf.anchors.keys()]).toEqual([7004]);
  });

  test("an existing guest with a UID outside the range is refused, not adopted", async () => {
    const mac = new FakeMac();
    const s = macSpec("odd", { port: 17001 });
    mac.users.set(`sbx_alice_${s.id}`, { uid: 501, gid: 20, shell: "/bin/zsh", attrs: new Map() });
    const err = await mac.backend().apply(s).catch((e: unknown) => e);
    expect((err as SbxError).code).toBe("conflict");
  });

  test("pf cannot be enabled: apply fails closed with a hint and the sandbox is not left with a loaded pass rule", async () => {
    const mac = new FakeMac();
    mac.faults.pfEnableFails = true;
    const b = mac.backend();
    const s = macSpec("nopf", { port: 17001 });
    const err = await b.apply(s).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SbxError);
    expect((err as SbxError).code).toBe("unavailable");
    expect((err as SbxError).hint).toContain("without network");
    expect(mac.pf.anchors.size).toBe(0);
    mac.faults.pfEnableFails = false;
    expect((await b.apply(s)).changed).toBe(true);
    expect(mac.pf.enabled).toBe(true);
  });

  test("pf disabled behind sbx's back (pfctl -d): the next apply re-enables it with a new token", async () => {
    const mac = new FakeMac();
    const b = mac.backend();
    const s = macSpec("pfoff", { port: 17001 });
    await b.apply(s);
    mac.pf.enabled = false;
    mac.pf.tokens.clear();
    expect((await b.apply(s)).changed).toBe(true);
    expect(mac.pf.enabled).toBe(true);
    expect(mac.pf.tokens.size).toBe(1);
  });

  test("a host home readable by staff stops apply before anything is created", async () => {
    const mac = new FakeMac();
    mac.files.get("/Users/alice")!.mode = 0o750;
    const err = await mac.backend().apply(macSpec("open", { port: 17001 })).catch((e: unknown) => e);
    expect((err as SbxError).code).toBe("permission");
    expect((err as SbxError).hint).toContain("chmod 700 /Users/alice");
    expect(mac.mutations()).toBe(0);
  });

  test("a spec without a proxy port is a config error", async () => {
    const mac = new FakeMac();
    const s = macSpec("noport");
    s.options = { driver: "fake" }; // a spec without a guest's port
    expect(((await mac.backend().apply(s).catch((e: unknown) => e)) as SbxError).code).toBe("config");
  });
});
