// Options work before and after the name, for every verb that takes a sandbox's name (as an argument or --sandbox),
// through the real CLI on a real engine. Each command runs outside the repo, so it finds the sandbox only if the
// `--repo` written after the name was read; a verb that takes a name and is missing here fails the first test.
// Its own throwaway user and repo, removed after.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Command } from "commander";
import { join } from "node:path";
import { OfferingArgument } from "../../../src/cli/completion/offers";
import { verbs } from "../../../src/cli/verbs";
import { createTestUser, type TestUser } from "../../support/test-user";
import { CLI, canRun, ownRepo, removeOwnWorld, skipReason } from "./fixture";


/** The visible verbs that name a sandbox: a positional that offers sandbox names, or --sandbox; and create, which names a new one. */
function verbsTakingAName(): string[] {
  return verbs
    .filter((v) => !v.hidden)
    .filter((v) => {
      const c = new Command(v.name);
      v.declare(c);
      // attach takes a session's name or a sandbox's, and needs a session running: its options are shell --attach's.
      if (v.name === "attach") return false;
      return v.name === "create" || c.registeredArguments.some((a) => a instanceof OfferingArgument && a.offers.includes("sandbox")) || c.options.some((o) => o.long === "--sandbox");
    })
    .map((v) => v.name)
    .sort();
}

describe.skipIf(!canRun)(`options before and after the name (Docker)${canRun ? "" : ` — skipped: ${skipReason}`}`, () => {
  let user: TestUser;
  let repo = "";
  /** sbx as the test user in its home: outside the repo, so only --repo finds the sandbox. */
  const sbx = (args: string[]) => user.run(["bun", CLI, ...args], { cwd: user.home });
  /** Each verb's words, with OPTS where its options go after the name; the same options are also tried before it. */
  const CASES: Record<string, { words: string[]; opts?: string[]; out?: string }> = {};

  beforeAll(() => {
    user = createTestUser();
    repo = ownRepo(user, "oan");
    const R = ["--repo", repo];
    Object.assign(CASES, {
      create: { words: ["create", "oan", "OPTS"], opts: [...R, "--json"], out: '"name": "oan"' },
      shell: { words: ["shell", "oan", "OPTS", "--", "echo", "in-shell"], opts: R, out: "in-shell" },
      exec: { words: ["exec", "oan", "OPTS", "--", "echo", "in-exec"], opts: R, out: "in-exec" },
      run: { words: ["run", "oan", "OPTS", "--", "echo", "in-run"], opts: R, out: "in-run" },
      limits: { words: ["limits", "oan", "OPTS"], opts: [...R, "--json"], out: '"name": "oan"' },
      port: { words: ["port", "oan", "OPTS"], opts: [...R, "--json"], out: '"running": true' },
      publish: { words: ["publish", "oan", "OPTS"], opts: [...R, "--json"], out: '"published": []' },
      bridge: { words: ["bridge", "oan", "OPTS"], opts: [...R, "--json"], out: '"name": "oan"' },
      code: { words: ["code", "oan", "OPTS"], opts: [...R, "--print"], out: "vscode-remote://attached-container+" },
      allow: { words: ["allow", "example.org", "OPTS"], opts: ["--sandbox", "oan", ...R] },
      allowlist: { words: ["allowlist", "OPTS"], opts: ["--sandbox", "oan", ...R, "--json"], out: "example.org" },
      policy: { words: ["policy", "check", "example.org", "OPTS"], opts: ["--sandbox", "oan", ...R, "--json"], out: '"allowed": true' },
      services: { words: ["services", "oan", "OPTS"], opts: [...R, "--json"] },
      deny: { words: ["deny", "example.org", "OPTS"], opts: ["--sandbox", "oan", ...R] },
      logs: { words: ["logs", "OPTS"], opts: ["--sandbox", "oan", ...R, "--kind", "lifecycle"], out: "create" },
      secret: { words: ["secret", "set", "OAN_TOKEN", "OPTS"], opts: ["--host", "api.oan.test", "--command", "printf oan-value", "--sandbox", "oan", ...R] },
      rebuild: { words: ["rebuild", "oan", "OPTS"], opts: [...R, "--force"], out: "rebuilt oan" },
      stop: { words: ["stop", "oan", "OPTS"], opts: R },
      rm: { words: ["rm", "oan", "OPTS"], opts: [...R, "--force"] },
    });
  }, 60_000);

  afterAll(async () => {
    if (!user) return;
    await removeOwnWorld(user, repo, () => {
      sbx(["rm", "--force", "--repo", repo, "oan"]);
    });
  }, 60_000);

  test("every verb that takes a sandbox's name is tried here", () => {
    expect(Object.keys(CASES).sort()).toEqual(verbsTakingAName());
  });

  test("each verb reads its options after the name as before it (create first, rm last; each run from outside the repo)", () => {
    const failed: unknown[] = [];
    for (const [verb, c] of Object.entries(CASES)) {
      // The options after the name, then (for a verb that can run twice) before it: `sbx VERB OPTS NAME …`.
      const after = c.words.flatMap((w) => (w === "OPTS" ? c.opts ?? [] : [w]));
      const before = [c.words[0]!, ...(c.opts ?? []), ...c.words.slice(1).filter((w) => w !== "OPTS")];
      const forms = verb === "create" || verb === "rm" ? [after] : [after, before];
      if (verb === "rm") sbx(["create", "--repo", repo, "oan"]);
      for (const argv of forms) {
        if (verb === "deny") sbx(["allow", "example.org", "--sandbox", "oan", "--repo", repo]);
        const r = sbx(argv);
        if (r.code !== 0 || (c.out !== undefined && !r.stdout.includes(c.out))) failed.push({ argv: argv.join(" "), code: r.code, stdout: r.stdout.slice(0, 300), stderr: r.stderr.slice(0, 300) });
      }
      if (verb === "stop") sbx(["rm", "--force", "--repo", repo, "oan"]);
    }
    expect(failed).toEqual([]);
  }, 300_000);
});
