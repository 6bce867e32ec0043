// POST /v1/sandboxes/exec: the quick path of a piped `sbx shell|run NAME -- cmd`, through the sandbox's exec agent.
import { trace } from "../sys/trace";
import type { Hono } from "hono";
import { SbxError } from "../core/errors";
import { printable } from "../core/printable";
import type { SandboxService } from "../sandboxes/service";
import type { Store } from "../store/store";
import { encodeFrame, FrameType } from "../../shims/exec-frames";
import type { ExecAgents } from "./exec-agents";
import { EXEC_FRAMES_TYPE } from "./exec-types";
import type { GuardHost } from "./guard-host";
import type { LimitWatch } from "./limit-watch";
import { ExecAnswerSchema, SandboxExecSchema } from "./protocol";
import { sandboxView } from "./views";

export interface ExecRouteDeps {
  service: SandboxService;
  guards: GuardHost;
  store: Store;
  /** The in-sandbox exec agents; without, the route always answers "no agent". */
  agents?: ExecAgents | undefined;
  /** Notices limits a sandbox runs into; a command that ran into one is told so on its stderr. */
  limits?: LimitWatch | undefined;
}

/** Pure: splits an exec request body into its JSON head and the stdin bytes after it. */
export function splitExecBody(body: Uint8Array): { head: unknown; stdin: Uint8Array } {
  if (body.length < 4) throw new SbxError("usage", "exec request body is too short", { hint: "Send a u32 length, a JSON head, then stdin." });
  const n = new DataView(body.buffer, body.byteOffset, 4).getUint32(0);
  if (n > body.length - 4) throw new SbxError("usage", "exec request head is longer than the body", { hint: "Send a u32 length, a JSON head, then stdin." });
  let head: unknown;
  try {
    head = JSON.parse(new TextDecoder().decode(body.subarray(4, 4 + n)));
  } catch {
    throw new SbxError("usage", "exec request head is not JSON", { hint: "Send a u32 length, a JSON head, then stdin." });
  }
  return { head, stdin: body.subarray(4 + n) };
}

/** The start's notes as stderr frames ahead of the command's own (made printable: they may carry a repo's path). */
function withNotes(notes: readonly string[], body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const head = notes.map((n) => encodeFrame(FrameType.stderr, 0, new TextEncoder().encode(`${printable(n)}\n`)));
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    start(ctl) {
      for (const f of head) ctl.enqueue(f);
    },
    async pull(ctl) {
      const { value, done } = await reader.read();
      if (done) ctl.close();
      else ctl.enqueue(value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}

export function execRoutes(app: Hono, deps: ExecRouteDeps): void {
  const { service: svc, guards, store } = deps;

  // The quick path of a piped `sbx shell|run NAME -- cmd`: the same start as every other (the service's, under the
  // sandbox's lock: guards up, then it runs), then the command through the sandbox's exec agent, its frames streamed
  // back after the start's notes (as stderr). Without an agent the answer says how to run it instead (JSON): in the
  // engine when the kind is a container whose agent has not connected, else not here (the CLI's full path).
  app.post("/v1/sandboxes/exec", async (c) => {
    const { head, stdin } = splitExecBody(new Uint8Array(await c.req.arrayBuffer()));
    const req = SandboxExecSchema.parse(head);
    trace("d exec req");
    const notes: string[] = [];
    const row = await svc.start(req.name, { cwd: req.cwd, repoFlag: req.repoFlag, asUid: req.asUid, foundRepo: req.foundRepo, out: { log: (l) => notes.push(l) } });
    trace("d exec started");
    const [caps, cwd] = await Promise.all([svc.capsOf(row), svc.sessionCwd(row, req.cwd)]);
    const agent = req.agent && caps.execAgent ? await deps.agents?.wait(row.id, 1000) : undefined;
    trace(`d exec agent ${agent ? "yes" : "no"}`);
    if (!agent) return c.json(ExecAnswerSchema.parse({ sandbox: sandboxView(row, svc, guards), cwd, notes, agent: false, engine: caps.execAgent }));
    store.audit({ sandboxId: row.id, kind: "daemon", action: "exec", detail: { argv0: req.argv[0] ?? "", via: "agent" } });
    const watch = deps.limits;
    const ended = watch ? await watch.span(row) : undefined; // the counters as the command starts
    const beforeExit = watch && ended ? async () => watch.notes(row, await ended()) : undefined;
    const env = { ...req.env, ...(await svc.secretEnv(row, undefined, { log: (l) => notes.push(l) })) };
    trace("d exec run");
    const body = agent.run({ argv: req.argv, cwd, env, stdin: req.stdin }, req.stdin ? stdin : undefined, beforeExit ? { beforeExit } : {});
    return new Response(notes.length ? withNotes(notes, body) : body, { headers: { "content-type": EXEC_FRAMES_TYPE } });
  });
}
