// A guest leaves nothing behind it on the fake Mac: stop ends its launchd jobs, crontab and processes; remove does so
// before pf goes, and sweeps what its UID owns in the shared temp dirs; a UID whose files outlive it is not reused. The
// guards come before any guest code; the guest's clone of the host-owned mirror works across the two owners.
import { describe, expect, test } from "bun:test";
import { SbxError } from "../../../../src/core/errors";
import { runRootOp } from "../../../../src/drivers/macos/privileged";
import { FakeMac, macRootContext, macSpec } from "../../../fakes/mac";

/** A fake Mac with sandbox `demo` (port 17001) applied: its backend, spec and guest. */
async function applied() {
  const mac = new FakeMac();
  const b = mac.backend();
  const s = macSpec("demo", { port: 17001 });
  await b.apply(s);
  return { mac, b, s, guest: `sbx_alice_${s.id}` };
}

/** Line index of the first transcript line containing `needle` (or -1). */
function at(transcript: string, needle: string): number {
  return transcript.split("\n").findIndex((l) => l.includes(needle));
}

describe("teardown leaves the guest nothing to come back with", () => {
  test("stop: logins off first, then the launchd domain, the crontab and every process; account, clone and pf stay", async () => {
    const { mac, b, s, guest } = await applied();
    mac.launchd.add(7001);
    mac.crontabs.set(guest, "* * * * * curl https://example.com/beacon\n");
    mac.procs.add(guest);
    const from = mac.exec.calls.length;
    expect((await b.stop(s)).changed).toBe(true);
    expect(mac.launchd.has(7001)).toBe(false);
    expect(mac.crontabs.has(guest)).toBe(false);
    expect(mac.procs.has(guest)).toBe(false);
    const t = mac.transcript(from);
    const order = ["UserShell /usr/bin/false", "launchctl bootout user/7001", `crontab -u ${guest} -r`, "pkill -KILL -U 7001", "pgrep -U 7001"].map((n) => at(t, n));
    expect(order.every((i) => i >= 0)).toBe(true);
    expect([...order].sort((x, y) => x - y)).toEqual(order);
    // Fail-closed: the rules stay while the account does.
    expect(mac.pf.anchors.has(7001)).toBe(true);
    expect(mac.users.has(guest)).toBe(true);
  });

  test("remove: bootout, crontab -r, kill and wait, then pf unloaded, then the account deleted", async () => {
    const { mac, b, s, guest } = await applied();
    mac.launchd.add(7001);
    mac.crontabs.set(guest, "@reboot nc -l 4444\n");
    mac.procs.add(guest);
    const from = mac.exec.calls.length;
    await b.remove(s);
    const t = mac.transcript(from);
    const order = ["launchctl bootout user/7001", `crontab -u ${guest} -r`, "pkill -KILL -U 7001", "pgrep -U 7001", "pfctl -a com.apple/sbx_7001 -F all", `sysadminctl -deleteUser ${guest}`].map((n) => at(t, n));
    expect(order.every((i) => i >= 0)).toBe(true);
    expect([...order].sort((x, y) => x - y)).toEqual(order);
  });

  test("a process that outlives SIGKILL for a while (not yet reaped) is waited for; one that never goes keeps the account and its firewall", async () => {
    const { mac, b, s, guest } = await applied();
    // pgrep keeps finding it for three looks (a zombie until init reaps it).
    mac.faults.lingering = 3;
    const from = mac.exec.calls.length;
    await b.stop(s);
    expect(mac.exec.calls.slice(from).filter((c) => c.argv[0] === "/usr/bin/pgrep")).toHaveLength(4);

    // For ever: remove stops before pf or the account go, with what is left and why.
    mac.faults.lingering = Infinity;
    const err = await b.remove(s).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SbxError);
    expect((err as SbxError).message).toContain(`${guest} still has processes after SIGKILL (4242)`);
    expect(mac.pf.anchors.has(7001)).toBe(true);
    expect(mac.users.has(guest)).toBe(true);
  });

  test("what the UID owns in the shared temp dirs goes with the account; a UID whose files cannot all go is never given out again", async () => {
    const mac = new FakeMac();
    const b = mac.backend();
    const one = macSpec("one", { port: 17001 });
    await b.apply(one);
    const guest = `sbx_alice_${one.id}`;
    mac.mk("/private/tmp/loot.txt", "file", 0o644, guest, "left for the next guest");
    mac.mk("/private/var/folders/xy/abc/T/cache.db", "file", 0o600, guest);
    // A dir of the guest's holding someone else's file cannot be deleted whole.
    mac.mk("/private/tmp/shared", "dir", 0o777, guest);
    mac.mk("/private/tmp/shared/theirs", "file", 0o644, "alice");
    await b.remove(one);
    expect(mac.files.has("/private/tmp/loot.txt")).toBe(false);
    expect(mac.files.has("/private/var/folders/xy/abc/T/cache.db")).toBe(false);
    expect(mac.files.has("/private/tmp/shared")).toBe(true);
    expect(mac.files.get("/private/var/db/sbx/held/7001")?.content).toBe("/private/tmp/shared\n");

    // The next sandbox gets another UID, and the root helper refuses 7001 even when asked for it directly.
    const two = macSpec("two", { port: 17002 });
    await b.apply(two);
    expect(mac.users.get(`sbx_alice_${two.id}`)?.uid).toBe(7002);
    const err = await runRootOp(mac.rootExec(), macRootContext("alice"), { op: "add-user", user: "sbx_alice_feed", uid: 7001, gid: 7000, sandbox: "x", repo: "/r" }).catch((e: unknown) => e);
    expect((err as SbxError).message).toContain("UID 7001 still owns files of a removed sandbox (/private/tmp/shared)");

    // Once they are gone, the UID is free again (and the hold is dropped).
    mac.files.delete("/private/tmp/shared/theirs");
    const three = macSpec("three", { port: 17003 });
    await runRootOp(mac.rootExec(), macRootContext("alice"), { op: "add-user", user: `sbx_alice_${three.id}`, uid: 7001, gid: 7000, sandbox: "three", repo: "/r" });
    expect(mac.users.get(`sbx_alice_${three.id}`)?.uid).toBe(7001);
    expect(mac.files.has("/private/var/db/sbx/held/7001")).toBe(false);
  });
});

describe("jobs outside the session", () => {
  test("a guest is in cron's and at's deny lists from its creation (their jobs run outside its session and profile), and out of them when removed", async () => {
    const mac = new FakeMac();
    mac.mk("/usr/lib/cron/cron.deny", "file", 0o644, "root", "daemon\n");
    const b = mac.backend();
    const s = macSpec("demo", { port: 17001 });
    await b.apply(s);
    const guest = `sbx_alice_${s.id}`;
    expect(mac.files.get("/usr/lib/cron/cron.deny")?.content).toBe(`daemon\n${guest}\n`);
    expect(mac.files.get("/usr/lib/cron/at.deny")?.content).toBe(`${guest}\n`);
    // Applying again adds nothing.
    await b.apply(s);
    expect(mac.files.get("/usr/lib/cron/cron.deny")?.content).toBe(`daemon\n${guest}\n`);
    await b.remove(s);
    expect(mac.files.get("/usr/lib/cron/cron.deny")?.content).toBe("daemon\n");
    expect(mac.files.get("/usr/lib/cron/at.deny")?.content).toBe("");
  });
});

describe("guards and clone", () => {
  test("the folders the account came with (~/Library, ~/Desktop…) carry the person's entry too, so removing the sandbox needs no --force", async () => {
    const mac = new FakeMac();
    const s = macSpec("demo", { port: 17001 });
    await mac.backend().apply(s);
    const home = `/Users/sbx_alice_${s.id}`;
    for (const d of ["", "/Library", "/Library/Preferences", "/Desktop", "/Documents"]) {
      expect(mac.files.get(home + d)?.acl.some((e) => e.startsWith("user:alice allow list,add_file,search,delete"))).toBe(true);
    }
  });

  test("the pf anchor is loaded before anything runs as the guest (its clone and provisioning included)", async () => {
    const mac = new FakeMac();
    const s = macSpec("demo", { port: 17001 });
    await mac.backend().apply(s);
    const t = mac.transcript();
    const firstGuest = t.split("\n").findIndex((l) => l.startsWith(`sbx_alice_${s.id}$`));
    expect(firstGuest).toBeGreaterThan(0);
    expect(at(t, "pfctl -a com.apple/sbx_7001 -f")).toBeLessThan(firstGuest);
    expect(at(t, "pfctl -E")).toBeLessThan(firstGuest);
  });

  test("the guest clones the host-owned mirror: its upload-pack is told that one repo is safe (git >= 2.39.4 refuses another user's repo)", async () => {
    const mac = new FakeMac();
    const s = macSpec("demo", { port: 17001 });
    await mac.backend().apply(s);
    expect(mac.repo.clones.has(`/Users/sbx_alice_${s.id}/demo`)).toBe(true);
    const clone = mac.exec.calls.find((c) => c.argv.includes("clone"))!.argv;
    expect(clone.slice(0, 5)).toEqual(["/usr/bin/sudo", "-n", "-H", "-u", `sbx_alice_${s.id}`]);
    expect(clone[clone.indexOf("--upload-pack") + 1]).toBe("/usr/bin/git -c safe.directory='/private/var/sbx/alice/demo-6e02b8fdc214.git' upload-pack");
  });
});
