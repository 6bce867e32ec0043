// Taking a port a sandbox holds (its loopback proxy port, its DNS stub's) back from another sandbox's guest that bound it.
import { claimPort, type ClaimOptions } from "../sys/port-holders";
import type { GuardContext } from "./guards";

export interface PortClaimOptions {
  /**
   * The sandbox whose guest account has this uid (its name), or null when the uid is no guest of sbx's: a port a
   * sandbox holds is taken back from another sandbox's guest, never from anything else.
   */
  guestOf?: (uid: number) => Promise<string | null>;
}

/** claimPort for a port sandbox `ctx` holds: what it took back, from whom, goes to the audit log and the daemon's log. */
export function claimSandboxPort<T>(ctx: GuardContext, o: PortClaimOptions, c: Pick<ClaimOptions<T>, "proto" | "port" | "what" | "bind">): Promise<T> {
  return claimPort({
    ...c,
    sandbox: ctx.sandbox.name,
    guestOf: o.guestOf ?? (async () => null),
    exec: ctx.exec,
    reclaimed: (detail) => {
      ctx.audit("port.reclaimed", detail);
      ctx.log.warn(`took back ${c.what} from sandbox ${String(detail.heldBy)}'s guest (${String(detail.user)}), which had bound it`, detail);
    },
  });
}

