// A sandbox's id and the part of its stored identity every kind shares (its id and its dir).
import { z } from "zod";
import type { Sandbox } from "../core/schemas";
import { sha256Hex, SOCKET_ID_LENGTH } from "../sys/paths";

/**
 * Pure: a sandbox's id (container `sbx-<id>`, account, volume and socket-dir names), scoped to the state root: two
 * state roots (two XDG setups of one user, or a test's own) with the same repo and sandbox name get different ids, so
 * neither can start, stop or remove the other's.
 */
export function sandboxId(sandboxRoot: string, repo: string, name: string): string {
  return sha256Hex(`${sandboxRoot}\0${repo}\0${name}`).slice(0, SOCKET_ID_LENGTH);
}

/** What every driver's identity holds (each adds its own fields). */
export const BaseIdentitySchema = z.object({ id: z.string().min(1), dir: z.string().startsWith("/") });

/** The id and dir a row was made with, or null when its identity is unreadable (prune then treats its dir as orphaned). */
export function baseIdentity(row: Sandbox): { id: string; dir: string } | null {
  const r = BaseIdentitySchema.safeParse(row.identity);
  return r.success ? r.data : null;
}
