// The fake Linux keeps the real tools' rules the linux-user backend relies on, so a backend that broke them fails here
// as it would on a real machine: nft transactions are all or nothing, userdel refuses a running account, rm cannot
// remove a mount point, and the host's git cannot clone where the host user may not write.
import { describe, expect, test } from "bun:test";
import { renderBase, renderRemove, renderSandbox } from "../../../src/drivers/linux-user/nft";
import { FakeLinux } from "../../fakes/linux";

const host = { name: "alice", uid: 1000, gid: 1000, home: "/home/alice", repo: "/home/alice/src/proj" };

describe("fake Linux", () => {
  test("nft -f is one transaction: a delete of a missing element fails it whole and changes nothing", async () => {
    const l = new FakeLinux(host);
    await l.exec.run(["nft", "-f", "-"], { stdin: renderBase() + renderSandbox({ id: "a1", uid: 999, mode: "run", proxyPort: 21000 }) });
    const before = (await l.exec.run(["nft", "-j", "list", "table", "inet", "sbx"])).stdout;
    const r = await l.exec.run(["nft", "-f", "-"], { stdin: renderRemove("a1", [999, 998]), check: false });
    expect(r.exitCode).toBe(1);
    expect((await l.exec.run(["nft", "-j", "list", "table", "inet", "sbx"])).stdout).toBe(before);
    // A chain still jumped to cannot go either; with its element first, it can.
    expect((await l.exec.run(["nft", "-f", "-"], { stdin: "delete chain inet sbx sb_a1\n", check: false })).exitCode).toBe(1);
    expect((await l.exec.run(["nft", "-f", "-"], { stdin: renderRemove("a1", [999]), check: false })).exitCode).toBe(0);
    expect((await l.exec.run(["nft", "-j", "list", "table", "inet", "sbx"])).stdout).not.toContain("sb_a1");
  });

  test("userdel refuses an account that still runs processes; after pkill it goes", async () => {
    const l = new FakeLinux(host);
    await l.exec.run(["useradd", "--system", "--user-group", "--shell", "/bin/bash", "--home-dir", "/h", "--no-create-home", "--comment", "c", "g1"]);
    expect((await l.exec.run(["useradd", "--system", "--user-group", "--shell", "/bin/bash", "--home-dir", "/h", "--no-create-home", "--comment", "c", "g1"], { check: false })).exitCode).toBe(9);
    l.spawnAs(999);
    expect((await l.exec.run(["userdel", "g1"], { check: false })).exitCode).toBe(8);
    await l.exec.run(["pkill", "-KILL", "-u", "999"]);
    expect((await l.exec.run(["userdel", "g1"], { check: false })).exitCode).toBe(0);
  });

  test("rm -rf --one-file-system cannot remove a bind mount's point; umount first", async () => {
    const l = new FakeLinux(host);
    l.mk("/var/lib/sbx/objects/a1/objects", "dir", 0o700, 0);
    await l.exec.run(["mount", "--bind", `${host.repo}/.git/objects`, "/var/lib/sbx/objects/a1/objects"]);
    expect((await l.exec.run(["rm", "-rf", "--one-file-system", "/var/lib/sbx/objects/a1"], { check: false })).exitCode).toBe(1);
    expect(l.files.has(`${host.repo}/.git/objects`)).toBe(true);
    await l.exec.run(["umount", "/var/lib/sbx/objects/a1/objects"]);
    expect((await l.exec.run(["rm", "-rf", "--one-file-system", "/var/lib/sbx/objects/a1"], { check: false })).exitCode).toBe(0);
  });

  test("the host's git clones only into a dir the host user owns", async () => {
    const l = new FakeLinux(host);
    l.mk("/var/lib/sbx/stage/a1", "dir", 0o700, 0);
    const clone = ["setpriv", "--reuid=1000", "--regid=1000", "--init-groups", "--reset-env", "--", "git", "clone", "--quiet", "--shared", host.repo, "/var/lib/sbx/stage/a1/proj"];
    expect((await l.exec.run(clone, { check: false })).exitCode).toBe(128);
    await l.exec.run(["install", "-d", "-m", "0700", "-o", "1000", "-g", "1000", "/var/lib/sbx/stage/a1"]);
    expect((await l.exec.run(clone, { check: false })).exitCode).toBe(0);
    expect(l.files.get("/var/lib/sbx/stage/a1/proj/.git/objects/info")?.uid).toBe(1000);
  });

  test("find -delete as a user (setpriv) removes only what that user may: its own in a sticky dir, nothing in a dir it cannot write or search", async () => {
    const l = new FakeLinux(host);
    l.mk("/tmp", "dir", 0o1777, 0);
    l.mk("/tmp/mine", "file", 0o600, 999);
    l.mk("/tmp/theirs", "file", 0o600, 1000);
    l.mk("/tmp/closed/mine", "file", 0o600, 999); // /tmp/closed: root's, 0755
    l.mk("/tmp/own/deep", "file", 0o600, 999);
    Object.assign(l.files.get("/tmp/own")!, { uid: 999, mode: 0o000 });
    const asGuest = ["setpriv", "--reuid=999", "--regid=999", "--", "env", "-i", "PATH=/usr/bin:/bin", "find", "/tmp", "-xdev"];
    const r = await l.exec.run([...asGuest, "(", "-uid", "999", "-o", "-uid", "1000", ")", "-delete"], { check: false });
    expect(r.exitCode).toBe(1);
    expect([...l.files.keys()].filter((p) => p.startsWith("/tmp/")).sort()).toEqual(["/tmp/closed", "/tmp/closed/mine", "/tmp/own", "/tmp/own/deep", "/tmp/theirs"]);
    // Opened first, its own dir can be entered and emptied.
    await l.exec.run([...asGuest, "-uid", "999", "-type", "d", "!", "-perm", "-u=rwx", "-exec", "chmod", "u+rwx", "{}", ";"], { check: false });
    await l.exec.run([...asGuest, "-uid", "999", "-delete"], { check: false });
    expect(l.files.has("/tmp/own")).toBe(false);
    // Root, only looking, sees what is left of 999 and who owns it.
    expect((await l.exec.run(["find", "/tmp", "-xdev", "(", "-uid", "999", "-o", "-gid", "999", ")", "-printf", "%U %G %p\n"], { check: false })).stdout).toBe("999 999 /tmp/closed/mine\n");
  });
});
