// The egress proxy as a guard: one proxy per sandbox on its own socket, policy read from the store per request, decisions audited.
import { existsSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { startEgressProxy, type Resolver } from "../proxy/egress-proxy";
import { createDecisionSink, policyFor, type DecisionSinkOptions } from "../proxy/allowlist-service";
import type { GuardContext, GuardHandle, SandboxGuard } from "./guards";

export interface ProxyGuardOptions {
  /** DNS seam (tests); the system resolver otherwise. */
  resolve?: Resolver;
  /** Desktop/terminal notification of a new pending approval. */
  notify?: DecisionSinkOptions["notify"];
  /** Requests addressed to the proxy itself (the LLM key proxy's `/llm/<provider>` paths), per sandbox. */
  originHandler?: (ctx: GuardContext) => (req: IncomingMessage, res: ServerResponse) => void;
}

export function proxyGuard(opts: ProxyGuardOptions = {}): SandboxGuard {
  return {
    name: "proxy",
    async start(ctx): Promise<GuardHandle> {
      const sink = createDecisionSink(ctx.store, opts.notify ? { notify: opts.notify } : {});
      const sandboxId = ctx.sandbox.id;
      let proxy;
      try {
        proxy = await startEgressProxy({
          socketPath: ctx.sockets.proxy,
          sandbox: { id: sandboxId, name: ctx.sandbox.name },
          // Read per request: `sbx allow` takes effect on the next request, with no restart.
          policy: () => policyFor(ctx.store, sandboxId),
          onDecision: sink.onDecision,
          ...(opts.resolve ? { resolve: opts.resolve } : {}),
          ...(opts.originHandler ? { originHandler: opts.originHandler(ctx) } : {}),
        });
      } catch (e) {
        sink.close();
        throw e;
      }
      const p = proxy;
      return {
        health: () =>
          existsSync(p.socketPath)
            ? { ok: true, detail: `${p.active()} open connection(s)` }
            : { ok: false, detail: `socket ${p.socketPath} is gone` },
        async stop() {
          await p.close();
          sink.flush();
          sink.close();
        },
      };
    },
  };
}
