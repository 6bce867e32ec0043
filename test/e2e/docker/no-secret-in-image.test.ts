// no-secret-inside, the image's part, on a real engine: a repo whose Dockerfile copies it in (COPY . /app), with an
// ignored .env holding a host secret, an untracked key, and a remote URL with a token in .git/config. After
// `sbx create`, the agent inside reads /app as it likes: none of those is there, the commit is. With --with-changes
// the working tree's clean files are, the key still is not. Run as a real second uid (its own user and repo).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chownSync, mkdirSync, realpathSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { secretsFile, setSecret } from "../../../src/secrets/store";
import { userRecipe } from "../../../src/workspace/init";
import { createTestUser, type RunResult, type TestUser } from "../../support/test-user";
import { BASE_IMAGE, canRun, CLI, ownRepo, removeOwnWorld, skipReason } from "./fixture";

const HOST_SECRET = "correct-horse-battery-staple-42";
const REMOTE_TOKEN = "ghp_0123456789abcdefABCDEF0123456789abcd";
const KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----\n";

describe.skipIf(!canRun)(`no-secret-inside: the image holds no more of the host than the clone (Docker)${canRun ? "" : ` — skipped: ${skipReason}`}`, () => {
  let user: TestUser;
  let repo = "";
  let created: RunResult;
  const sbx = (args: string[]): RunResult => user.run(["bun", CLI, ...args], { cwd: repo });
  const git = (args: string[]): RunResult => user.run(["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t", ...args], { cwd: repo });
  /** Writes a file of the user's, as the user would have it. */
  const put = (rel: string, text: string, root = repo) => {
    const p = join(root, rel);
    mkdirSync(dirname(p), { recursive: true });
    for (let d = dirname(p); d.startsWith(`${user.home}/`); d = dirname(d)) chownSync(d, user.uid, user.gid);
    writeFileSync(p, text);
    chownSync(p, user.uid, user.gid);
  };
  /** What the agent inside finds under /app: each path's presence, and every secret it can read there. */
  const inside = (name: string) => {
    const r = sbx(["shell", name, "--", "sh", "-c", "cd /app && find . -path ./.git -prune -o -type f -print | sort; ls -d .git 2>/dev/null; cat $(find . -type f) 2>/dev/null"]);
    expect({ code: r.code, err: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, err: "" });
    return { text: r.stdout, leaks: [HOST_SECRET, REMOTE_TOKEN, "PRIVATE KEY"].filter((s) => r.stdout.includes(s)) };
  };

  beforeAll(() => {
    user = createTestUser();
    repo = realpathSync(ownRepo(user, "leaky", `FROM ${BASE_IMAGE}\n${userRecipe()}\nCOPY . /app\n`));
    put(".gitignore", ".env\nnode_modules/\n");
    put("README", "committed\n");
    for (const a of [["add", "-A"], ["commit", "-qm", "readme"], ["remote", "add", "origin", `https://me:${REMOTE_TOKEN}@example.invalid/r.git`]]) {
      const r = git(a);
      if (r.code !== 0) throw new Error(`git ${a.join(" ")}: ${r.stderr}`);
    }
    put(".env", `SERVICE_PASSWORD=${HOST_SECRET}\n`);
    put("deploy-key.pem", KEY);
    put("node_modules/.cache/blob", `cached ${HOST_SECRET}\n`);
    put(".config/sbx/.keep", "", user.home);
    setSecret(secretsFile(join(user.home, ".config", "sbx")), "SERVICE_PASSWORD", HOST_SECRET);
    chownSync(secretsFile(join(user.home, ".config", "sbx")), user.uid, user.gid);
    created = sbx(["create", "plain"]);
    if (created.code !== 0) throw new Error(`sbx create plain: ${created.stderr}`);
  }, 600_000);

  afterAll(async () => {
    if (user) await removeOwnWorld(user, repo, () => void ["plain", "changes"].forEach((n) => sbx(["rm", "--force", n])));
  }, 120_000);

  test("COPY . /app: the ignored .env, the untracked key, .git and caches are not inside; the commit is; create says what it left out", () => {
    const seen = inside("plain");
    expect(seen.leaks).toEqual([]);
    expect(seen.text).toContain("./README");
    expect(seen.text).toContain("./Dockerfile");
    expect(seen.text).not.toContain("./.env");
    expect(seen.text).not.toContain("deploy-key.pem");
    expect(seen.text).not.toMatch(/^\.git$/m);
    expect(seen.text).not.toContain("./node_modules");
    expect(created.stderr).toContain("deploy-key.pem");
    expect(created.stderr).toMatch(/--with-changes/);
  }, 120_000);

  test("--with-changes: a clean untracked file goes in, the key and the ignored .env still do not", () => {
    put("notes.txt", "untracked, clean\n");
    const r = sbx(["create", "--with-changes", "changes"]);
    expect({ code: r.code, err: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, err: "" });
    const seen = inside("changes");
    expect(seen.leaks).toEqual([]);
    expect(seen.text).toContain("./notes.txt");
    expect(seen.text).not.toContain("deploy-key.pem");
    expect(seen.text).not.toContain("./.env");
  }, 300_000);
});
