// The stored and wire shape of a rule that sees requests (core/rules.ts is what it means): apart, so what only judges
// rules (the proxy's decision, the audit export the CLI loads) does not load zod.
import { z } from "zod";

export const RuleSpecSchema = z.object({
  effect: z.enum(["allow", "deny"]),
  /** An allowlist pattern (exact name, `*.suffix`, address), in canonical form, with `:port` when it names one. */
  host: z.string().min(1).max(300),
  /** Upper case; null: every method. */
  methods: z.array(z.string().regex(/^[A-Z]{1,20}$/)).min(1).max(16).nullable(),
  /** Canonical path patterns (`*` within a segment, a last `**` for any depth); null: every path. */
  paths: z.array(z.string().min(1).max(512)).min(1).max(32).nullable(),
});
export type RuleSpec = z.infer<typeof RuleSpecSchema>;
