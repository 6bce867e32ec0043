// The docs stay true: every guide `sbx help TOPIC` prints exists and names only verbs sbx has; every file the README
// and ARCHITECTURE.md name (in backticks) is in the repo.
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { main } from "../../src/cli/main";
import { HELP_TOPICS, topicText, type HelpTopic } from "../../src/cli/topics";
import { parseChatCommand } from "../../src/core/chat-commands";
import { verbs } from "../../src/cli/verbs";

const ROOT = join(import.meta.dir, "..", "..");
const files = Bun.spawnSync(["git", "ls-files"], { cwd: ROOT }).stdout.toString().split("\n").filter(Boolean);
/** Files a doc names that live on the user's machine, not in the repo. */
const USER_FILES = new Set(["CLAUDE.md", "AGENTS.md", "GEMINI.md", "chat.json", "approvals.json", "config.json", "secrets.json", "secrets-vault.json", "auth.json", "settings.json", ".credentials.json", "oauth_creds.json", "devcontainer.json"]);

async function run(argv: string[]) {
  let out = "";
  let err = "";
  const code = await main(argv, {
    io: { stdout: (s: string) => void (out += s), stderr: (s: string) => void (err += s), stdoutIsTTY: false, stderrIsTTY: false },
    vars: {},
    cwd: ROOT,
    stdinIsTTY: false,
    env: async () => {
      throw new Error("help needs no environment");
    },
  } as never);
  return { code, out, err };
}

describe("sbx help TOPIC", () => {
  test("every topic prints its guide, and `sbx help topics` lists them; a verb's help is still commander's", async () => {
    for (const t of Object.keys(HELP_TOPICS)) {
      const r = await run(["help", t]);
      expect({ t, code: r.code }).toEqual({ t, code: 0 });
      expect(r.out).toBe(readFileSync(join(ROOT, "docs", "help", `${t}.md`), "utf8"));
    }
    const list = await run(["help", "topics"]);
    expect(list.out.split("\n").filter(Boolean).map((l) => l.trim().split(/\s+/)[0])).toEqual(Object.keys(HELP_TOPICS));
    expect((await run(["help", "port"])).out).toContain("Usage: sbx port");
  });

  test("the guides name only verbs and options sbx has", () => {
    const names = new Set(verbs.flatMap((v) => [v.name, ...(v.aliases ?? [])]));
    for (const t of Object.keys(HELP_TOPICS) as HelpTopic[]) {
      // Commands as the guides write them: on an indented line, or in backticks.
      for (const m of topicText(t).matchAll(/(?:^ {4,}|`)sbx ([a-z][a-z-]*)/gm)) {
        const verb = m[1]!;
        if (verb === "help" || verb === "init" || names.has(verb)) continue;
        throw new Error(`docs/help/${t}.md names \`sbx ${verb}\`, which is not a verb`);
      }
    }
  });
});

describe("the README covers the CLI", () => {
  test("every verb `sbx --help` lists is named in the README (as `sbx VERB`), its aliases too", () => {
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    const missing = verbs.filter((v) => !v.hidden).flatMap((v) => [v.name, ...(v.aliases ?? [])]).filter((n) => !new RegExp(`\\bsbx ${n}\\b`).test(readme));
    expect(missing).toEqual([]);
  });

  test("the chat commands the README and the chat guide name take what the bot takes (a host, or a notice's number)", () => {
    const docs = [readFileSync(join(ROOT, "README.md"), "utf8"), topicText("chat-setup")].join("\n");
    const sample: Record<string, string> = { HOST: "example.org", DOMAIN: "example.org", N: "7", ID: "7" };
    const seen: string[] = [];
    for (const m of docs.matchAll(/(?:`|^ {4,})(\/(?:allow|deny|approve|reject|allowlist)\b(?: [A-Z]+)?(?: --global)?)/gm)) {
      const said = m[1]!;
      seen.push(said.split(" ")[0]!);
      const text = said.replace(/\b[A-Z]+\b/g, (w) => sample[w] ?? w);
      const r = parseChatCommand(text);
      expect({ said, ok: r?.ok }).toEqual({ said, ok: true });
      // A host where the bot wants a host, a number where it wants one.
      if (r?.ok && (r.command.op === "allow" || r.command.op === "deny")) expect({ said, arg: said.split(" ")[1] }).toEqual({ said, arg: expect.stringMatching(/^(HOST|DOMAIN)$/) });
      if (r?.ok && r.command.op === "decide") expect({ said, arg: said.split(" ")[1] }).toEqual({ said, arg: expect.stringMatching(/^(N|ID)$/) });
    }
    expect([...new Set(seen)].sort()).toEqual(["/allow", "/allowlist", "/approve", "/deny", "/reject"]);
  });
});

describe("files the docs name", () => {
  test.each(["README.md", "ARCHITECTURE.md"])("%s: every file it names in backticks is in the repo", (doc) => {
    const text = readFileSync(join(ROOT, doc), "utf8");
    const missing: string[] = [];
    for (const m of text.matchAll(/`([A-Za-z_.][\w./-]*\.(?:ts|md|sh|js|json|css|html|tmpl|conf))`/g)) {
      const p = m[1]!;
      if (USER_FILES.has(p.split("/").pop()!) && !p.includes("/")) continue;
      // Inside the repo only: a path that leaves it (../) is not there in a clone, whatever this machine has beside it.
      if (!p.startsWith("../") && (existsSync(join(ROOT, p)) || files.some((f) => f === p || f.endsWith(`/${p}`)))) continue;
      missing.push(p);
    }
    expect(missing).toEqual([]);
  });

  test("the README links every guide", () => {
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    const missing = Object.keys(HELP_TOPICS).filter((t) => !readme.includes(`docs/help/${t}.md`));
    expect(missing).toEqual([]);
  });
});
