// `sbx logs --export jsonl|ocsf`: one audit row as one line of JSON, for a SIEM or a file that outlives the machine. Pure.
//
// A line is one record whatever the row holds: every string a sandbox chose (a host, a path, a reason) is inside a
// JSON string, where JSON escapes the C0 controls (\n, \r and the rest), and `jsonText` escapes what JSON leaves raw and
// some readers still take for a line break (NEL U+0085, U+2028, U+2029) or a terminal acts on (C1, bidi). So no value can
// end a line early, start another record, or move a cursor.
import { toOcsf, type AuditRecord } from "./ocsf";
import { jsonText } from "./printable";

export const EXPORT_FORMATS = ["jsonl", "ocsf"] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/**
 * The JSONL record of a row, its names stable (new ones may be added, none renamed): `id` (increasing; the cursor a
 * reader resumes from), `time` (ISO 8601 UTC, to the millisecond), `ts` (the same, epoch milliseconds), `sandboxId` and
 * `sandbox` (null for a row of no sandbox), `kind`, `action`, and `detail` as sbx wrote it.
 */
export function jsonlRecord(row: AuditRecord): Record<string, unknown> {
  return {
    id: row.id,
    time: new Date(row.ts).toISOString(),
    ts: row.ts,
    sandboxId: row.sandboxId,
    sandbox: row.sandbox,
    kind: row.kind,
    action: row.action,
    detail: row.detail,
  };
}

/** One row as one line (no newline) in the format asked for; `productVersion` is sbx's (OCSF's metadata.product). */
export function exportLine(format: ExportFormat, row: AuditRecord, productVersion: string): string {
  return jsonText(format === "ocsf" ? toOcsf(row, productVersion) : jsonlRecord(row));
}
