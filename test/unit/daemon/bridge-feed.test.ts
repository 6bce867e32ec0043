// Bridge commands in the live feed: the guard's audit event maps to a feed event, and the audit row it writes maps back to the same outcome (history after a reload).
import { describe, expect, test } from "bun:test";
import type { AuditEvent } from "../../../src/bridge/server";
import { feedFromBridge } from "../../../src/guards/bridge";
import { feedFromAudit } from "../../../src/events/feed";

const sb = { id: 3, name: "demo" };
const ev = (decision: AuditEvent["decision"], extra: Partial<AuditEvent> = {}): AuditEvent => ({
  sandbox: "demo", tool: "git", args: ["push", "origin", "feature"], cwd: "/src/app", decision, durationMs: 12, ...extra,
});

describe("bridge events in the feed", () => {
  test("allowed, refused and failed commands", () => {
    expect(feedFromBridge(sb, ev("allowed", { exitCode: 0 }), 5)).toEqual({ kind: "bridge", at: 5, sandbox: sb, command: ["git", "push", "origin", "feature"], outcome: "ok", exitCode: 0 });
    expect(feedFromBridge(sb, ev("refused", { reason: "ext:: transport" }), 5)).toMatchObject({ outcome: "refused", detail: "ext:: transport" });
    expect(feedFromBridge(sb, ev("failed", { exitCode: 128 }), 5)).toMatchObject({ outcome: "failed", exitCode: 128 });
  });

  test("the audit row the bridge guard writes (`git.refused`, {tool, args, decision}) reads back with the same outcome", () => {
    const expected = { allowed: "ok", refused: "refused", failed: "failed" } as const;
    for (const decision of ["allowed", "refused", "failed"] as const) {
      const e = ev(decision);
      const row = { id: 1, ts: 9, sandboxId: 3, kind: "bridge", action: `git.${decision}`, detail: { ...e } as Record<string, unknown> };
      expect(feedFromAudit(row, () => "demo")).toMatchObject({ kind: "bridge", command: ["git", "push", "origin", "feature"], outcome: expected[decision] });
      expect(feedFromBridge(sb, e, 0)).toMatchObject({ outcome: expected[decision] });
    }
  });
});
