// copy-in-scanned for --with-changes: the host's uncommitted work is copied into a new sandbox, so it goes through the
// copy-in door too. A changed or untracked file that holds a host secret (any form) or a secret's shape is not carried
// (its diff or its file left out), and said; the rest is carried. Real git in a temp repo.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CopyIn } from "../../../src/secrets/copy-in";
import { createExec } from "../../../src/sys/exec";
import { workingTreeChanges } from "../../../src/workspace/changes";
import { tarEntries } from "../../support/tar-read";

const PLAIN = "correct-horse-battery-staple-42";
const TOKEN = "ghp_0123456789abcdefABCDEF0123456789abcd";
const exec = createExec(process.env as Record<string, string>);
let repo = "";
const git = (...a: string[]) => exec.run(["git", "-C", repo, "-c", "user.email=t@example.invalid", "-c", "user.name=t", ...a]);

beforeEach(async () => {
  repo = mkdtempSync(join(tmpdir(), "sbx-changes-"));
  await git("init", "-q", "-b", "main");
  writeFileSync(join(repo, "app.txt"), "one\n");
  writeFileSync(join(repo, "cfg.txt"), "x\n");
  await git("add", "-A");
  await git("commit", "-qm", "first");
});
afterEach(() => rmSync(repo, { recursive: true, force: true }));

describe("copy-in-scanned: --with-changes carries no secret", () => {
  test("a tracked change adding a host secret (hex), an untracked file with a token, and one named after it are left out and said; clean changes are carried", async () => {
    writeFileSync(join(repo, "app.txt"), "one\ntwo\n");
    writeFileSync(join(repo, "cfg.txt"), `x\nkey=${Buffer.from(PLAIN).toString("hex")}\n`);
    writeFileSync(join(repo, "notes.md"), "todo\n");
    writeFileSync(join(repo, ".env.local"), `GH_TOKEN=${TOKEN}\n`);
    writeFileSync(join(repo, `${TOKEN}.txt`), "named\n");
    const door = new CopyIn({ SERVICE_PASSWORD: PLAIN }, { home: "/nonexistent" });
    const ch = await workingTreeChanges(exec, repo, 0, door);
    expect(ch.patch).toContain("+two");
    expect(ch.patch).not.toContain("cfg.txt");
    const carried = tarEntries(ch.untracked!).map((e) => e.path);
    expect(carried).toEqual(["notes.md"]);
    const all = `${ch.patch}\n${carried.join("\n")}\n${new TextDecoder().decode(ch.untracked!)}`;
    for (const f of [TOKEN, PLAIN, Buffer.from(PLAIN).toString("hex")]) expect(all).not.toContain(f);
    const said = JSON.stringify(door.findings);
    expect(said).toContain("cfg.txt");
    expect(said).toContain(".env.local");
    expect(said).not.toContain(TOKEN);
    expect(door.count).toBe(3);
  });
});
