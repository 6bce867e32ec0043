// The daemon as the sandbox service's supervisor: guards up before a sandbox runs, sessions ended before it stops.
import { SbxError } from "../core/errors";
import type { Sandbox } from "../core/schemas";
import type { Supervisor } from "../sandboxes/service";
import type { Controller } from "./controller";
import type { ExecAgents } from "./exec-agents";
import type { SessionManager } from "./sessions";
import type { PortForwards } from "./port-forwards";

export function controllerSupervisor(controller: Controller, sessions: SessionManager, agents?: ExecAgents, forwards?: PortForwards): Supervisor {
  const ref = (row: Sandbox) => ({ name: row.name, repo: row.repo });
  return {
    async start(row) {
      const view = await controller.start(ref(row));
      if (!view.guarded) {
        throw new SbxError("unavailable", `sandbox '${row.name}' started but its guards are not all up`, {
          hint: "See `sbx status` and the daemon log; nothing runs in a sandbox whose proxy and bridge are down.",
        });
      }
    },
    sessions(row) {
      return sessions.liveFor(row.id) + (agents?.get(row.id)?.running ?? 0);
    },
    async stop(row, why) {
      const was = controller.view(row).phase === "running";
      const ended = sessions.endFor(row.id, why) + (agents?.get(row.id)?.endAll(why) ?? 0);
      await controller.stop(ref(row));
      return { running: was, sessions: ended };
    },
    async ports(row, list) {
      if (!forwards?.live(row.id)) return null;
      return forwards.apply(row.id, list);
    },
    portStates(row) {
      return forwards?.live(row.id) ? forwards.states(row.id) : null;
    },
    async release(row, why) {
      sessions.endFor(row.id, why);
      agents?.get(row.id)?.endAll(why);
      await controller.release(ref(row));
    },
  };
}
