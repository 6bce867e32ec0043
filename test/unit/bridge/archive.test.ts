// The push scan opens gzip and zip blobs: what they unpack to is scanned, within bounds, and a broken one never throws.
import { describe, expect, test } from "bun:test";
import { gzipSync } from "node:zlib";
import { unpackArchive } from "../../../src/core/archive";
import { scanArchive } from "../../../src/bridge/scan";
import { LogScanner } from "../../../src/bridge/scan";
import { makeZip } from "../../support/zip";

const KEY = "ghp_" + "A1b2C3d4E5".repeat(4).slice(0, 36);
const u = { commit: "c".repeat(40), file: "dist/bundle.zip", blob: "b".repeat(40) };

describe("unpackArchive", () => {
  test("gzip (two members), zip stored and deflated, a gzip inside a zip", () => {
    const gz = Buffer.concat([gzipSync("one\n"), gzipSync("two\n")]);
    expect(unpackArchive(gz).members.map((m) => [m.member, Buffer.from(m.bytes).toString()])).toEqual([["", "one\ntwo\n"]]);
    const zip = makeZip([
      { name: "a.txt", data: "stored\n" },
      { name: "dir/", data: "" },
      { name: "b.txt", data: "deflated\n".repeat(50), deflate: true },
      { name: "c.gz", data: gzipSync("inner\n"), deflate: true },
    ]);
    const r = unpackArchive(zip);
    expect(r.skipped).toBeNull();
    expect(r.members.map((m) => m.member)).toEqual(["a.txt", "b.txt", "c.gz", "c.gz"]);
    expect(Buffer.from(r.members[3]!.bytes).toString()).toBe("inner\n");
  });

  test("bounds: a zip bomb stops at the unpacked-size bound and says so", () => {
    const bomb = makeZip([{ name: "zeros", data: new Uint8Array(8 << 20), deflate: true }]);
    const r = unpackArchive(bomb, 1 << 20);
    expect(r.members).toEqual([]);
    expect(r.skipped).toContain("zeros");
  });

  test("broken input never throws: a cut zip, a corrupt gzip, an unknown method", () => {
    const zip = makeZip([{ name: "a.txt", data: "x".repeat(100), deflate: true }]);
    expect(unpackArchive(zip.subarray(0, 40)).skipped).toContain("central directory");
    const gz = gzipSync("hello");
    gz[gz.length - 12] = gz[gz.length - 12]! ^ 0xff;
    expect(unpackArchive(gz).members).toEqual([]);
    const odd = Buffer.from(makeZip([{ name: "m.txt", data: "x" }]));
    odd.writeUInt16LE(12, odd.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02])) + 10); // bzip2, per the directory
    expect(unpackArchive(odd).skipped).toContain("compression method 12");
  });
});

describe("scanArchive: a key inside a pushed archive is found and named by member", () => {
  test("in a zip member, a gzip, and a gzip in a zip", () => {
    const zip = makeZip([
      { name: "ok.txt", data: "nothing\n" },
      { name: "conf/.env", data: `A=1\nTOKEN=${KEY}\n`, deflate: true },
      { name: "logs.gz", data: gzipSync(`x\ny ${KEY}\n`) },
    ]);
    expect(scanArchive(u, zip).map((f) => [f.file, f.line])).toEqual([
      ["dist/bundle.zip!conf/.env", 2],
      ["dist/bundle.zip!logs.gz", 2],
    ]);
    expect(scanArchive({ ...u, file: "a.gz" }, gzipSync(`${KEY}\n`)).map((f) => f.file)).toEqual(["a.gz (gzip)"]);
    expect(scanArchive(u, makeZip([{ name: "clean", data: "fine\n", deflate: true }]))).toEqual([]);
  });
});

describe("LogScanner names the blobs to unpack", () => {
  const C1 = "1".repeat(40);
  const blob = (n: string) => n.repeat(40);
  const commit = (files: string[]) =>
    [`commit ${C1}`, `tree ${"f".repeat(40)}`, "author a <a@example.invalid> 1 +0000", "committer a <a@example.invalid> 1 +0000", "", "    m", "", ...files].join("\n") + "\n";
  test("by name (.zip, .whl, .tgz) and by the first bytes a hunk shows (a gzip named .bin)", () => {
    const file = (name: string, id: string, first: string) => [`diff --git a/${name} b/${name}`, "new file mode 100644", `index ${"0".repeat(40)}..${blob(id)}`, "--- /dev/null", `+++ b/${name}`, "@@ -0,0 +1 @@", `+${first}`].join("\n");
    const s = new LogScanner();
    s.write(commit([file("a.zip", "a", "PK\x03\x04"), file("b.whl", "b", "PK\x03\x04"), file("c.tgz", "c", "x"), file("d.bin", "d", "\x1f\uFFFD\x08\0rest"), file("e.txt", "e", "plain")]));
    expect(s.end().archives.map((a) => [a.file, a.blob])).toEqual([
      ["a.zip", blob("a")],
      ["b.whl", blob("b")],
      ["c.tgz", blob("c")],
      ["d.bin", blob("d")],
    ]);
  });
});
