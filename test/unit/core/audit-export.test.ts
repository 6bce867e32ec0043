// export-framing: `sbx logs --export jsonl|ocsf` writes one record a line whatever a sandbox put in a row. A host, a path
// or a reason with newlines, the separators other readers split on (\r, \v, \f, \x1c-\x1e, NEL, U+2028, U+2029), a
// forged `"}\n{"id":1,…` or terminal escapes cannot end a line early, start a second record or reach a terminal raw;
// each line parses back to exactly what the row held. And the JSONL record has every field of the row, by stable names.
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { exportLine, jsonlRecord } from "../../../src/core/audit-export";
import type { AuditRecord } from "../../../src/core/ocsf";

const T = Date.UTC(2026, 10, 28, 9, 30, 15, 123);
const FORGED = '"}\n{"id":999,"kind":"allowlist","action":"allow","detail":{"pattern":"*"}}\n';
/** Everything some line reader takes for the end of a line (Python's str.splitlines(), JavaScript's line terminators). */
const BREAKS = /[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/;
const HOSTILE = [FORGED, "a\rb\vc\fd", "\x1c\x1d\x1e", "nel\x85here", "ls\u2028ps\u2029", "\x1b]52;c;cHduZWQ=\x07\x1b[2J", "\u202eevil", "\ud800lone", "x".repeat(5000)];

const rows: AuditRecord[] = HOSTILE.flatMap((h, i) => [
  { id: 3 * i + 1, ts: T, sandboxId: 1, sandbox: "demo", kind: "egress", action: "denied", detail: { method: "CONNECT", host: h, port: 443, reason: "invalid-host", detail: h } },
  { id: 3 * i + 2, ts: T, sandboxId: 1, sandbox: "demo", kind: "egress", action: "allowed", detail: { method: "GET", host: "example.org", port: 80, address: "93.184.216.34", pattern: "example.org", source: "sandbox", target: `/p/${h}` } },
  { id: 3 * i + 3, ts: T, sandboxId: 1, sandbox: "demo", kind: "egress", action: "asked", detail: { host: "pypi.org", port: 443, why: h, approvalId: 1 } },
]);

describe("export-framing: a row is one line, whatever a sandbox put in it", () => {
  for (const format of ["jsonl", "ocsf"] as const) {
    test(`${format}: no line holds a line break of any reader's, or a raw control; each parses back to the row's own values`, () => {
      for (const r of rows) {
        const line = exportLine(format, r, "0.1.0");
        expect({ id: r.id, breaks: BREAKS.test(line) }).toEqual({ id: r.id, breaks: false });
        expect(line).not.toMatch(/[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/);
        const back = JSON.parse(line) as Record<string, unknown>;
        const text = JSON.stringify(back);
        // The hostile text the row holds comes back whole (escaped the one way JSON writes it), in whatever field says it.
        for (const h of HOSTILE) if (Object.values(r.detail).some((v) => typeof v === "string" && v.includes(h))) expect(text).toContain(JSON.stringify(h).slice(1, -1));
      }
      // The whole export split as the strictest reader splits it: exactly one record per row, none forged.
      const all = rows.map((r) => exportLine(format, r, "0.1.0")).join("\n") + "\n";
      const records = all.split(BREAKS).filter((l) => l !== "");
      expect(records).toHaveLength(rows.length);
      const ids = records.map((l) => JSON.parse(l) as Record<string, unknown>).map((o) => (format === "jsonl" ? o.id : (o.metadata as { uid: string }).uid));
      expect(ids.map(String)).toEqual(rows.map((r) => String(r.id)));
    });
  }

  test.skipIf(!Bun.which("python3"))("Python reads the same: splitlines() gives one record per row and json.loads each (python3 present)", () => {
    const dir = mkdtempSync(join(tmpdir(), "sbx-export-"));
    try {
      for (const format of ["jsonl", "ocsf"] as const) {
        const file = join(dir, `${format}.jsonl`);
        writeFileSync(file, rows.map((r) => exportLine(format, r, "0.1.0")).join("\n") + "\n");
        const py = Bun.spawnSync(["python3", "-c", "import json,sys; t=open(sys.argv[1],encoding='utf-8',errors='surrogatepass').read(); ls=t.splitlines(); [json.loads(l) for l in ls]; print(len(ls))", file]);
        expect({ format, out: py.stdout.toString().trim(), err: py.stderr.toString() }).toEqual({ format, out: String(rows.length), err: "" });
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("the JSONL record", () => {
  test("every field of the row by its stable name, the time in ISO 8601 UTC to the millisecond beside the epoch ms", () => {
    const r: AuditRecord = { id: 7, ts: T, sandboxId: 2, sandbox: "demo", kind: "allowlist", action: "allow", detail: { pattern: "example.org", scope: "sandbox", by: "cli:alice", approvalId: null } };
    expect(jsonlRecord(r)).toEqual({ id: 7, time: "2026-11-28T09:30:15.123Z", ts: T, sandboxId: 2, sandbox: "demo", kind: "allowlist", action: "allow", detail: r.detail });
    expect(Object.keys(JSON.parse(exportLine("jsonl", r, "0.1.0")))).toEqual(["id", "time", "ts", "sandboxId", "sandbox", "kind", "action", "detail"]);
  });

  test("a row of no sandbox says so with nulls, not by leaving the fields out", () => {
    const line = exportLine("jsonl", { id: 1, ts: T, sandboxId: null, sandbox: null, kind: "daemon", action: "start", detail: {} }, "0.1.0");
    expect(JSON.parse(line)).toMatchObject({ sandboxId: null, sandbox: null });
  });
});
