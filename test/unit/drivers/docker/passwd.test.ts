// A container runs as the host's uid whatever the image: the image's passwd and group are made to know that user (its
// name, home and gid), an image user of that uid becomes the host's, and the image's own lines are not trusted (only
// split, bounded, and written back into the container).
import { describe, expect, test } from "bun:test";
import { identityFiles } from "../../../../src/drivers/docker/passwd";
import { firstTarEntry, paxRecord, tarArchive } from "../../../../src/core/tar";

const ann = { name: "ann", uid: 1000, gid: 1000, home: "/home/ann", shell: "/bin/bash" };

describe("identityFiles", () => {
  test("an image that never heard of the uid: the user and group are added, nothing else changes", () => {
    const r = identityFiles("root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1::/:/sbin/nologin\n", "root:x:0:\n", ann);
    expect(r.passwd).toBe("root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1::/:/sbin/nologin\nann:x:1000:1000:sbx:/home/ann:/bin/sh\n");
    expect(r.group).toBe("root:x:0:\nann:x:1000:\n");
  });

  test("an image made for this user (sbx init's recipe): nothing is written", () => {
    expect(identityFiles("root:x:0:0:root:/root:/bin/bash\nann:x:1000:1000::/home/ann:/bin/bash\n", "root:x:0:\nann:x:1000:\n", ann)).toEqual({ passwd: null, group: null });
  });

  test("the image's own user of that uid (node's `node`) becomes the host's name and home; its group stays", () => {
    const r = identityFiles("root:x:0:0:root:/root:/bin/bash\nnode:x:1000:1000::/home/node:/bin/bash\n", "root:x:0:\nnode:x:1000:\n", ann);
    expect(r.passwd).toBe("root:x:0:0:root:/root:/bin/bash\nann:x:1000:1000::/home/ann:/bin/bash\n");
    expect(r.group).toBeNull();
  });

  test("the host's name held by another uid in the image gives the name up; a group name taken gets another", () => {
    const r = identityFiles("root:x:0:0:root:/root:/bin/bash\nann:x:1001:1001::/home/ann:/bin/sh\n", "root:x:0:\nann:x:1001:\n", ann);
    expect(r.passwd).toBe("root:x:0:0:root:/root:/bin/bash\nann-image:x:1001:1001::/home/ann:/bin/sh\nann:x:1000:1000:sbx:/home/ann:/bin/sh\n");
    expect(r.group).toBe("root:x:0:\nann:x:1001:\nann-1000:x:1000:\n");
  });

  test("no passwd or group in the image at all (a scratch image): both are made", () => {
    expect(identityFiles(null, null, ann)).toEqual({ passwd: "root:x:0:0:root:/root:/bin/sh\nann:x:1000:1000:sbx:/home/ann:/bin/sh\n", group: "root:x:0:\nann:x:1000:\n" });
  });

  test("the host's root (uid 0, home /root) in an ordinary image: nothing to change", () => {
    expect(identityFiles("root:x:0:0:root:/root:/bin/bash\n", "root:x:0:\n", { name: "root", uid: 0, gid: 0, home: "/root", shell: "/bin/bash" })).toEqual({ passwd: null, group: null });
  });

  test("hostile lines (short, empty, a uid field that is not a number, a line naming uid 1000 with too few fields) are kept as they are and never taken for the user", () => {
    const hostile = "root:x:0:0:root:/root:/bin/bash\n\nbroken\nevil:x:1000\nweird:x:abc:1000::/:/x\n";
    const r = identityFiles(hostile, "root:x:0:\n", ann);
    expect(r.passwd).toBe(`${hostile}ann:x:1000:1000:sbx:/home/ann:/bin/sh\n`);
  });
});

describe("firstTarEntry (the engine's archive of one path)", () => {
  const file = (content: string, path = "passwd") => tarArchive([{ path, type: "file", mode: 0o644, uid: 0, gid: 0, content: new TextEncoder().encode(content) }]);

  test("a regular file's content", () => {
    expect(new TextDecoder().decode(firstTarEntry(file("root:x:0:0::/root:/bin/sh\n"))!.content)).toBe("root:x:0:0::/root:/bin/sh\n");
  });

  test("a pax header before it is skipped", () => {
    const long = `${"d/".repeat(60)}passwd`;
    expect(new TextDecoder().decode(firstTarEntry(file("x\n", long))!.content)).toBe("x\n");
    expect(paxRecord("path", long)).toContain(long);
  });

  test("a directory or link: `other`, no content read", () => {
    expect(firstTarEntry(tarArchive([{ path: "etc/", type: "dir", mode: 0o755, uid: 0, gid: 0 }]))).toEqual({ type: "other", content: new Uint8Array() });
  });

  test("over the bound, truncated, or not a tar: null", () => {
    expect(firstTarEntry(file("a".repeat(2000)), 1000)).toBeNull();
    expect(firstTarEntry(file("a".repeat(2000)).subarray(0, 1024))).toBeNull();
    expect(firstTarEntry(new TextEncoder().encode("not a tar at all".padEnd(1024, " ")))).toBeNull();
    expect(firstTarEntry(new Uint8Array(0))).toBeNull();
  });
});
