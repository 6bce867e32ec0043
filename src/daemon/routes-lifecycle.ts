// The sandbox service's verbs over the control API (/v1/lifecycle/*, /v1/reconcile; `sbx run AGENT` is routes-agents.ts): every verb answers with
// JSON lines as the work goes (notes, build output, then the result or the error).
import type { Hono } from "hono";
import type { Output, SandboxService } from "../sandboxes/service";
import type { Logger } from "../sys/log";
import type { Paths } from "../sys/paths";
import { adoptStagedClone } from "../workspace/staged-clone";
import { errorBody, jsonBody } from "./http";
import {
  LIFECYCLE_LINES_TYPE,
  LifecycleBridgeSchema,
  LifecycleCreateSchema,
  type LifecycleAgentSchema,
  LifecycleLimitsSchema,
  LifecycleListSchema,
  LifecycleNamedSchema,
  LifecyclePortSchema,
  LifecyclePruneSchema,
  LifecyclePublishSchema,
  LifecycleResults,
  LifecycleServicesSchema,
  LifecycleSessionSchema,
  type LifecycleLine,
  type SandboxView,
} from "./protocol";

export interface LifecycleRouteDeps {
  service: SandboxService;
  log: Logger;
  /** Every sandbox as the daemon shows it (its guards up or not, and why). */
  views: () => SandboxView[];
  /** Where clones staged by the CLI live (`<cache>/sandbox-staging`). */
  paths?: Pick<Paths, "cacheDir"> | undefined;
}

/**
 * Runs one service verb and answers with its lines as they come: notes and build output, then the result or the error.
 * The verb runs to its end even when the caller goes away: a create or rm is never left half-done by a Ctrl-C.
 */
export function lifecycleLines(log: Logger, req: Request, run: (out: Output, gone: AbortSignal) => Promise<unknown>): Response {
  const enc = new TextEncoder();
  // The caller is gone when its request is aborted or it stops reading (its end of the socket closed).
  const gone = new AbortController();
  req.signal.addEventListener("abort", () => gone.abort(), { once: true });
  const stream = new ReadableStream<Uint8Array>({
    async start(ctl) {
      let open = true;
      const send = (l: LifecycleLine) => {
        if (!open) return;
        try {
          ctl.enqueue(enc.encode(`${JSON.stringify(l)}\n`));
        } catch {
          open = false; // the caller is gone; the work goes on
        }
      };
      try {
        const result = await run({ log: (line) => send({ t: "log", line }), progress: (chunk) => send({ t: "progress", chunk }) }, gone.signal);
        send({ t: "done", result });
      } catch (e) {
        const { status, body } = errorBody(e);
        if (status >= 500) log.error("lifecycle request failed", { error: body.error, message: body.message });
        send({ t: "error", body });
      }
      if (open) {
        try {
          ctl.close();
        } catch {
          /* cancelled meanwhile */
        }
      }
    },
    cancel() {
      gone.abort();
    },
  });
  return new Response(stream, { headers: { "content-type": LIFECYCLE_LINES_TYPE } });
}

/** Where the caller stands, and where this verb's lines go: what every verb takes of its request. */
export function where(w: { cwd: string; repoFlag?: string | undefined; asUid?: number | undefined }, out: Output): { cwd: string; repoFlag: string | undefined; asUid: number | undefined; out: Output } {
  return { cwd: w.cwd, repoFlag: w.repoFlag, asUid: w.asUid, out };
}

/** The options of a new sandbox as a create or `sbx run AGENT` request carries them, for the service. */
export function newSandboxOptions(req: ReturnType<typeof LifecycleCreateSchema.parse> | ReturnType<typeof LifecycleAgentSchema.parse>) {
  return {
    ...(req.backend ? { backend: req.backend } : {}),
    rebuild: req.rebuild,
    overlays: req.overlays,
    ...(req.claudeAuth ? { claudeAuth: req.claudeAuth } : {}),
    ...(req.shell ? { shell: req.shell } : {}),
    limits: req.limits,
    exposeCredentials: req.exposeCredentials,
    ...(req.image ? { image: req.image } : {}),
    ...(req.withChanges ? { withChanges: true } : {}),
    ...(req.ports.length ? { ports: req.ports } : {}),
    ...(req.services.length ? { services: req.services } : {}),
    ...(Object.keys(req.serviceEnv).length ? { serviceEnv: req.serviceEnv } : {}),
    ...(req.pull ? { pull: true } : {}),
    ...(req.allowWeaker ? { allowWeaker: true } : {}),
    ...(req.transparent === false ? { transparent: false } : {}),
    ...(req.policy ? { policy: req.policy } : {}),
  };
}

export function lifecycleRoutes(app: Hono, deps: LifecycleRouteDeps): void {
  const { log, views } = deps;
  const svc = deps.service;

  app.post("/v1/reconcile", async (c) => c.json(await svc.reconcile()));

  // ── the sandbox service's verbs: every answer is lines (lifecycleLines) ──

  app.post("/v1/lifecycle/create", async (c) => {
    const req = LifecycleCreateSchema.parse(await jsonBody(c));
    const staged = req.staged ? adoptStagedClone(deps.paths ?? { cacheDir: "/nonexistent" }, req.staged) : undefined;
    return lifecycleLines(log, c.req.raw, async (out, gone) => {
      const r = await svc.create({
        ...where(req, out),
        name: req.name,
        ...newSandboxOptions(req),
        ifExists: req.ifExists,
        ...(staged ? { staged } : {}),
        signal: gone,
      });
      return LifecycleResults.create.parse(r);
    });
  });

  app.post("/v1/lifecycle/start", async (c) => {
    const req = LifecycleNamedSchema.parse(await jsonBody(c));
    return lifecycleLines(log, c.req.raw, async (out) => {
      const row = await svc.start(req.name, where(req, out));
      return LifecycleResults.start.parse({ sandbox: row, cwd: await svc.sessionCwd(row, req.cwd) });
    });
  });

  app.post("/v1/lifecycle/session", async (c) => {
    const req = LifecycleSessionSchema.parse(await jsonBody(c));
    return lifecycleLines(log, c.req.raw, async (out) => {
      const argv = await svc.session({ ...where(req, out), name: req.name, argv: req.argv, tty: false, stdin: req.stdin, env: req.env });
      return LifecycleResults.session.parse({ argv });
    });
  });

  app.post("/v1/lifecycle/stop", async (c) => {
    const req = LifecycleNamedSchema.parse(await jsonBody(c));
    return lifecycleLines(log, c.req.raw, async (out) => LifecycleResults.stop.parse(await svc.stop(req.name, { ...where(req, out), ifSessions: req.ifSessions })));
  });

  app.post("/v1/lifecycle/rebuild", async (c) => {
    const req = LifecycleNamedSchema.parse(await jsonBody(c));
    return lifecycleLines(log, c.req.raw, async (out) => LifecycleResults.rebuild.parse(await svc.rebuild(req.name, { ...where(req, out), ifSessions: req.ifSessions })));
  });

  app.post("/v1/lifecycle/rm", async (c) => {
    const req = LifecycleNamedSchema.parse(await jsonBody(c));
    return lifecycleLines(log, c.req.raw, async (out) => LifecycleResults.rm.parse(await svc.rm(req.name, { ...where(req, out), force: req.force, ifSessions: req.ifSessions })));
  });

  app.post("/v1/lifecycle/limits", async (c) => {
    const req = LifecycleLimitsSchema.parse(await jsonBody(c));
    return lifecycleLines(log, c.req.raw, async (out) => LifecycleResults.limits.parse(await svc.limits(req.name, { ...where(req, out), set: req.set })));
  });

  app.post("/v1/lifecycle/bridge", async (c) => {
    const req = LifecycleBridgeSchema.parse(await jsonBody(c));
    return lifecycleLines(log, c.req.raw, async (out) =>
      LifecycleResults.bridge.parse(await svc.bridge(req.name, { ...where(req, out), allow: req.allow, disallow: req.disallow, protect: req.protect, unprotect: req.unprotect, addRepos: req.addRepos, dropRepos: req.dropRepos, pushTo: req.pushTo, unpushTo: req.unpushTo, ...(req.prefix !== undefined ? { prefix: req.prefix } : {}), ...(req.pushRemote !== undefined ? { pushRemote: req.pushRemote } : {}) })),
    );
  });

  app.post("/v1/lifecycle/publish", async (c) => {
    const req = LifecyclePublishSchema.parse(await jsonBody(c));
    return lifecycleLines(log, c.req.raw, async (out) => LifecycleResults.publish.parse(await svc.publish(req.name, { ...where(req, out), add: req.add, remove: req.remove })));
  });

  app.post("/v1/lifecycle/port", async (c) => {
    const req = LifecyclePortSchema.parse(await jsonBody(c));
    return lifecycleLines(log, c.req.raw, async (out) => LifecycleResults.port.parse(await svc.ports(req.name, { ...where(req, out), add: req.add, remove: req.remove })));
  });

  app.post("/v1/lifecycle/services", async (c) => {
    const req = LifecycleServicesSchema.parse(await jsonBody(c));
    return lifecycleLines(log, c.req.raw, async (out) =>
      LifecycleResults.services.parse(await svc.services(req.name, { ...where(req, out), action: req.action, ...(req.service ? { service: req.service } : {}), tail: req.tail })),
    );
  });

  app.post("/v1/lifecycle/prune", async (c) => {
    const req = LifecyclePruneSchema.parse(await jsonBody(c));
    return lifecycleLines(log, c.req.raw, async (out) => LifecycleResults.prune.parse(await svc.prune({ dryRun: req.dryRun, out })));
  });

  app.post("/v1/lifecycle/list", async (c) => {
    const req = LifecycleListSchema.parse(await jsonBody(c));
    return lifecycleLines(log, c.req.raw, async () => {
      const items = await svc.list({ all: req.all, ...(req.here ? { repo: await svc.repoOf(req.here) } : {}) });
      // The daemon's side of each: whether its guards are up, and why not when they failed to come up.
      const seen = new Map(views().map((v) => [`${v.repo}\0${v.name}`, v]));
      return LifecycleResults.list.parse({
        sandboxes: items.map((i) => {
          const v = seen.get(`${i.repo}\0${i.name}`);
          return { ...i, guarded: v?.guarded ?? false, ...(v?.error ? { guardError: v.error } : {}) };
        }),
      });
    });
  });
}
