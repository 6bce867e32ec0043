// The daemon as the sandbox service's host: the guards' bookkeeping, the sessions and exec agents, the port forwards.
import type { Sandbox } from "../core/schemas";
import type { SandboxHost } from "../sandboxes/host";
import type { ExecAgents } from "./exec-agents";
import type { GuardHost } from "./guard-host";
import type { PortForwards } from "./port-forwards";
import type { SessionManager } from "./sessions";

export function daemonHost(guards: GuardHost, sessions: SessionManager, agents?: ExecAgents, forwards?: PortForwards): SandboxHost {
  return {
    guardsUp: (row) => guards.isUp(row),
    raiseGuards: (row, spec, driver, hostWork) => guards.up(row, spec, driver, hostWork),
    started: (row) => guards.started(row),
    guarded: (row) => guards.view(row).guarded,
    lowerGuards: (row) => guards.down(row),
    release: (row) => guards.release(row),
    sessions: (row: Sandbox) => sessions.liveFor(row.id) + (agents?.get(row.id)?.running ?? 0),
    endSessions: (row, why) => sessions.endFor(row.id, why) + (agents?.get(row.id)?.endAll(why) ?? 0),
    sweepSocketDirs: (keep) => guards.sweepSocketDirs(keep),
    async ports(row, list) {
      if (!forwards?.live(row.id)) return null;
      return forwards.apply(row.id, list);
    },
    portStates: (row) => (forwards?.live(row.id) ? forwards.states(row.id) : null),
  };
}
