// copy-in-scanned, the door: a view of a host dir, a file, a tar and an environment as they go into a sandbox.
// Hostile: a host dir holding a key in every place a file can hold one (content, an encoding, a name, an archive, a
// link to elsewhere), and what the report says of it.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { CopyIn, findingLines, VIEW_LIMITS } from "../../../src/secrets/copy-in";
import { tarEntries } from "../../support/tar-read";
import { makeZip } from "../../support/zip";

const PLAIN = "correct-horse-battery-staple-42";
const TOKEN = "ghp_0123456789abcdefABCDEF0123456789abcd";

let root = "";
let home = "";
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "sbx-copy-in-"));
  home = join(root, "home");
  mkdirSync(home);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const door = (keep = false) => new CopyIn({ SERVICE_PASSWORD: PLAIN }, { home, keep });
const put = (rel: string, data: string | Uint8Array) => {
  mkdirSync(join(home, rel, ".."), { recursive: true });
  writeFileSync(join(home, rel), data);
};
const files = (dir: string, rel = ""): string[] =>
  readdirSync(join(dir, rel), { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(dir, join(rel, e.name)) : [join(rel, e.name)])).sort();

describe("copy-in-scanned: a view of a host dir", () => {
  test("each way a file can hold a secret is left out; clean files, dirs and modes are copied; the report names file and field, never the value", () => {
    put("d/clean.txt", "nothing here\n");
    put("d/plain.txt", `a\n${PLAIN}\n`);
    put("d/hex.conf", `k = ${Buffer.from(PLAIN).toString("hex")}\n`);
    put("d/settings.json", JSON.stringify({ theme: "dark", env: { SVC_PASSWORD: "whatever1", EDITOR: "vim" } }));
    put(`d/${TOKEN}.md`, "named after it\n");
    put("d/pack.gz", gzipSync(Buffer.from(`x ${TOKEN}\n`)));
    put("d/ok.zip", makeZip([{ name: "a.txt", data: "fine", deflate: true }]));
    put("d/bad.zip", makeZip([{ name: "inner/b.txt", data: `token ${TOKEN}`, deflate: true }]));
    put("d/bin.dat", Buffer.concat([Buffer.from([0xff, 0xfe, 0x00]), Buffer.from(PLAIN)]));
    put("d/sub/run.sh", "#!/bin/sh\necho hi\n");
    chmodSync(join(home, "d/sub/run.sh"), 0o755);
    chmodSync(join(home, "d/sub"), 0o750);
    writeFileSync(join(root, "outside"), `${PLAIN}\n`);
    symlinkSync(join(root, "outside"), join(home, "d/link.txt"));
    const c = door();
    const view = join(root, "view");
    const r = c.view(join(home, "d"), view);
    expect(files(view)).toEqual(["clean.txt", "ok.zip", "settings.json", "sub/run.sh"]);
    expect(JSON.parse(readFileSync(join(view, "settings.json"), "utf8"))).toEqual({ theme: "dark", env: { EDITOR: "vim" } });
    expect(statSync(join(view, "sub/run.sh")).mode & 0o777).toBe(0o755);
    expect(statSync(join(view, "sub")).mode & 0o777).toBe(0o750);
    expect(r.skipped).toEqual(["~/d/link.txt: not a plain file or dir"]);
    const said = findingLines(c.findings, c.count, 100).join("\n");
    for (const f of ["~/d/plain.txt: line 2", "~/d/hex.conf: line 1", "~/d/settings.json: env.SVC_PASSWORD", "~/d/… (a name that holds a secret): its name", "~/d/pack.gz", "~/d/bad.zip: inner/b.txt, line 1", "~/d/bin.dat"]) expect(said).toContain(f);
    expect(said).not.toContain(TOKEN);
    expect(said).not.toContain(PLAIN);
  });

  test("built again, it is what the host has now: a secret added since is left out, a file removed since is gone", () => {
    put("d/a.txt", "one\n");
    put("d/b.txt", "two\n");
    const view = join(root, "view");
    door().view(join(home, "d"), view);
    expect(files(view)).toEqual(["a.txt", "b.txt"]);
    put("d/a.txt", `one ${TOKEN}\n`);
    rmSync(join(home, "d/b.txt"));
    const c = door();
    c.view(join(home, "d"), view);
    expect(files(view)).toEqual([]);
    expect(c.findings.map((f) => f.file)).toEqual(["~/d/a.txt"]);
  });

  test("as-is (the person's own choice) and keep (--expose-credentials) copy what the scan finds; keep still says it", () => {
    put("d/login.json", JSON.stringify({ token: TOKEN }));
    const view = join(root, "view");
    expect(files((door().view(join(home, "d"), view, { pick: () => "as-is" }), view))).toEqual(["login.json"]);
    const k = door(true);
    k.view(join(home, "d"), view);
    expect(readFileSync(join(view, "login.json"), "utf8")).toContain(TOKEN);
    expect(k.count).toBe(1);
  });

  test("bounded: a file over the per-file bound is left out and said; a missing dir is an empty view", () => {
    put("d/huge.log", new Uint8Array(VIEW_LIMITS.fileBytes + 1));
    const view = join(root, "view");
    const r = door().view(join(home, "d"), view);
    expect(files(view)).toEqual([]);
    expect(r.skipped).toEqual(["~/d/huge.log: over the view's bounds"]);
    door().view(join(home, "none"), view);
    expect(existsSync(view) && readdirSync(view)).toEqual([]);
  });
});

describe("copy-in-scanned: a tar and an environment", () => {
  test("a tar keeps dirs and clean files; a file, a name or a link target that holds a secret is left out", () => {
    const c = door();
    const enc = (s: string) => new TextEncoder().encode(s);
    const tar = c.tar(
      [
        { path: "home/u/", type: "dir", mode: 0o755, uid: 1, gid: 1 },
        { path: "home/u/ok.txt", type: "file", mode: 0o644, uid: 1, gid: 1, content: enc("fine\n") },
        { path: "home/u/.env", type: "file", mode: 0o600, uid: 1, gid: 1, content: enc(`SERVICE=${Buffer.from(PLAIN).toString("base64")}\n`) },
        { path: `home/u/${TOKEN}`, type: "file", mode: 0o600, uid: 1, gid: 1, content: enc("x") },
        { path: "home/u/l", type: "symlink", target: `/tmp/${PLAIN}`, mode: 0o777, uid: 1, gid: 1 },
      ],
      (p) => `/${p}`,
    );
    expect(tarEntries(tar).map((e) => e.path)).toEqual(["home/u", "home/u/ok.txt"]);
    expect(JSON.stringify(c.findings)).not.toContain(TOKEN);
    expect(c.count).toBe(3);
  });

  test("an environment loses a value that holds a host secret (any form) or a shape; sbx's placeholders stay", () => {
    const c = door();
    expect(c.env("env", { A: "sbx-placeholder", B: Buffer.from(PLAIN).toString("base64"), C: `x ${TOKEN}`, D: "plain" }) as Record<string, string>).toEqual({ A: "sbx-placeholder", D: "plain" });
    expect(c.findings.map((f) => f.field)).toEqual(["B", "C"]);
  });
});
