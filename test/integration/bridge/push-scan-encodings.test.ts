// The push scan finds a key-shaped secret wherever a sandbox hides it in what it pushes: encoded in a file (base64,
// hex, URL-encoding, UTF-16), packed in a gzip, zip or tar.gz (found by name or by its first bytes), in a ref name, in
// an author's email. Real bridge, real shim, real git; each refused push leaves the upstream untouched.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { gzipSync } from "node:zlib";
import { join } from "node:path";
import { mkdirSync, writeFileSync } from "node:fs";
import { git, makeHarness, refIn, sh, type Harness } from "./harness";
import { makeZip } from "../../support/zip";

// Built at run time so this file holds no key-shaped literal.
const KEY = "AKIA" + "QWERTYUIOPASDFGH";
let h: Harness;
beforeAll(async () => {
  h = await makeHarness();
});
afterAll(async () => {
  await h.stop();
});

async function pushed(branch: string, files: Record<string, string | Uint8Array>, target = branch) {
  await git(h.clone, "checkout", "-q", "-B", branch, await refIn(h.upstreamRepo, "refs/heads/main"));
  for (const [name, data] of Object.entries(files)) {
    mkdirSync(join(h.clone, name, ".."), { recursive: true });
    writeFileSync(join(h.clone, name), data);
  }
  await git(h.clone, "add", "-A");
  await git(h.clone, "commit", "-q", "-m", "files");
  return h.shim(["push", "origin", `${branch}:${target}`]);
}

const utf16 = (s: string) => new Uint8Array(Buffer.from(s, "utf16le"));
const hidden: [string, Record<string, string | Uint8Array>, string][] = [
  ["base64 in a text file", { "notes.txt": `cfg: ${Buffer.from(`aws_key=${KEY}`).toString("base64")}\n` }, "notes.txt:1"],
  ["hex in a text file", { "notes.txt": `${Buffer.from(KEY).toString("hex")}\n` }, "notes.txt:1"],
  ["URL-encoded", { "notes.txt": `https://x.example/?k=${[...KEY].map((c) => `%${c.charCodeAt(0).toString(16)}`).join("")}\n` }, "notes.txt:1"],
  ["a UTF-16 file", { "win/notes.txt": utf16(`hello\r\nkey=${KEY}\r\n`) }, "win/notes.txt"],
  ["a deflated zip member", { "dist/app.zip": makeZip([{ name: "readme", data: "hi\n" }, { name: "conf/.env", data: `KEY=${KEY}\n`, deflate: true }]) }, "dist/app.zip!conf/.env:1"],
  ["a gzip named .bin (found by its first bytes)", { "blob.bin": gzipSync(`line\n${KEY}\n`) }, "blob.bin (gzip):2"],
];

describe("a key-shaped secret is found however it is hidden", () => {
  for (const [name, files, where] of hidden) {
    test(name, async () => {
      const branch = `h-${name.replace(/\W+/g, "-")}`;
      const r = await pushed(branch, files);
      expect(r.code).toBe(77);
      expect(r.stderr).toContain(where);
      expect(r.stderr).toContain("AWS access key id");
      expect(await refIn(h.upstreamRepo, `refs/heads/${branch}`)).toBe("");
    });
  }

  test("a tar.gz made by tar", async () => {
    const dir = join(h.clone, "..", "tarsrc");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "creds"), `id=${KEY}\n`);
    const tgz = join(h.clone, "..", "x.tgz");
    expect((await sh(["tar", "-czf", tgz, "-C", dir, "creds"])).code).toBe(0);
    const r = await pushed("h-tgz", { "vendor/x.tgz": new Uint8Array(await Bun.file(tgz).arrayBuffer()) });
    expect(r.code).toBe(77);
    expect(r.stderr).toContain("vendor/x.tgz (gzip)");
  });

  test("in a ref name, and in an author's email", async () => {
    const ref = await pushed("h-ref", { "ok.txt": "fine\n" }, `feature-${KEY}`);
    expect(ref.code).toBe(77);
    expect(ref.stderr).toContain("ref name");
    expect(await refIn(h.upstreamRepo, `refs/heads/feature-${KEY}`)).toBe("");
    await git(h.clone, "checkout", "-q", "-B", "h-email", await refIn(h.upstreamRepo, "refs/heads/main"));
    const c = await sh(["git", "commit", "-q", "--allow-empty", "-m", "innocent"], { cwd: h.clone, env: { GIT_AUTHOR_EMAIL: `${KEY}@example.invalid`, SBX_IN_SANDBOX: "1" } });
    expect(c.code).toBe(0);
    const email = await h.shim(["push", "origin", "h-email"]);
    expect(email.code).toBe(77);
    expect(email.stderr).toContain("commit header");
  });

  test("control: the same kinds of file without a secret go out", async () => {
    const r = await pushed("h-clean", {
      "notes.txt": `cfg: ${Buffer.from("nothing secret here at all").toString("base64")}\n`,
      "win/notes.txt": utf16("hello\r\n"),
      "dist/app.zip": makeZip([{ name: "conf/.env", data: "KEY=none\n", deflate: true }]),
      "blob.bin": gzipSync("line\n"),
    });
    expect({ code: r.code, err: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, err: "" });
  });
});
