// The stored shape of a secret bound to hosts (core/bound-secret.ts is what it means): apart, so the CLI's start-up,
// which needs the meaning to check a binding before it asks for a value, does not load zod.
import { z } from "zod";

/** Where a bound secret's value comes from (secrets/sources.ts reads it). */
export const SecretSourceSchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("vault") }).strict(),
  z.object({ kind: z.literal("command"), command: z.string().min(1), ttlMs: z.number().int().positive() }).strict(),
  z.object({ kind: z.literal("ref"), ref: z.string().min(1), ttlMs: z.number().int().positive() }).strict(),
]);

/** A binding as stored (`sbx secret set NAME --host …`): everything but the value and the placeholders. */
export const BindingSpecSchema = z
  .object({
    hosts: z.array(z.string().min(1)).min(1),
    rules: z.array(z.object({ methods: z.array(z.string().regex(/^[A-Z]+$/)).min(1), path: z.string().startsWith("/") }).strict()).min(1),
    header: z.object({ name: z.string().regex(/^[A-Za-z0-9-]+$/), template: z.string().includes("{}") }).strict().nullable(),
    /** The variable inside that holds the placeholder (default: the secret's name); null with `npmrc` alone. */
    env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/).nullable(),
    /** Write the registry's `_authToken` line to the sandbox's npm config instead of (or beside) a variable. */
    npmrc: z.boolean(),
    inBody: z.boolean(),
    source: SecretSourceSchema,
  })
  .strict();
export type BindingSpec = z.infer<typeof BindingSpecSchema>;
