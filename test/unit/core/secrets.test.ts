// Secret patterns: key-shaped strings are found with file and line; ordinary code, hashes and prose are not.
import { describe, expect, test } from "bun:test";
import { decodedViews, formatFindings, matchSecret, scanText, scanUnifiedDiff, SECRET_PATTERNS } from "../../../src/core/secrets";

// Built at run time so this file itself does not hold key-shaped literals.
const A = (n: number) => "A1b2C3d4E5".repeat(10).slice(0, n);
export const fakeKeys: Record<string, string> = {
  "aws-access-key-id": "AKIA" + "IOSFODNN7EXAMPLE",
  "aws-secret-access-key": "aws_secret_access_key = " + "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
  "github-token": "ghp_" + A(36),
  "github-fine-grained-token": "github_pat_" + A(22) + "_" + A(59),
  "gitlab-token": "glpat-" + A(20),
  "private-key": "-----BEGIN OPENSSH " + "PRIVATE KEY-----",
  "anthropic-api-key": "sk-ant-api03-" + A(40),
  "openai-api-key": "sk-proj-" + A(48),
  "google-api-key": "AIza" + A(35),
  "google-oauth-token": "ya29." + A(40),
  "slack-token": "xoxb-" + "1234567890-" + A(24),
  "stripe-key": "sk_live_" + A(24),
  "npm-token": "npm_" + A(36),
};

describe("secret patterns find real shapes", () => {
  for (const [id, key] of Object.entries(fakeKeys)) {
    test(id, () => {
      const text = `line one\nconst k = "${key}";\n`;
      const f = scanText(text, "src/config.ts");
      expect(f).toHaveLength(1);
      expect(f[0]).toMatchObject({ file: "src/config.ts", line: 2, pattern: id });
    });
  }
});

describe("no false positives on ordinary text", () => {
  const benign = [
    "const sha = 'da39a3ee5e6b4b0d3255bfef95601890afd80709';",
    "id: 123e4567-e89b-12d3-a456-426614174000",
    "See https://github.com/owner/repo/pull/12",
    "ghp_short",
    "const task = 'sk-ant-'; // prefix only",
    "AKIA is the prefix of AWS access keys",
    "-----BEGIN PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----",
    "xoxb-",
    "export OPENAI_API_KEY=sbx-placeholder",
    "the skip-navigation link",
    "risk-assessment-for-the-projects-and-their-dependencies-in-2024",
    "password = process.env.DB_PASSWORD",
    "AIzaShort",
    "npm_config_cache=/tmp",
  ];
  for (const line of benign) {
    test(JSON.stringify(line), () => expect(scanText(line, "f")).toEqual([]));
  }
});

describe("scanUnifiedDiff", () => {
  const key = fakeKeys["github-token"]!;
  const diff = [
    "commit " + "a".repeat(40),
    "diff --git a/src/a.ts b/src/a.ts",
    "index 111..222 100644",
    "--- a/src/a.ts",
    "+++ b/src/a.ts",
    "@@ -10,3 +10,4 @@ function f() {",
    " context",
    "-const old = 1;",
    "+const ok = 2;",
    `+const token = "${key}";`,
    " tail",
    "diff --git a/notes.md b/notes.md",
    "new file mode 100644",
    "--- /dev/null",
    "+++ b/notes.md",
    "@@ -0,0 +1,2 @@",
    "+hello",
    `+-----BEGIN RSA PRIVATE KEY-----`,
    "commit " + "b".repeat(40),
    "diff --git a/old.txt b/old.txt",
    "--- a/old.txt",
    "+++ b/old.txt",
    "@@ -1,2 +1,1 @@",
    `-removed ${key}`,
    " kept",
  ].join("\n");

  test("reports new-side file and line of added lines only, with the commit", () => {
    const f = scanUnifiedDiff(diff);
    expect(f).toEqual([
      { file: "src/a.ts", line: 12, pattern: "github-token", description: "GitHub token", commit: "a".repeat(40) },
      { file: "notes.md", line: 2, pattern: "private-key", description: "private key block", commit: "a".repeat(40) },
    ]);
    expect(formatFindings(f)).toBe(`src/a.ts:12: GitHub token (commit aaaaaaaaaaaa)\nnotes.md:2: private key block (commit aaaaaaaaaaaa)`);
  });

  test("a diff header line that looks like an addition is not scanned", () => {
    expect(scanUnifiedDiff(`diff --git a/x b/x\n--- a/x\n+++ b/x\n`)).toEqual([]);
  });
});

describe("a secret hidden in an encoding is still found (matchSecret, decodedViews)", () => {
  const key = fakeKeys["github-token"]!;
  const utf16 = (s: string) => [...s].map((c) => `${c}\0`).join("");
  const forms: [string, string, string][] = [
    ["base64", `blob: ${Buffer.from(`token=${key}`).toString("base64")}`, "base64-encoded"],
    ["base64url", `x=${Buffer.from(`token=${key}??`).toString("base64url")}`, "base64-encoded"],
    ["hex", `payload ${Buffer.from(key).toString("hex")}`, "hex-encoded"],
    ["percent-encoded", `q=${[...key].map((c) => `%${c.charCodeAt(0).toString(16)}`).join("")}`, "URL-encoded"],
    ["UTF-16 (NUL bytes)", utf16(`k = ${key}`), "UTF-16"],
    ["UTF-16 inside base64", Buffer.from(utf16(key), "latin1").toString("base64"), "UTF-16 inside base64-encoded"],
    ["base64 inside hex", Buffer.from(Buffer.from(key).toString("base64")).toString("hex"), "base64-encoded inside hex-encoded"],
  ];
  for (const [name, line, how] of forms) {
    test(name, () => {
      const m = matchSecret(line, SECRET_PATTERNS);
      expect({ id: m?.pattern.id, how: m?.how }).toEqual({ id: "github-token", how });
      expect(scanText(line, "f")[0]?.description).toBe(`GitHub token (${how})`);
    });
  }

  test("ordinary encoded things are not flagged: lockfile integrity, hashes, a PGP signature, an image's base64", () => {
    const lines = [
      `"integrity": "sha512-${Buffer.alloc(64, 7).toString("base64")}"`,
      "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      "iQEzBAABCAAdFiEE" + "x".repeat(60),
      `data:image/png;base64,${Buffer.from(Array.from({ length: 300 }, (_, i) => (i * 37) % 256)).toString("base64")}`,
      "https://example.org/search?q=hello%20world&lang=en",
    ];
    for (const l of lines) expect({ l, m: matchSecret(l, SECRET_PATTERNS) }).toEqual({ l, m: undefined });
  });

  test("a crafted line's decoding is bounded", () => {
    const huge = Buffer.alloc(4 << 20, 65).toString("base64");
    const views = decodedViews(huge);
    expect(views.reduce((n, v) => n + v.text.length, 0)).toBeLessThan(6 << 20);
  });

  test("bounded: a crafted line's decoding costs time in proportion to it (1 MiB of hex, of base64, of one letter: well under a second each)", () => {
    // The push scan runs on the daemon's one thread: a paired hex regex took 2.6 s on 1 MiB of hex, and joining bytes
    // into text with fromCharCode pieces 0.5 s a MiB.
    const lines = { hex: Buffer.alloc(512 * 1024, 0xab).toString("hex"), base64: Buffer.alloc(768 * 1024, 7).toString("base64"), letter: "a".repeat(1 << 20) };
    for (const [name, line] of Object.entries(lines)) {
      const t0 = performance.now();
      matchSecret(line, SECRET_PATTERNS);
      const ms = performance.now() - t0;
      expect({ name, slow: ms > 800 ? Math.round(ms) : false }).toEqual({ name, slow: false });
    }
  });
});
