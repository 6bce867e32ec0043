// A sandbox's id, the part of its stored identity every kind shares (its id and its dir), and the one spec builder.
import { z } from "zod";
import type { Limits } from "../core/limits";
import type { Sandbox } from "../core/schemas";
import type { HostUser, SandboxOptions, SandboxSpec } from "../core/spec";
import { sandboxSockets, sha256Hex, SOCKET_ID_LENGTH, type Paths } from "../sys/paths";
import { sandboxEnv, type EnvPlace, type SandboxEnvOptions } from "./env";

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

/** A sandbox's limits as its identity keeps them (decided at create, changed by `sbx limits`). */
export const LimitsSchema = z.object({
  memory: z.number().int().positive().nullable(),
  cpus: z.number().positive().nullable(),
  pids: z.number().int().positive().nullable(),
});

/** The id and dir a row was made with, or null when its identity is unreadable (prune then treats its dir as orphaned). */
export function baseIdentity(row: Sandbox): { id: string; dir: string } | null {
  const r = BaseIdentitySchema.safeParse(row.identity);
  return r.success ? r.data : null;
}

/** What a kind says of one of its sandboxes; the rest of the spec (socket dir, environment) is decided here. */
export interface SpecParts {
  id: string;
  name: string;
  repo: string;
  dir: string;
  hostUser: HostUser;
  /** Where sbx's pieces are as the guest sees them; the bridge socket is the sandbox's own on the host unless said. */
  place: Omit<EnvPlace, "bridgeSocket"> & { bridgeSocket?: string };
  envOptions?: SandboxEnvOptions;
  overlays?: string[];
  options: SandboxOptions;
  limits?: Limits | undefined;
}

/** Pure: the one builder of a SandboxSpec, whatever the kind (each driver supplies its parts from its identity). */
export function sandboxSpec(paths: Pick<Paths, "runtimeDir">, p: SpecParts): SandboxSpec {
  const sockets = sandboxSockets(paths as Paths, p.id);
  return {
    id: p.id,
    name: p.name,
    repo: p.repo,
    dir: p.dir,
    hostUser: p.hostUser,
    sockets,
    env: sandboxEnv(p.name, { bridgeSocket: sockets.bridge, ...p.place }, p.envOptions),
    overlays: p.overlays ?? [],
    options: p.options,
    ...(p.limits ? { limits: p.limits } : {}),
  };
}
