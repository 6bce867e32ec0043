// `sbx run AGENT` over the control API (/v1/lifecycle/agent, answered in lines as every lifecycle verb is) and the
// agents it knows (/v1/agents).
import type { Hono } from "hono";
import type { AgentService } from "../agents/service";
import { SbxError } from "../core/errors";
import type { Logger } from "../sys/log";
import { jsonBody } from "./http";
import { AgentListSchema, LifecycleAgentSchema, LifecycleResults } from "./protocol";
import { lifecycleLines, newSandboxOptions, where } from "./routes-lifecycle";

export interface AgentRouteDeps {
  log: Logger;
  /** `sbx run AGENT`; without, both routes answer not_available. */
  agentRuns?: AgentService | undefined;
}

export function agentRoutes(app: Hono, deps: AgentRouteDeps): void {
  const { log } = deps;

  app.get("/v1/agents", async (c) => {
    const runs = deps.agentRuns;
    if (!runs) throw new SbxError("not_available", "this daemon runs no agents", { hint: "Restart the daemon (`sbx daemon`); see its log." });
    return c.json(AgentListSchema.parse({ agents: await runs.list() }));
  });

  app.post("/v1/lifecycle/agent", async (c) => {
    const req = LifecycleAgentSchema.parse(await jsonBody(c));
    const runs = deps.agentRuns;
    if (!runs) throw new SbxError("not_available", "this daemon runs no agents", { hint: "Restart the daemon (`sbx daemon`); see its log." });
    return lifecycleLines(log, c.req.raw, async (out, gone) => {
      const r = await runs.run({
        ...where(req, out),
        agent: req.agent,
        ...(req.name ? { name: req.name } : {}),
        ...(req.version ? { version: req.version } : {}),
        unattended: req.unattended,
        ...newSandboxOptions(req),
        signal: gone,
      });
      return LifecycleResults.agent.parse(r);
    });
  });

}
