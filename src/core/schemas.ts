// Domain shapes shared by store, daemon and CLI; types come from the zod schemas.
import { z } from "zod";

export const BackendKindSchema = z.enum(["docker", "macos", "linux-user", "fake"]);
export type BackendKind = z.infer<typeof BackendKindSchema>;

export const SandboxStateSchema = z.enum(["active", "stopped", "deleted"]);
export type SandboxState = z.infer<typeof SandboxStateSchema>;

const jsonObject = z
  .string()
  .transform((s, ctx) => {
    try {
      const v: unknown = JSON.parse(s);
      if (v !== null && typeof v === "object" && !Array.isArray(v)) return v as Record<string, unknown>;
    } catch {
      /* fall through */
    }
    ctx.addIssue({ code: "custom", message: "expected a JSON object" });
    return z.NEVER;
  });

export const SandboxSchema = z
  .object({
    id: z.number().int(),
    name: z.string(),
    repo: z.string(),
    backend: BackendKindSchema,
    state: SandboxStateSchema,
    identity: jsonObject,
    created_at: z.number(),
    updated_at: z.number(),
    last_used_at: z.number().nullable(),
  })
  .transform((r) => ({
    id: r.id,
    name: r.name,
    repo: r.repo,
    backend: r.backend,
    state: r.state,
    identity: r.identity,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    lastUsedAt: r.last_used_at,
  }));
export type Sandbox = z.infer<typeof SandboxSchema>;

export const AllowEntrySchema = z
  .object({
    id: z.number().int(),
    sandbox_id: z.number().int().nullable(),
    pattern: z.string(),
    added_by: z.string(),
    added_at: z.number(),
    /** `--for`: when it stops allowing (null: for good). */
    expires_at: z.number().nullable().default(null),
    /** `--once`: one connection, then gone. */
    once: z.number().default(0),
  })
  .transform((r) => ({ id: r.id, sandboxId: r.sandbox_id, pattern: r.pattern, addedBy: r.added_by, addedAt: r.added_at, expiresAt: r.expires_at, once: r.once === 1 }));
export type AllowEntry = z.infer<typeof AllowEntrySchema>;

export const ApprovalStateSchema = z.enum(["pending", "allowed", "denied"]);

export const ApprovalSchema = z
  .object({
    id: z.number().int(),
    sandbox_id: z.number().int(),
    kind: z.enum(["egress", "bridge", "budget"]).default("egress"),
    host: z.string(),
    port: z.number().int(),
    reason: z.string(),
    state: ApprovalStateSchema,
    count: z.number().int(),
    first_seen: z.number(),
    last_seen: z.number(),
    decided_by: z.string().nullable(),
    decided_at: z.number().nullable(),
  })
  .transform((r) => ({
    id: r.id,
    sandboxId: r.sandbox_id,
    /** egress: `host` and `port` were refused. bridge: `host` is the refused operation's subject (bridgeSubject), port 0. */
    kind: r.kind,
    host: r.host,
    port: r.port,
    reason: r.reason,
    state: r.state,
    count: r.count,
    firstSeen: r.first_seen,
    lastSeen: r.last_seen,
    decidedBy: r.decided_by,
    decidedAt: r.decided_at,
  }));
export type Approval = z.infer<typeof ApprovalSchema>;

export const AuditEntrySchema = z
  .object({
    id: z.number().int(),
    ts: z.number(),
    sandbox_id: z.number().int().nullable(),
    kind: z.string(),
    action: z.string(),
    detail: jsonObject,
  })
  .transform((r) => ({ id: r.id, ts: r.ts, sandboxId: r.sandbox_id, kind: r.kind, action: r.action, detail: r.detail }));
export type AuditEntry = z.infer<typeof AuditEntrySchema>;
