// sbx logs: a human line per entry whose sandbox-chosen text can never act on the terminal, filters by kind and time
// (through the daemon's route, served in this process), and flags that are wrong are refused, never ignored.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { formatAudit, parseSince } from "../../../src/cli/commands/logs";
import { printable } from "../../../src/core/printable";
import type { AuditView } from "../../../src/daemon/protocol";
import { dockerCliWorld, type DockerCliWorld } from "../../support/docker-cli-world";

const entry = (over: Partial<AuditView>): AuditView => ({ id: 1, ts: Date.UTC(2026, 10, 24, 10, 0, 0), sandboxId: 1, sandbox: "demo", kind: "egress", action: "denied", detail: {}, ...over });

describe("the human format", () => {
  test("details read as key=value; a value with spaces is quoted; lists are joined", () => {
    const line = formatAudit(entry({ detail: { method: "CONNECT", host: "evil.example", port: 443, reason: "not on the allowlist", argv: ["git", "push"] } }));
    expect(line).toBe('2026-11-24T10:00:00Z  demo         egress    denied  method=CONNECT host=evil.example port=443 reason="not on the allowlist" argv="git push"');
  });

  test("no control character a sandbox chose reaches the terminal: OSC 52 (clipboard), title, CSI, C1 are shown escaped", () => {
    const hostile = "x\x1b]52;c;ZWNobyBwd25lZA==\x07y\x1b]0;owned\x07\x1b[2J\x9b31m\r\nz";
    const line = formatAudit(entry({ sandbox: "demo\x1b[31m", action: "deny\x07", detail: { host: hostile, [`k\x1b`]: "v" } }));
    expect(line).not.toMatch(/[\x00-\x1f\x7f-\x9f]/);
    expect(line).toContain("\\x1b]52;c;");
    expect(printable("a\tb\nc")).toBe("a\\tb\\nc");
  });
});

describe("--since", () => {
  const now = Date.UTC(2026, 10, 24, 12, 0, 0);
  test("a duration back from now, or a time", () => {
    expect(parseSince("10m", now)).toBe(now - 600_000);
    expect(parseSince("2h", now)).toBe(now - 7_200_000);
    expect(parseSince("1d", now)).toBe(now - 86_400_000);
    expect(parseSince("2026-11-24T10:00:00Z", now)).toBe(Date.UTC(2026, 10, 24, 10, 0, 0));
  });
  test("anything else is refused", () => {
    expect(() => parseSince("soon", now)).toThrow("not a duration or a time");
  });
});

describe("through the daemon", () => {
  let x: DockerCliWorld;
  let between: string;
  beforeEach(async () => {
    x = await dockerCliWorld();
    const s = x.daemon.store;
    const sb = s.createSandbox({ name: "demo", repo: x.w.repo, backend: "fake" });
    // The audit log is append-only: an earlier entry is one written before a moment the test notes.
    s.audit({ sandboxId: sb.id, kind: "egress", action: "denied", detail: { host: "old.example" } });
    await Bun.sleep(20);
    between = new Date().toISOString();
    await Bun.sleep(20);
    s.audit({ sandboxId: sb.id, kind: "egress", action: "denied", detail: { host: "now.example" } });
    s.audit({ sandboxId: sb.id, kind: "bridge", action: "git", detail: { argv: ["push"] } });
  });
  afterEach(async () => x.close());

  test("--kind and --since filter on the daemon's side", async () => {
    const r = await x.cli(["logs", "--kind", "egress", "--since", between]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("host=now.example");
    expect(r.stdout).not.toContain("old.example");
    expect(r.stdout).not.toContain("bridge");
    const all = await x.cli(["logs", "--kind", "egress", "--since", "1h"]);
    expect(all.stdout).toContain("old.example");
    expect(all.stdout).toContain("now.example");
  });

  test("a wrong --since, -n or --kind is refused with 64", async () => {
    for (const argv of [["logs", "--since", "soon"], ["logs", "-n", "0"], ["logs", "-n", "lots"], ["logs", "--kind", "Bad Kind"]]) {
      expect({ argv, code: (await x.cli(argv)).code }).toEqual({ argv, code: 64 });
    }
  });
});

describe("--export: the whole log as JSON lines, filters as for the human view", () => {
  let x: DockerCliWorld;
  let demo: number;
  beforeEach(async () => {
    x = await dockerCliWorld();
    const s = x.daemon.store;
    demo = s.createSandbox({ name: "demo", repo: x.w.repo, backend: "fake" }).id;
    const other = s.createSandbox({ name: "other", repo: x.w.repo, backend: "fake" }).id;
    // More than one page of the daemon's answers (500), of a kind no per-sandbox budget holds back.
    for (let i = 0; i < 1203; i++) s.audit({ sandboxId: i % 3 === 2 ? other : demo, kind: "lifecycle", action: "limits", detail: { i } });
    s.audit({ sandboxId: demo, kind: "egress", action: "denied", detail: { method: "CONNECT", host: "evil.example", port: 443, reason: "not-allowed", detail: "not on the allowlist" } });
    s.audit({ sandboxId: demo, kind: "allowlist", action: "allow", detail: { pattern: "evil.example", scope: "sandbox", by: "cli:t", approvalId: 1 } });
  });
  afterEach(async () => x.close());

  const lines = (out: string) => out.split("\n").filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);

  test("jsonl: every entry (not the last 100), oldest first, each once, across the daemon's pages", async () => {
    const r = await x.cli(["logs", "--export", "jsonl"]);
    expect(r.code).toBe(0);
    const recs = lines(r.stdout);
    const ids = recs.map((o) => o.id as number);
    expect(recs.length).toBeGreaterThanOrEqual(1205);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(ids.length);
    expect(recs.filter((o) => o.kind === "lifecycle" && o.action === "limits")).toHaveLength(1203);
  });

  test("the filters apply: --sandbox, --kind, --since; -n N exports the last N", async () => {
    const mine = lines((await x.cli(["logs", "--export", "jsonl", "--sandbox", "demo", "--kind", "lifecycle"])).stdout);
    expect(mine).toHaveLength(802);
    expect(mine.every((o) => o.sandbox === "demo" && o.kind === "lifecycle")).toBe(true);
    const egress = lines((await x.cli(["logs", "--export", "ocsf", "--kind", "egress"])).stdout);
    expect(egress.map((o) => [o.class_uid, o.activity_id])).toEqual([[4001, 5]]);
    expect(lines((await x.cli(["logs", "--export", "jsonl", "--since", "1h", "-n", "2"])).stdout).map((o) => o.kind)).toEqual(["egress", "allowlist"]);
    expect(lines((await x.cli(["logs", "--export", "jsonl", "--since", "2099-01-01T00:00Z"])).stdout)).toEqual([]);
  });

  test("ocsf: each line an OCSF event of its row (the approval as User Access Management)", async () => {
    const r = await x.cli(["logs", "--export", "ocsf", "--kind", "allowlist"]);
    expect(lines(r.stdout).map((o) => [o.class_uid, o.activity_id, (o.user as { name: string }).name])).toEqual([[3005, 1, "demo"]]);
  });

  test("a format sbx does not write, or --export beside --json, is refused with 64 before any daemon is asked", async () => {
    for (const argv of [["logs", "--export", "xml"], ["logs", "--export", "jsonl", "--json"], ["logs", "--export", "ocsf", "-n", "0"]]) {
      const r = await x.cli(argv);
      expect({ argv, code: r.code, out: r.stdout }).toEqual({ argv, code: 64, out: "" });
    }
    expect((await x.cli(["logs", "--export", "xml"])).stderr).toContain("jsonl, ocsf");
  });

  test("the human view is as it was: the last 100 by default", async () => {
    const r = await x.cli(["logs"]);
    expect(r.stdout.split("\n").filter(Boolean)).toHaveLength(100);
  });
});
