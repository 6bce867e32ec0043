// The push scan's reading of `git log -p --cc -a -U0`: which lines count as added (merges included), and which blobs it must read whole.
import { describe, expect, test } from "bun:test";
import { formatGateFindings, LogScanner, scanLog, scanTag, SCAN_LOG_ARGS, unquote } from "../../../src/bridge/scan";
import { hostSecretPatterns } from "../../../src/core/redact";
import { SCAN_MAX_FINDINGS, SCAN_MAX_PATHS, SCAN_OVERLAP, SCAN_WINDOW } from "../../../src/core/bounds";

const KEY = "ghp_" + "Ab12Cd34Ef".repeat(4).slice(0, 36);
const C1 = "1".repeat(40);
const C2 = "2".repeat(40);

describe("scanLog", () => {
  test("one parent, -U0: added lines are scanned with their new line numbers; removed lines are not", () => {
    const log = [
      `commit ${C1}`,
      "",
      "diff --git a/app.env b/app.env",
      "index 1111111111111111111111111111111111111111..2222222222222222222222222222222222222222 100644",
      "--- a/app.env",
      "+++ b/app.env",
      "@@ -2 +2,2 @@",
      `-OLD=${KEY}`,
      "+A=1",
      `+B=${KEY}`,
      "@@ -9,0 +10 @@",
      `+C=${KEY}`,
    ].join("\n");
    const r = scanLog(log);
    expect(r.findings.map((f) => [f.file, f.line, f.commit])).toEqual([
      ["app.env", 3, C1],
      ["app.env", 10, C1],
    ]);
    expect(r.unshown).toEqual([]);
  });

  test("a merge (combined diff): only lines in no parent (all '+') are the merge's own", () => {
    const log = [
      `commit ${C2}`,
      "",
      "diff --cc f.txt",
      "index 1111111111111111111111111111111111111111,2222222222222222222222222222222222222222..3333333333333333333333333333333333333333",
      "--- a/f.txt",
      "+++ b/f.txt",
      "@@@ -1,2 -1,2 +1,4 @@@",
      ` +from-second=${KEY}`,
      `+ from-first=${KEY}`,
      `- gone=${KEY}`,
      `++evil=${KEY}`,
      "  same",
    ].join("\n");
    const r = scanLog(log);
    expect(r.findings.map((f) => [f.file, f.line, f.commit])).toEqual([["f.txt", 3, C2]]);
  });

  test("a combined diff's 'Binary files differ' asks for the whole result blob", () => {
    const blob = "9".repeat(40);
    const log = [`commit ${C2}`, "", "diff --cc x.dat", `index ${"1".repeat(40)},${"2".repeat(40)}..${blob}`, "Binary files differ", "diff --cc gone.dat", `index ${"1".repeat(40)},${"2".repeat(40)}..${"0".repeat(40)}`, "Binary files differ"].join("\n");
    expect(scanLog(log).unshown).toEqual([{ commit: C2, file: "x.dat", blob }]);
  });

  test("added lines that look like headers stay content; a quoted path is unquoted", () => {
    const log = [
      `commit ${C1}`,
      "",
      'diff --git "a/we\\tird" "b/we\\tird"',
      '--- /dev/null',
      '+++ "b/we\\tird"',
      "@@ -0,0 +1,3 @@",
      `+commit ${C2}`,
      "+diff --git a/fake b/fake",
      `+K=${KEY}`,
    ].join("\n");
    expect(scanLog(log).findings.map((f) => [f.file, f.line, f.commit])).toEqual([["we\tird", 3, C1]]);
  });

  test("the git log arguments diff merges, binaries and renames as added text, with no drivers", () => {
    expect([...SCAN_LOG_ARGS]).toEqual(["log", "-p", "--cc", "-a", "-U0", "--full-index", "--no-color", "--no-textconv", "--no-ext-diff", "--no-renames", "--no-decorate", "--no-show-signature", "--pretty=raw", "--ignore-missing", "--stdin"]);
  });
});

/** One commit as `git log -p --pretty=raw` prints it: headers, a blank line, the message indented four spaces. */
function rawCommit(sha: string, opts: { headers?: string[]; message: string[]; diff?: string[] }): string[] {
  return [
    `commit ${sha}`,
    `tree ${"a".repeat(40)}`,
    `parent ${"b".repeat(40)}`,
    ...(opts.headers ?? [`author A U Thor <a@example.invalid> 1700000000 +0000`, `committer A U Thor <a@example.invalid> 1700000000 +0000`]),
    "",
    ...opts.message.map((l) => `    ${l}`),
    ...(opts.diff ? ["", ...opts.diff] : []),
  ];
}

describe("commit messages and headers", () => {
  const diff = ["diff --git a/ok.txt b/ok.txt", "--- a/ok.txt", "+++ b/ok.txt", "@@ -1 +1 @@", "-old", "+new"];

  test("a key in a commit message is found, as 'commit message' with its line in the message and the commit", () => {
    const log = [...rawCommit(C1, { message: ["fix the build", "", `token was ${KEY}`], diff }), ...rawCommit(C2, { message: ["clean one"] })].join("\n");
    const r = scanLog(log);
    expect(r.findings).toEqual([{ file: "commit message", line: 3, pattern: "github-token", description: "GitHub token", commit: C1 }]);
    expect(formatGateFindings(r.findings)).toBe(`commit message:3: GitHub token (commit ${C1.slice(0, 12)})`);
  });

  test("a message with no diff after it (an empty commit, the last commit) is scanned too", () => {
    expect(scanLog(rawCommit(C2, { message: [`K=${KEY}`] }).join("\n")).findings.map((f) => [f.file, f.line, f.commit])).toEqual([["commit message", 1, C2]]);
  });

  test("ordinary messages are not flagged: hashes, ids, short prefixes, prose about keys", () => {
    const message = [
      `Revert "x": this reverts commit ${"d".repeat(40)}.`,
      "Refs 123e4567-e89b-12d3-a456-426614174000; see https://github.com/owner/repo/pull/12",
      "Rotate the ghp_ token prefix check; sk-ant- and AKIA are prefixes only",
      "Signed-off-by: Some One <some.one@example.invalid>",
      "Co-authored-by: ghp bot <ghp_bot@users.noreply.example.invalid>",
    ];
    expect(scanLog([...rawCommit(C1, { message, diff })].join("\n")).findings).toEqual([]);
  });

  test("identities are the sandbox's text too: a key in an author, committer or mergetag tagger is found as 'commit header'", () => {
    const who = `${KEY} <x@example.invalid> 1700000000 +0000`;
    const plain = "a <a@example.invalid> 1700000000 +0000";
    for (const headers of [
      [`author ${who}`, `committer ${plain}`],
      [`author ${plain}`, `committer a <${KEY}@example.invalid> 1 +0000`],
      [`author ${plain}`, `committer ${plain}`, "mergetag object " + "c".repeat(40), " type commit", " tag v1", ` tagger ${who}`, " ", " signed"],
    ]) {
      expect(scanLog(rawCommit(C1, { headers, message: ["ok"], diff }).join("\n")).findings.map((f) => f.file)).toEqual(["commit header"]);
    }
    const clean = [`author ${plain}`, `committer ${plain}`, "mergetag object " + "c".repeat(40), " type commit", " tag v1", ` tagger ${plain}`, " ", " signed"];
    expect(scanLog(rawCommit(C1, { headers: clean, message: ["ok"], diff }).join("\n")).findings).toEqual([]);
  });

  test("a key in another header (one git keeps but does not show in messages) is found", () => {
    const headers = ["author a <a@example.invalid> 1 +0000", "committer a <a@example.invalid> 1 +0000", `x-note ${KEY}`];
    const r = scanLog(rawCommit(C1, { headers, message: ["ok"] }).join("\n"));
    expect(r.findings.map((f) => [f.file, f.commit])).toEqual([["commit header", C1]]);
  });

  test("message lines that look like diff lines or commit lines are message lines; the diff after them is still read", () => {
    const message = ["@@ -0,0 +1 @@", `-${KEY}`, `commit ${C2}`, "diff --git a/x b/x"];
    const r = scanLog(rawCommit(C1, { message, diff: ["diff --git a/f b/f", "--- /dev/null", "+++ b/f", "@@ -0,0 +1,2 @@", "+fine", `+K=${KEY}`] }).join("\n"));
    expect(r.findings.map((f) => [f.file, f.line, f.commit])).toEqual([
      ["commit message", 2, C1],
      ["f", 2, C1],
    ]);
  });

  test("a crafted header that looks like a hunk cannot hide the lines after it", () => {
    const headers = ["author a <a@example.invalid> 1 +0000", "committer a <a@example.invalid> 1 +0000", "diff --git a/x b/x", "@@ -1 +1 @@", `-${KEY}`];
    const r = scanLog(rawCommit(C1, { headers, message: [`m ${KEY}`] }).join("\n"));
    expect(r.findings.map((f) => f.file)).toEqual(["commit header", "commit message"]);
  });

  test("fed in pieces, split anywhere, the reader finds the same", () => {
    const log = [...rawCommit(C1, { message: ["a", `b ${KEY}`], diff: [...diff, `+K=${KEY}`] }), ...rawCommit(C2, { message: [`c ${KEY}`] })].join("\n");
    const whole = scanLog(log).findings;
    expect(whole).toHaveLength(3);
    for (const size of [1, 7, 64]) {
      const s = new LogScanner();
      for (let i = 0; i < log.length; i += size) s.write(log.slice(i, i + size));
      expect(s.end().findings).toEqual(whole);
    }
  });
});

describe("what the walk reached (the gate's fast-forward check without a process)", () => {
  const T = "a".repeat(40);
  const P = "b".repeat(40);
  const Q = "c".repeat(40);
  const head = (id: string, headers: string[]) => [`commit ${id}`, `tree ${T}`, ...headers, "author t <t@x> 1 +0000", "committer t <t@x> 1 +0000", "", "    msg", ""];
  const reached = (log: string[], reach: string[]) => {
    const s = new LogScanner(undefined, undefined, new Set(reach));
    s.write(log.join("\n") + "\n");
    s.end();
    return [...s.reached].sort();
  };
  test("a walked commit and the parents right after its tree are reached; ids not asked about are not kept", () => {
    expect(reached(head(C1, [`parent ${P}`, `parent ${Q}`]), [C1, P, Q])).toEqual([C1, P, Q].sort());
    expect(reached(head(C1, [`parent ${P}`]), [Q])).toEqual([]);
  });
  test("a parent header anywhere else is the sandbox's text: after the author, in a continuation line, in the message", () => {
    const late = [`commit ${C1}`, `tree ${T}`, `parent ${P}`, "author t <t@x> 1 +0000", `parent ${Q}`, "committer t <t@x> 1 +0000", "", "    msg"];
    expect(reached(late, [Q])).toEqual([]);
    const cont = [`commit ${C1}`, `tree ${T}`, "gpgsig -----BEGIN-----", ` parent ${Q}`, `parent ${Q}`, "", "    msg"];
    expect(reached(cont, [Q])).toEqual([]);
    const msg = [`commit ${C1}`, `tree ${T}`, "", `    parent ${Q}`, `parent ${Q}`];
    expect(reached(msg, [Q])).toEqual([]);
    // No tree first: git reads no parents at all.
    expect(reached([`commit ${C1}`, `parent ${Q}`, `tree ${T}`, "", "    m"], [Q])).toEqual([]);
  });
});

describe("the paths the diffs touch (the CI-file check, with no log of its own)", () => {
  const T = "a".repeat(40);
  const P = "b".repeat(40);
  const Q = "c".repeat(40);
  const I = "index 1111111111111111111111111111111111111111..2222222222222222222222222222222222222222 100644";
  const commit = (id: string, parents: string[], diff: string[]) => [`commit ${id}`, `tree ${T}`, ...parents.map((p) => `parent ${p}`), "author t <t@x> 1 +0000", "committer t <t@x> 1 +0000", "", "    msg", "", ...diff];
  const paths = (log: string[]) => {
    const s = new LogScanner();
    s.write(log.join("\n") + "\n");
    s.end();
    return s.paths === null ? null : [...s.paths].sort();
  };
  test("every `diff --git` header names one, those with no ---/+++ lines too (a mode change, an empty file, a deletion)", () => {
    const log = [
      ...commit(C1, [P], ["diff --git a/.github/workflows/ci.yml b/.github/workflows/ci.yml", "old mode 100644", "new mode 100755"]),
      ...commit(C2, [C1], [
        "diff --git a/.drone.yml b/.drone.yml", "new file mode 100644", "index 0000000000000000000000000000000000000000..e69de29bb2d1d6434b8b29ae775ad8c2e48c5391",
        "diff --git a/docs b/.travis.yml b/docs b/.travis.yml", "deleted file mode 100644", I.replace(/\.\.2+/, `..${"0".repeat(40)}`), "--- a/docs b/.travis.yml", "+++ /dev/null", "@@ -1 +0,0 @@", "-x",
        'diff --git "a/\\303\\274.yml" "b/\\303\\274.yml"', I, '--- "a/\\303\\274.yml"', '+++ "b/\\303\\274.yml"', "@@ -1 +1 @@", "-a", "+b",
      ]),
    ];
    expect(paths(log)).toEqual([".drone.yml", ".github/workflows/ci.yml", "docs b/.travis.yml", "\u00fc.yml"].sort());
  });
  test("added lines that look like headers are content, not paths", () => {
    expect(paths(commit(C1, [P], ["diff --git a/x b/x", I, "--- a/x", "+++ b/x", "@@ -0,0 +1,2 @@", "+diff --git a/.travis.yml b/.travis.yml", "+x"]))).toEqual(["x"]);
  });
  test("a merge (parents right after its tree) says none: its combined diff leaves out what one parent has in each hunk", () => {
    expect(paths(commit(C1, [P, Q], []))).toBeNull();
    expect(paths([...commit(C1, [P], ["diff --git a/x b/x", I]), ...commit(C2, [P, Q], ["diff --cc y", I])])).toBeNull();
    // A `parent` header anywhere else is the sandbox's text: git takes one parent, and so does the scan.
    const late = [`commit ${C1}`, `tree ${T}`, `parent ${P}`, "author t <t@x> 1 +0000", `parent ${Q}`, "", "    msg", "", "diff --git a/x b/x", I];
    expect(paths(late)).toEqual(["x"]);
  });
  test("a header of another shape, one longer than a window, or more paths than the bound: none (the check reads them itself)", () => {
    expect(paths(commit(C1, [P], ["diff --git a/x b/y", I]))).toBeNull();
    expect(paths(commit(C1, [P], ["diff --combined x", I]))).toBeNull();
    const long = "d".repeat(SCAN_WINDOW);
    const s = new LogScanner();
    const log = commit(C1, [P], [`diff --git a/${long} b/${long}`, I]).join("\n") + "\n";
    for (let i = 0; i < log.length; i += 65536) s.write(log.slice(i, i + 65536));
    s.end();
    expect(s.paths).toBeNull();
    const many = Array.from({ length: SCAN_MAX_PATHS + 1 }, (_, i) => [`diff --git a/f${i} b/f${i}`, I]).flat();
    expect(paths(commit(C1, [P], many))).toBeNull();
    expect(paths(commit(C1, [P], many.slice(0, 2 * SCAN_MAX_PATHS)))?.length).toBe(SCAN_MAX_PATHS);
  });
});

describe("annotated tags", () => {
  const T1 = "7".repeat(40);
  const tag = (message: string[], extra: string[] = []) =>
    [`object ${C1}`, "type commit", "tag v1.0", "tagger a <a@example.invalid> 1700000000 +0000", ...extra, "", ...message].join("\n") + "\n";

  test("a key in a tag message is found as 'tag message' with its line and the tag object", () => {
    const r = scanTag(T1, tag(["Release 1.0", "", `deploy with ${KEY}`]));
    expect(r.tag).toEqual({ object: C1, type: "commit", name: "v1.0" });
    expect(r.findings).toEqual([{ file: "tag message", line: 3, pattern: "github-token", description: "GitHub token", commit: T1 }]);
    expect(formatGateFindings(r.findings)).toBe(`tag message:3: GitHub token (tag object ${T1.slice(0, 12)})`);
  });

  test("a key in the tagger is found", () => {
    const t = [`object ${C1}`, "type commit", "tag v1.0", `tagger ${KEY} <a@example.invalid> 1 +0000`, "", "ok"].join("\n");
    expect(scanTag(T1, t).findings.map((f) => [f.file, f.line])).toEqual([["tag message", 0]]);
  });

  test("an ordinary tagger, message and signature are not flagged", () => {
    const sig = ["-----BEGIN PGP SIGNATURE-----", "", "iQEzBAABCAAdFiEE" + "x".repeat(40), "-----END PGP SIGNATURE-----"];
    expect(scanTag(T1, tag(["Release 1.0", `built from ${"e".repeat(40)}`, ...sig])).findings).toEqual([]);
  });

  test("a tag of a tag names its target's type, so the gate follows it", () => {
    const t = [`object ${T1}`, "type tag", "tag outer", "tagger a <a@example.invalid> 1 +0000", "", "outer"].join("\n");
    expect(scanTag(C2, t).tag).toEqual({ object: T1, type: "tag", name: "outer" });
  });
});

describe("file names as git quotes them (core.quotePath), read back as they are", () => {
  test("escapes, octal bytes (UTF-8), and what git leaves as it is", () => {
    expect(unquote('"b/pa\\"ss\\\\w\\303\\266rd\\t.gz"')).toBe('b/pa"ss\\wörd\t.gz');
    expect(unquote('"b/\\360\\237\\230\\200 x"')).toBe("b/\u{1F600} x");
    expect(unquote('"b/\\a\\b\\f\\n\\r\\v"')).toBe("b/\x07\b\f\n\r\v");
    expect(unquote("b/plain name.txt")).toBe("b/plain name.txt");
  });

  test("a host value hidden by git's quoting in a file name is found, in the diff header (an empty file has no other)", () => {
    const patterns = hostSecretPatterns({ DB_PASSWORD: 'Pa"ss\\wörd-2024' });
    const q = '"a/Pa\\"ss\\\\w\\303\\266rd-2024" "b/Pa\\"ss\\\\w\\303\\266rd-2024"';
    const log = [`commit ${"c".repeat(40)}`, `tree ${"d".repeat(40)}`, "", "    add", "", `diff --git ${q}`, "new file mode 100644", "index 0000000..e69de29", ""].join("\n");
    const { findings } = scanLog(log, patterns);
    expect(findings.map((f) => [f.file, f.description])).toEqual([["file name", "the value of the host secret DB_PASSWORD (or an encoding of it)"]]);
  });

  test("a finding names the file as it is, its controls shown, never sent", () => {
    const log = [`commit ${"c".repeat(40)}`, `tree ${"d".repeat(40)}`, "", "    add", "", 'diff --git "a/n\\033]0;x\\a" "b/n\\033]0;x\\a"', "--- /dev/null", '+++ "b/n\\033]0;x\\a"', "@@ -0,0 +1 @@", `+aws=${"AKIA" + "ZXCVBNMASDFGHJKL"}`, ""].join("\n");
    const text = formatGateFindings(scanLog(log).findings);
    expect(text).toContain("n\\x1b]0;x\\x07:1: AWS access key id");
    expect(text).not.toContain("\x1b");
  });
});

describe("bounded: the scan reads a line of any length in windows, holding at most one, and still sees all of it", () => {
  const hunk = (added: string) => [`commit ${C1}`, "", "diff --git a/big.txt b/big.txt", "index 1111111111111111111111111111111111111111..2222222222222222222222222222222222222222 100644", "--- a/big.txt", "+++ b/big.txt", "@@ -0,0 +1,2 @@", `+${added}`, "+after", ""].join("\n");
  const filler = (n: number) => "a".repeat(n);
  /** Feeds the log in 64 KiB chunks, as git's pipe gives it; the most characters the reader held of one line. */
  function feed(log: string): { findings: ReturnType<LogScanner["end"]>["findings"]; held: number } {
    const s = new LogScanner();
    let held = 0;
    for (let i = 0; i < log.length; i += 65536) {
      s.write(log.slice(i, i + 65536));
      held = Math.max(held, s.heldChars);
    }
    return { findings: s.end().findings, held };
  }

  test("a key at the end of a 3 MiB line, and one straddling each window boundary, are found, with the line's number", () => {
    for (const at of [3 * 1024 * 1024, SCAN_WINDOW - 10, SCAN_WINDOW - SCAN_OVERLAP + 5, 2 * (SCAN_WINDOW - SCAN_OVERLAP) + SCAN_OVERLAP - 20]) {
      const r = feed(hunk(`${filler(at)} ${KEY} ${filler(1000)}`));
      expect({ at, found: r.findings.map((f) => [f.file, f.line]) }).toEqual({ at, found: [["big.txt", 1]] });
      expect(r.held).toBeLessThanOrEqual(SCAN_WINDOW + 65536);
    }
  });

  test("a base64-encoded key deep inside a 3 MiB base64 run (past what one line's decoding covered) is found", () => {
    for (const pad of [3 * 1024 * 1024 - 1, 3 * 1024 * 1024, 3 * 1024 * 1024 + 1, 3 * 1024 * 1024 + 2]) {
      const hidden = Buffer.concat([Buffer.alloc(pad, 7), Buffer.from(` ${KEY} `), Buffer.alloc(1000, 7)]).toString("base64");
      const r = feed(hunk(hidden));
      expect({ pad, found: r.findings.map((f) => f.description) }).toEqual({ pad, found: ["GitHub token (base64-encoded)"] });
    }
  });

  test("a commit message line and a file name of many MiB are read the same way", () => {
    const msg = [`commit ${C1}`, "tree 3333333333333333333333333333333333333333", "", `    ${filler(2 * 1024 * 1024)} ${KEY}`, ""].join("\n");
    expect(feed(msg).findings.map((f) => f.file)).toEqual(["commit message"]);
    const name = `${filler(1024 * 1024)}-${KEY}`;
    const diff = [`commit ${C1}`, "", `diff --git a/${name} b/${name}`, "index 1111111111111111111111111111111111111111..2222222222222222222222222222222222222222 100644", ""].join("\n");
    expect(feed(diff).findings.map((f) => f.file)).toEqual(["file name"]);
  });

  test("a combined diff's 'Binary files … differ' line with a name of many MiB still asks for the blob", () => {
    const name = filler(1024 * 1024);
    const log = [`commit ${C2}`, "", `diff --cc ${name}`, "index 1111111111111111111111111111111111111111,4444444444444444444444444444444444444444..2222222222222222222222222222222222222222", `Binary files a/${name} and b/${name} differ`, ""].join("\n");
    const s = new LogScanner();
    for (let i = 0; i < log.length; i += 65536) s.write(log.slice(i, i + 65536));
    expect(s.end().unshown.map((u) => u.blob)).toEqual(["2".repeat(40)]);
  });

  test("findings are kept to a bound: a push of 100,000 keys is refused naming the first ones and how many more", () => {
    const lines = Array.from({ length: 100_000 }, () => `+K=${KEY}`);
    const r = scanLog([`commit ${C1}`, "", "diff --git a/k b/k", "index 1111111111111111111111111111111111111111..2222222222222222222222222222222222222222 100644", "--- a/k", "+++ b/k", "@@ -0,0 +1,100000 @@", ...lines].join("\n"));
    expect(r.findings.length).toBe(SCAN_MAX_FINDINGS);
    expect(r.more).toBe(100_000 - SCAN_MAX_FINDINGS);
    expect(formatGateFindings(r.findings, r.more)).toContain(`and ${100_000 - SCAN_MAX_FINDINGS} more`);
  });
});
