// A sandbox as the daemon shows it (`sbx status`, the dashboard): its row, what the service last saw of it, and its guards.
import type { Sandbox } from "../core/schemas";
import type { SandboxService } from "../sandboxes/service";
import type { GuardHost } from "./guard-host";
import type { SandboxView } from "./protocol";

/** A sandbox as `sbx status` and the dashboard see it: its row, what the service last saw of it, and its guards. */
export function sandboxView(sb: Sandbox, service: Pick<SandboxService, "observed">, guards: Pick<GuardHost, "view">): SandboxView {
  const seen = service.observed(sb);
  const g = guards.view(sb);
  return {
    id: sb.id,
    sid: seen.sid,
    name: sb.name,
    repo: sb.repo,
    backend: sb.backend,
    state: sb.state,
    phase: seen.phase,
    guarded: g.guarded,
    guards: g.guards,
    ...(g.error ? { error: g.error } : {}),
    ...(seen.creating ? { creating: seen.creating } : {}),
    ...(seen.services ? { services: seen.services } : {}),
  };
}

