// The seed archive is a tar that real tar reads back with the owners, modes and long paths we wrote.
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { paxRecord, tarArchive } from "../../../src/core/tar";

const tmp = mkdtempSync(join(tmpdir(), "sbx-tar-test-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

test("pax records count their own length", () => {
  for (const v of ["a", "x".repeat(90), "y".repeat(200)]) {
    const r = paxRecord("path", v);
    expect(Number(r.split(" ")[0])).toBe(new TextEncoder().encode(r).length);
  }
});

test("GNU tar lists the entries with numeric owners, modes and long names", () => {
  const long = `home/ann/${"deep/".repeat(30)}leaf`;
  const bytes = tarArchive([
    { path: "home/ann", type: "dir", mode: 0o700, uid: 1234, gid: 567 },
    { path: long, type: "dir", mode: 0o755, uid: 1234, gid: 567 },
    { path: "home/ann/.claude.json", type: "file", mode: 0o600, uid: 1234, gid: 567, content: new TextEncoder().encode('{"a":1}') },
  ]);
  expect(bytes.length % 512).toBe(0);
  const f = join(tmp, "seed.tar");
  writeFileSync(f, bytes);
  const out = Bun.spawnSync(["tar", "--numeric-owner", "-tvf", f]).stdout.toString();
  const lines = out.trim().split("\n");
  expect(lines[0]).toMatch(/^drwx------ 1234\/567 .* home\/ann\/$/);
  expect(lines[1]).toContain(`${long}/`);
  expect(lines[1]).toMatch(/^drwxr-xr-x 1234\/567/);
  expect(lines[2]).toMatch(/^-rw------- 1234\/567\s+7 .* home\/ann\/\.claude\.json$/);
  const content = Bun.spawnSync(["tar", "-xOf", f, "home/ann/.claude.json"]).stdout.toString();
  expect(content).toBe('{"a":1}');
});

test("links are stored as links (their target never read), short and long, and GNU tar unpacks them as links", () => {
  const longTarget = `/${"t".repeat(150)}/target`;
  const bytes = tarArchive([
    { path: "a/", type: "dir", mode: 0o755, uid: 0, gid: 0 },
    { path: "a/short", type: "symlink", target: "/home/ann/.ssh/id_rsa", mode: 0o777, uid: 0, gid: 0 },
    { path: "a/long", type: "symlink", target: longTarget, mode: 0o777, uid: 0, gid: 0 },
    { path: `a/${"n".repeat(120)}`, type: "symlink", target: "x", mode: 0o777, uid: 0, gid: 0 },
  ]);
  const f = join(tmp, "links.tar");
  writeFileSync(f, bytes);
  const out = join(tmp, "links-out");
  Bun.spawnSync(["mkdir", "-p", out]);
  const r = Bun.spawnSync(["tar", "-xf", f, "-C", out]);
  expect(r.exitCode).toBe(0);
  const { readlinkSync } = require("node:fs") as typeof import("node:fs");
  expect(readlinkSync(join(out, "a/short"))).toBe("/home/ann/.ssh/id_rsa");
  expect(readlinkSync(join(out, "a/long"))).toBe(longTarget);
  expect(readlinkSync(join(out, `a/${"n".repeat(120)}`))).toBe("x");
});
