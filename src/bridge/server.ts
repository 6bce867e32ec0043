// The command bridge: a hono app on one sandbox's own unix socket that runs vetted git/gh network operations on the host.
import { Hono } from "hono";
import { z } from "zod";
import { chmodSync, closeSync, constants as fsConstants, existsSync, fstatSync, mkdirSync, mkdtempSync, openSync, readlinkSync, readSync, realpathSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { SbxError } from "../core/errors";
import { hostSecretPatterns, redact } from "../core/redact";
import { SECRET_PATTERNS, scanText } from "../core/secrets";
import type { Exec, ExecResult } from "../sys/exec";
import { NO_IDLE_TIMEOUT } from "../sys/serve";
import { decideGh, decideGit, makePathChecker, isSafeRefName, type GitPlan, type GhPlan, type PolicyContext, type PolicyOptions } from "./policy";
import { branchPrefix, isCiPath, isProtectedBranch, mayPushTo, NO_BRIDGE_SETTINGS, type BridgeAllow, type BridgeSettings, type BridgeSubject } from "../core/bridge-settings";
import {
  changedPaths,
  closeVerdict,
  createdMarker,
  suggestedTokenName,
  defaultBranchOf,
  ensureGate,
  maintainGate,
  hookRefsReader,
  isAncestor,
  type HookRef,
  gatePaths,
  giveVerdict,
  hostRemotes,
  indexPack,
  knownTips,
  listRefs,
  makeBundle,
  openVerdict,
  present,
  readRef,
  remoteGit,
  scanNew,
  scratchDir,
  tokenFor,
  updateRefs,
  type Gate,
  type GateSsh,
  type Verdict,
} from "./gate";
import { formatGateFindings } from "./scan";
import { BRIDGE_MAX_BODY_FILE, BRIDGE_MAX_HEADER, BRIDGE_MAX_PACK, BRIDGE_MAX_REQUESTS, cutText } from "../core/bounds";

const Sha = z.string().regex(/^[0-9a-f]{40}(?:[0-9a-f]{24})?$/);

/** The first line of a request body; for a push, the pack follows the newline. */
export const BridgeRequest = z.object({
  tool: z.enum(["git", "gh"]),
  args: z.array(z.string().max(4096)).max(256),
  cwd: z.string().min(1).max(4096),
  /** The sandbox's current branch, when on one (default push, gh pr create --head). */
  branch: z.string().max(255).optional(),
  /** Push: what each source the sandbox named resolves to in its clone. */
  resolved: z.record(z.string().max(255), z.object({ sha: Sha, ref: z.string().max(255).optional() })).optional(),
  /** Fetch: object ids the sandbox has (its remote-tracking tips), so only the rest is sent. */
  haves: z.array(Sha).max(20000).optional(),
});
export type BridgeRequest = z.infer<typeof BridgeRequest>;

/** Frames of the newline-delimited JSON response. */
export type Frame =
  | { t: "out"; d: string }
  | { t: "err"; d: string }
  | { t: "refs"; remote: string; url: string; refs: Record<string, string>; prune: boolean }
  | { t: "bundle"; d: string }
  | { t: "pushed"; remote: string; updates: Array<{ dst: string; sha: string | null }> }
  | { t: "exit"; code: number };

export interface AuditEvent {
  sandbox: string;
  /** `bridge`: a request refused before its header was read (too many at once). */
  tool: "git" | "gh" | "bridge";
  args: string[];
  cwd: string;
  decision: "allowed" | "refused" | "failed";
  reason?: string;
  exitCode?: number;
  durationMs: number;
  /** The pending approval a refusal was recorded as (the first, when several), and how often it has been asked. */
  approval?: { id: number; count: number };
}

export interface BridgeSandbox {
  id: string;
  name: string;
  /** The sandbox's clone, as a host path. */
  workspace: string;
  /** The same workspace as the sandbox sees it (Docker: the host repo's path). Defaults to `workspace`. */
  workspaceView?: string;
  /** The host repo the sandbox was made from: host-owned, the only source of remote URLs. */
  repo: string;
}

export interface BridgeDeps {
  sandbox: BridgeSandbox;
  gateDir: string;
  /** Host secrets by name (GH_TOKEN, GIT_TOKEN, …), read at request time so rotation needs no restart. */
  secrets: () => Record<string, string>;
  audit: (e: AuditEvent) => void;
  exec: Exec;
  /** PATH for host git/gh (default: /usr/local/bin:/usr/bin:/bin). */
  path?: string;
  /** The host's CA settings for gh (SSL_CERT_FILE, SSL_CERT_DIR): a private CA in front of a forge works as on the host. */
  tlsEnv?: Record<string, string>;
  /** How the bridge's git reaches the host repo's ssh remotes (the host's ssh command and agent); none: ssh is off. */
  ssh?: GateSsh;
  /** This sandbox's switches (`sbx bridge NAME --allow …`), read at request time; none: the defaults. */
  settings?: () => BridgeSettings;
  /**
   * Records what policy refused as a pending approval (the approvals queue egress uses: `sbx approvals`, the dashboard);
   * its id, or null where there is no queue. Allowing it changes this sandbox's settings for its next request.
   */
  ask?: (subject: BridgeSubject, reason: string) => { id: number; count: number } | null;
  policy?: Partial<PolicyOptions>;
  /** Test seam: called at points of a push where a failure must leave nothing that goes out. */
  faults?: PushFaults;
  /** Benchmark seam: told when each stage of a request starts or ends (bench/bridge-push.bench.ts TRACE=1). */
  trace?: (stage: string) => void;
}

/** Where tests make a push fail (or the bridge die) to prove it fails closed. */
export interface PushFaults {
  /** Right after the gate's `git push` started, before the scan: its hook has not opened the FIFO yet. */
  afterPushStarted?: (verdict: Verdict) => void | Promise<void>;
}

const BUNDLE_CHUNK = 48 * 1024;
const DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin";
const MAX_REQUEST = BRIDGE_MAX_PACK;

function realOrNull(p: string): string | null {
  try {
    return realpathSync(p);
  } catch {
    return null;
  }
}

/**
 * The next push's verdict FIFO, made ahead (after the previous push, or when the bridge starts), so no
 * mkfifo runs while a push waits.
 */
export class SpareVerdict {
  private next: Promise<Verdict> | undefined;
  constructor(private readonly open: () => Promise<Verdict>) {}
  fill(): void {
    if (this.next) return;
    const v = this.open();
    this.next = v;
    v.catch(() => {
      if (this.next === v) this.next = undefined;
    });
  }
  take(): Promise<Verdict> {
    const v = this.next ?? this.open();
    this.next = undefined;
    return v;
  }
  async dispose(): Promise<void> {
    const v = this.next;
    this.next = undefined;
    const open = await v?.catch(() => undefined);
    if (open) closeVerdict(open);
  }
}

/** The hono app: testable with `app.request()` without a socket. */
export function createBridgeApp(deps: BridgeDeps, ready?: Gate, spare?: SpareVerdict): Hono {
  const app = new Hono();
  const path = deps.path ?? DEFAULT_PATH;
  let gateP: Promise<Gate> | undefined = ready ? Promise.resolve(ready) : undefined;
  const gate = () => (gateP ??= ensureGate(deps.exec, deps.gateDir, deps.sandbox.repo, path, deps.tlsEnv, deps.ssh).catch((e) => {
    gateP = undefined;
    throw e;
  }));
  // One operation at a time per sandbox: the gate's refs are shared state.
  let queue: Promise<unknown> = Promise.resolve();
  // Requests under way (reading their header, waiting their turn, running): at most BRIDGE_MAX_REQUESTS, counted before
  // a byte of the body is read, so a sandbox cannot make the bridge hold ever more connections, headers and jobs.
  let underWay = 0;

  app.get("/health", (c) => c.json({ ok: true, sandbox: deps.sandbox.name }));

  app.post("/v1/run", async (c) => {
    if (underWay >= BRIDGE_MAX_REQUESTS) {
      const reason = `${BRIDGE_MAX_REQUESTS} bridge requests of this sandbox are under way at once; one more is refused`;
      deps.audit({ sandbox: deps.sandbox.id, tool: "bridge", args: [], cwd: "", decision: "refused", reason, exitCode: 75, durationMs: 0 });
      void c.req.raw.body?.cancel().catch(() => undefined);
      return c.json(wire("busy", reason, "git and gh commands of a sandbox go through the bridge one at a time: wait for those under way to finish, then run it again."), 429);
    }
    underWay++;
    let handedOver = false;
    try {
      const res = await run(c.req.raw.body);
      handedOver = res.status === 200;
      return res;
    } finally {
      if (!handedOver) underWay--;
    }
  });

  /** One request within the bound; a 200's stream gives its place back when it ends. */
  async function run(body: ReadableStream<Uint8Array> | null): Promise<Response> {
    const json = (v: unknown, status: number) => new Response(JSON.stringify(v), { status, headers: { "content-type": "application/json" } });
    // The header line is read first, so the policy and the ref reads start while the pack still arrives.
    if (!body) return json(wire("usage", "empty bridge request", "Use the sbx git/gh shims; they speak this protocol."), 400);
    deps.trace?.("request in");
    let split: Awaited<ReturnType<typeof splitBody>>;
    try {
      split = await splitBody(body);
    } catch (e) {
      return json(wire("usage", `the request ended early (${cutText((e as Error).message, 200)})`, "Use the sbx git/gh shims; they speak this protocol."), 400);
    }
    deps.trace?.("header read");
    if ("error" in split) return json(wire("usage", split.error, "Use the sbx git/gh shims; they speak this protocol."), split.status);
    const { head, pack } = split;
    let req: BridgeRequest;
    try {
      req = BridgeRequest.parse(JSON.parse(head));
    } catch (e) {
      return json(wire("usage", `bad bridge request: ${(e as Error).message.slice(0, 300)}`, "Use the sbx git/gh shims; they speak this protocol."), 400);
    }
    const stream = new ReadableStream<Uint8Array>({
      start: (controller) => {
        const enc = new TextEncoder();
        const known = () => Object.values(deps.secrets()).filter((v) => typeof v === "string");
        const send = (f: Frame) => {
          const g = f.t === "out" || f.t === "err" ? { ...f, d: redact(f.d, known()) } : f;
          try {
            controller.enqueue(enc.encode(JSON.stringify(g) + "\n"));
          } catch {
            // The caller went away (or stopped reading after "exit"); the operation still finishes.
          }
        };
        const started = Date.now();
        const job = queue.then(async () => {
          let after: (() => Promise<void>) | undefined;
          try {
            const { after: a, ...r } = await handle(deps, gate, req, pack, send, spare);
            after = a;
            deps.audit({ sandbox: deps.sandbox.id, tool: req.tool, args: req.args, cwd: req.cwd, durationMs: Date.now() - started, ...r });
            send({ t: "exit", code: r.exitCode });
          } catch (e) {
            const msg = e instanceof Error ? e.message : String(e);
            deps.audit({ sandbox: deps.sandbox.id, tool: req.tool, args: req.args, cwd: req.cwd, decision: "failed", reason: redact(msg, known()), exitCode: 1, durationMs: Date.now() - started });
            send({ t: "err", d: `sbx bridge: ${msg}\n` });
            send({ t: "exit", code: 1 });
          }
          // Bookkeeping the caller need not wait for (the shim stops reading at "exit"), but the next
          // operation on this gate must: it stays inside the queue.
          if (after) await after().catch(() => undefined);
          if (isPush(req)) {
            spare?.fill();
            await gate().then(maintainGate).catch(() => undefined);
          }
        });
        queue = job.catch(() => undefined);
        job.finally(() => {
          underWay--;
          // Whatever of the body nobody read (a pack that was not needed) is dropped.
          pack.discard();
          try {
            controller.close();
          } catch {}
        });
      },
    });
    return new Response(stream, { headers: { "content-type": "application/x-ndjson" } });
  }
  return app;
}

const MAX_HEADER = BRIDGE_MAX_HEADER;

function concat(chunks: Uint8Array[], total: number): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** The rest of a request body after its header: a push's pack, read only by whoever indexes it. */
export interface Payload {
  /** The bytes as they arrive (at most MAX_REQUEST; more fails the stream). Read it once, or not at all. */
  stream: ReadableStream<Uint8Array>;
  /** Whether any byte followed the header line. */
  present: boolean;
  /** Stops reading (when nobody will): frees the connection's body. */
  discard(): void;
}

/**
 * Reads a request body up to its first newline (the JSON header) and hands over the rest (a push's pack)
 * as a stream that reads on demand, so the pack can go into `git index-pack` while the sandbox still makes it.
 */
export async function splitBody(body: ReadableStream<Uint8Array>): Promise<{ head: string; pack: Payload } | { error: string; status: 400 | 413 }> {
  const reader = body.getReader();
  const headChunks: Uint8Array[] = [];
  let headLen = 0;
  let rest: Uint8Array | undefined;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    const nl = value.indexOf(10);
    if (nl !== -1) {
      headChunks.push(value.subarray(0, nl));
      headLen += nl;
      rest = value.subarray(nl + 1);
      break;
    }
    headChunks.push(value);
    headLen += value.length;
    if (headLen > MAX_HEADER) {
      void reader.cancel().catch(() => undefined);
      return { error: "bridge request header too large", status: 413 };
    }
  }
  const head = new TextDecoder().decode(concat(headChunks, headLen));
  let total = 0;
  let first = rest && rest.length ? rest : undefined;
  const ended = rest === undefined;
  const stream = new ReadableStream<Uint8Array>({
    async pull(c) {
      if (first) {
        total += first.length;
        c.enqueue(first);
        first = undefined;
        return;
      }
      if (ended) return c.close();
      const { done, value } = await reader.read();
      if (done) return c.close();
      total += value.length;
      if (total > MAX_REQUEST) {
        void reader.cancel().catch(() => undefined);
        c.error(new Error("the pack is larger than the bridge accepts; push fewer commits at a time"));
        return;
      }
      c.enqueue(value);
    },
    cancel() {
      void reader.cancel().catch(() => undefined);
    },
  });
  return {
    head,
    pack: {
      stream,
      // A header line ending the body, or a body cut right after it, carries no pack.
      present: !ended,
      discard: () => void stream.cancel().catch(() => undefined),
    },
  };
}

function wire(error: string, message: string, hint: string) {
  return { error, message, hint };
}

interface Outcome {
  decision: "allowed" | "refused" | "failed";
  reason?: string;
  exitCode: number;
  approval?: { id: number; count: number };
  /** Runs after the "exit" frame, still inside this sandbox's queue. */
  after?: () => Promise<void>;
}

const REFUSED_EXIT = 77;

/** Whether a request may be a push (checked properly by the policy): its pack and verdict are made ready early. */
function isPush(req: BridgeRequest): boolean {
  return req.tool === "git" && req.args.includes("push");
}

async function handle(deps: BridgeDeps, gateF: () => Promise<Gate>, req: BridgeRequest, pack: Payload, send: (f: Frame) => void, spare?: SpareVerdict): Promise<Outcome> {
  const g = await gateF();
  // A push needs the known tips too; reading them (host and gate refs, nothing the sandbox controls) does
  // not depend on the policy's answer, so it runs alongside the remotes read.
  const remotesP = hostRemotes(g);
  const pushing = isPush(req);
  const tipsP = pushing ? knownTips(g) : undefined;
  tipsP?.catch(() => undefined);
  // The pack goes into the gate as it arrives, while the policy is decided: it only adds objects (no ref),
  // and a refused push's objects are as inert as a push the scan refused.
  const indexing = pushing && pack.present ? indexPack(g, pack.stream) : undefined;
  indexing?.catch(() => undefined);
  // So is the push's verdict FIFO (made ahead when it can be): the early push starts the moment the policy
  // says yes. Whoever takes it closes it; if nobody does (a refusal, an error), it is closed when this request ends.
  let verdictTaken = false;
  const verdictP = pushing ? (spare ? spare.take() : openVerdict(g)) : undefined;
  verdictP?.catch(() => undefined);
  const takeVerdict = () => {
    verdictTaken = true;
    return verdictP ?? openVerdict(g);
  };
  try {
    return await decideAndRun(deps, g, req, pack, send, remotesP, tipsP, takeVerdict, indexing);
  } finally {
    if (verdictP && !verdictTaken) void verdictP.then(closeVerdict, () => undefined);
  }
}

async function decideAndRun(deps: BridgeDeps, g: Gate, req: BridgeRequest, pack: Payload, send: (f: Frame) => void, remotesP: Promise<Record<string, string>>, tipsP: Promise<string[]> | undefined, takeVerdict: () => Promise<Verdict>, indexing: Promise<void> | undefined): Promise<Outcome> {
  // This request's switches, read once (`sbx bridge NAME` changes apply from the next request).
  const settings = settingsOf(deps);
  const ctx: PolicyContext = {
    remotes: await remotesP,
    checkPath: makePathChecker({ workspace: deps.sandbox.workspace, workspaceView: deps.sandbox.workspaceView ?? deps.sandbox.workspace, realpath: realOrNull }),
    options: { ghApi: settings.allow.includes("gh-api"), ghGist: settings.allow.includes("gh-gist"), ...deps.policy },
    extraRepos: settings.repos,
  };
  const refuse = (reason: string): Outcome => {
    send({ t: "err", d: `sbx: refused: ${reason}\n` });
    return { decision: "refused", reason, exitCode: REFUSED_EXIT };
  };
  // A refusal the user could lift for this sandbox waits in the approvals queue too.
  const refuseOrAsk = (d: { reason: string; ask?: BridgeSubject }): Outcome => {
    const a = d.ask ? (deps.ask?.(d.ask, d.reason) ?? null) : null;
    if (a === null) return refuse(d.reason);
    return { ...refuse(`${d.reason}\nOr ask the user to approve it: approval ${a.id} is waiting (sbx approvals allow ${a.id} on the host, the dashboard, or /approve ${a.id} in chat); then run it again.`), approval: a };
  };
  if (req.tool === "gh") {
    const d = decideGh(req.args, req.cwd, ctx);
    if (!d.ok) return refuseOrAsk(d);
    return runGh(deps, g, ctx, d.plan, req, send, refuse);
  }
  const d = decideGit(req.args, req.cwd, ctx);
  if (!d.ok) return refuse(d.reason);
  let plan = d.plan;
  // The token goes only to the host repo's own remotes: a URL the sandbox named that is not one of them gets none.
  let token = plan.own ? tokenFor(plan.url, deps.secrets()) : undefined;
  // An ssh remote: over https with the token where the host has one for that forge, else over ssh with the host's
  // ssh and agent (no token then).
  if (plan.ssh !== undefined && (token === undefined || plan.url === plan.ssh)) {
    if (!deps.ssh) return refuse(`remote ${plan.remote} is ssh (${plan.ssh}) and this bridge has no ssh set up`);
    plan = { ...plan, url: plan.ssh };
    token = undefined;
  }
  const err = (s: string) => send({ t: "err", d: s });
  switch (plan.op) {
    case "push":
      return push(g, plan, req, indexing ?? (pack.present ? indexPack(g, pack.stream) : Promise.resolve()), tipsP ?? knownTips(g), takeVerdict, token, send, refuse, { ...deps, settings: () => settings });
    case "fetch":
    case "pull":
      return fetch(g, plan, req, token, send, refuse);
    case "ls-remote": {
      const opts = plan.options.map(([n, v]) => (v === undefined ? n : `${n}=${v}`));
      const r = await remoteGit(g, plan.url, token, ["ls-remote", ...opts, plan.url, ...plan.rest], err);
      if (r.stdout) send({ t: "out", d: r.stdout });
      return { decision: "allowed", exitCode: r.exitCode };
    }
    case "clone":
      return clone(g, plan, token, send);
  }
}

function settingsOf(deps: Pick<BridgeDeps, "settings">): BridgeSettings {
  return deps.settings?.() ?? NO_BRIDGE_SETTINGS;
}

/** The refusal of something a switch would allow, saying which. */
function notAllowed(what: string, allow: BridgeAllow, name: string): string {
  return `${what}; to allow it for this sandbox: sbx bridge ${name} --allow ${allow}`;
}

function opt(plan: GitPlan, name: string): boolean {
  return plan.options.some(([n]) => n === name);
}

/** Rewrites git's "<full sha> -> dst" (the gate pushes object ids) to "<name> -> dst", line by line. */
export function pushOutputRewriter(names: ReadonlyMap<string, string>, emit: (s: string) => void, forced?: ReadonlyMap<string, boolean>): { write(s: string): void; end(): void } {
  let buf = "";
  const fix = (s: string) => {
    for (const [sha, name] of names) s = s.split(`${sha} -> `).join(`${name} -> `);
    // The early push forces every ref; where the sandbox did not, and the bridge found a fast-forward,
    // the report says so as git would have ("a..b", not "+ a...b (forced update)").
    if (forced) {
      s = s.replace(/^ \+ ([0-9a-f]+)\.\.\.([0-9a-f]+)( +)(.* -> )(\S+) \(forced update\)$/gm, (line, a: string, b: string, pad: string, mid: string, dst: string) =>
        forced.get(dst) === false ? `   ${a}..${b}${pad} ${mid}${dst}` : line,
      );
    }
    return s;
  };
  return {
    write(s) {
      buf += s;
      const cut = Math.max(buf.lastIndexOf("\n"), buf.lastIndexOf("\r"));
      if (cut === -1) return;
      emit(fix(buf.slice(0, cut + 1)));
      buf = buf.slice(cut + 1);
    },
    end() {
      if (buf) emit(fix(buf));
      buf = "";
    },
  };
}

function shortRef(ref: string): string {
  return ref.replace(/^refs\/(heads|tags)\//, "");
}

/**
 * A push: `git push` from the gate starts at once (while the sandbox's pack is still being indexed in the
 * gate), and the gate's pre-push hook holds it (after the remote's ref advertisement, before any object
 * leaves) until the verdict: the secret scan (which is also the completeness check) passed, and every ref
 * is a fast-forward of what the remote has or the sandbox forced it. A refusal aborts it there.
 */
async function push(g: Gate, plan: GitPlan, req: BridgeRequest, indexing: Promise<void>, tipsP: Promise<string[]>, takeVerdict: () => Promise<Verdict>, token: string | undefined, send: (f: Frame) => void, refuse: (r: string) => Outcome, deps: Pick<BridgeDeps, "faults" | "trace" | "sandbox" | "secrets" | "ask"> & { settings: () => BridgeSettings }): Promise<Outcome> {
  const remote = plan.remote!;
  let specs = plan.refspecs;
  if (specs.length === 0) {
    if (!req.branch || !isSafeRefName(req.branch)) return refuse("no branch to push: name one (git push origin <branch>)");
    specs = [{ force: false, src: req.branch, dst: `refs/heads/${req.branch}` }];
  }
  const force = opt(plan, "--force");
  const lease = opt(plan, "--force-with-lease");
  const out: Array<{ src: string; dst: string; sha: string | null; force: boolean }> = [];
  for (const s of specs) {
    if (s.src === "") {
      out.push({ src: "", dst: s.dst, sha: null, force: false });
      continue;
    }
    const r = req.resolved?.[s.src];
    if (!r) return refuse(`the shim did not say what ${s.src} is`);
    let dst = s.dst;
    // `git push origin v1` where v1 is a tag: git's default destination is the ref the source is.
    if (s.sameAsSource && r.ref === `refs/tags/${s.src}` && isSafeRefName(r.ref)) dst = r.ref;
    if (dst === "") {
      if (!r.ref || !/^refs\/heads\//.test(r.ref) || !isSafeRefName(r.ref)) return refuse(`cannot tell where to push ${s.src}; use <src>:<branch>`);
      dst = r.ref;
    }
    out.push({ src: s.src, dst, sha: r.sha, force: s.force || force });
  }
  // Ref names are the sandbox's text too, and a remote shows them to anyone who can read it.
  const hostValues = hostSecretPatterns(deps.secrets());
  const refPatterns = [...SECRET_PATTERNS, ...hostValues];
  for (const o of out) {
    const f = scanText(o.dst, "ref name", refPatterns)[0];
    if (f) return refuse(`the ref name ${JSON.stringify(redact(o.dst, Object.values(deps.secrets())))} contains what looks like a secret (${f.description}); push to another name`);
  }
  // Its own branches are under its prefix (sbx/<name>/); a branch or tag outside it (main, a release tag, a colleague's
  // branch) asks first: refused now, recorded as a pending approval, allowed by the user for the next push.
  const settings = deps.settings();
  const outside = out.filter((o) => o.sha !== null && !mayPushTo(shortRef(o.dst), settings, deps.sandbox.name));
  if (outside.length > 0) {
    const prefix = branchPrefix(settings, deps.sandbox.name);
    const asked = outside.map((o) => ({ ref: shortRef(o.dst), src: o.src, approval: deps.ask?.({ kind: "push", ref: shortRef(o.dst) }, `a push to ${shortRef(o.dst)} on ${remote}, outside ${prefix}`) ?? null }));
    const first = asked[0]!;
    const approvals = asked.flatMap((a) => (a.approval === null ? [] : [a.approval]));
    const ids = approvals.map((a) => a.id);
    const refused = refuse(
      `this sandbox pushes to branches under ${prefix} without asking; ${asked.map((a) => a.ref).join(", ")} ${asked.length === 1 ? "is" : "are"} outside it.\n` +
        `Push there instead: git push ${remote} ${first.src}:${prefix}${first.ref}\n` +
        (ids.length > 0 ? `Or ask the user to approve it: approval ${ids.join(", ")} is waiting (sbx approvals allow ${ids[0]} on the host, the dashboard, or /approve ${ids[0]} in chat); then push again.\n` : "") +
        `The user can also allow it for this sandbox: sbx bridge ${deps.sandbox.name} --allow-push ${first.ref}`,
    );
    return approvals[0] ? { ...refused, approval: approvals[0] } : refused;
  }
  // What the user protects, decided before anything goes out: forced updates of protected branches, deleting what this
  // sandbox did not create (CI files are checked once the commits are in, below).
  const allowed = new Set(settings.allow);
  if (!allowed.has("force-push") && (lease || out.some((o) => o.force))) {
    const def = await defaultBranchOf(g, remote);
    for (const o of out) {
      if (!(o.force || lease) || o.sha === null || !o.dst.startsWith("refs/heads/")) continue;
      const b = o.dst.slice("refs/heads/".length);
      if (isProtectedBranch(b, def, settings)) return refuse(notAllowed(`a forced push to ${b} (protected${b === def ? ": the default branch" : ""}) is refused`, "force-push", deps.sandbox.name));
    }
  }
  if (!allowed.has("delete")) {
    for (const o of out) {
      if (o.sha !== null) continue;
      if (!(await readRef(g, createdMarker(remote, o.dst)))) return refuse(notAllowed(`deleting ${shortRef(o.dst)} on ${remote}, which this sandbox did not create, is refused`, "delete", deps.sandbox.name));
    }
  }
  const shas = [...new Set(out.flatMap((o) => (o.sha ? [o.sha] : [])))];
  const args = ["push"];
  for (const [n, v] of plan.options) {
    if (["--quiet", "--verbose", "--progress", "--no-progress", "--atomic", "--no-atomic", "--dry-run", "--ipv4", "--ipv6", "--thin", "--no-thin"].includes(n)) args.push(n);
    else if (n === "--push-option") args.push(`--push-option=${v}`);
  }
  // The gate pushes object ids (no gate-local branch is written before the scan); git's report names
  // them as the sandbox did, as if "feature -> feature".
  const names = new Map<string, string>();
  const refspecs: string[] = [];
  for (const o of out) {
    if (o.sha === null) {
      refspecs.push(`:${o.dst}`);
      continue;
    }
    names.set(o.sha, shortRef(o.dst));
    if (lease) {
      const tracking = trackingRef(remote, o.dst);
      const expect = tracking ? await readRef(g, tracking) : undefined;
      args.push(expect ? `--force-with-lease=${o.dst}:${expect}` : `--force-with-lease=${o.dst}:`);
    }
    refspecs.push(`${o.force && !lease ? "+" : ""}${o.sha}:${o.dst}`);
  }
  const incomplete = (e: unknown) => refuse(`the commits to push did not arrive complete in the gate (${(e instanceof Error ? e.message : String(e)).split("\n")[0]})`);
  const pushArgs = (specs: string[]) => [...args, plan.url, ...specs];
  // What the remote had before (the pre-push hook says), to record the refs this push creates.
  let before: Promise<HookRef[]> = Promise.resolve([]);
  const finish = async (r: ExecResult, stderr: { end(): void }): Promise<Outcome> => {
    stderr.end();
    if (r.stdout) {
      const o = pushOutputRewriter(names, (d) => send({ t: "out", d }));
      o.write(r.stdout);
      o.end();
    }
    if (r.exitCode === 0 && !opt(plan, "--dry-run")) {
      send({ t: "pushed", remote, updates: out.map((o) => ({ dst: o.dst, sha: o.sha })) });
      const tracking = out.flatMap((o): Array<[string, string | null]> => {
        const t = trackingRef(remote, o.dst);
        return t ? [[t, o.sha]] : [];
      });
      const had = await Promise.race([before, Promise.resolve([] as HookRef[])]);
      const created = out.flatMap((o): Array<[string, string | null]> => {
        if (o.sha === null) return [[createdMarker(remote, o.dst), null]];
        const h = had.find((x) => x.remoteRef === o.dst);
        return h && /^0+$/.test(h.remoteSha) ? [[createdMarker(remote, o.dst), o.sha]] : [];
      });
      return { decision: "allowed", exitCode: 0, after: () => updateRefs(g, [...tracking, ...created]) };
    }
    return { decision: "allowed", exitCode: r.exitCode };
  };
  if (shas.length === 0) {
    // Deletions only: nothing to scan, nothing to hold.
    const stderr = pushOutputRewriter(names, (d) => send({ t: "err", d }));
    return finish(await remoteGit(g, plan.url, token, pushArgs(refspecs), (s) => stderr.write(s)), stderr);
  }
  // The early push: started before the pack is even indexed, so its connection, authentication and the
  // remote's ref advertisement overlap the pack's arrival, indexing and scan. git's own fast-forward check
  // (which needs the new commits, before the hook) is switched off with `+`; the bridge does it instead,
  // at the hook, against the remote's values the hook reports, and the push carries those values as the
  // old ones, so the remote refuses it if a ref moved meanwhile. A lease or a dry run takes the plain way.
  const earlyPush = !lease && !opt(plan, "--dry-run");
  const verdict = await takeVerdict();
  // Until the verdict, the push's output is held back: a refused push says only why it was refused.
  let held: string[] | undefined = [];
  let dropped = false;
  let stderr = pushOutputRewriter(names, (d) => send({ t: "err", d }), earlyPush ? forcedBy(out) : undefined);
  const reader = hookRefsReader(verdict.nonce, (s) => {
    if (dropped) return;
    if (held) held.push(s);
    else stderr.write(s);
  });
  before = reader.refs;
  const trace = deps.trace ?? (() => undefined);
  if (deps.trace) void reader.refs.then(() => trace("hook reached (the remote's refs are in)"));
  let pushing: Promise<ExecResult> | undefined;
  const startPush = () => (trace("gate push started"), pushing = remoteGit(g, plan.url, token, pushArgs(earlyPush ? refspecs.map((r) => (r.startsWith("+") || r.startsWith(":") ? r : `+${r}`)) : refspecs), (s) => reader.write(s), undefined, verdict));
  let ok = false;
  let refusal: Outcome | undefined;
  let failure: unknown;
  let ffOk = true;
  try {
    if (earlyPush) {
      startPush();
      await deps.faults?.afterPushStarted?.(verdict);
    }
    try {
      await indexing;
      trace("pack indexed");
    } catch (e) {
      refusal = incomplete(e);
    }
    if (!refusal) {
      if (!pushing) {
        startPush();
        await deps.faults?.afterPushStarted?.(verdict);
      }
      const tips = await tipsP;
      // One walk: scanNew fails on any missing commit, new tree or changed blob (the completeness check).
      // The fast-forward check of the early push runs beside it, once the hook has said what the remote has.
      const ended = pushing!.then(() => [] as HookRef[]);
      // The CI-file check walks the same commits beside the scan (their paths), so it adds no time of its own.
      const ciP = allowed.has("ci-files") ? Promise.resolve([] as string[]) : changedPaths(g, shas, tips).then((p) => [...p].filter(isCiPath));
      const [scanned, ff, ciPaths] = await Promise.allSettled([
        scanNew(g, shas, tips, hostValues),
        earlyPush ? Promise.race([reader.refs, ended]).then((refs) => fastForwards(g, out, refs)) : Promise.resolve(true),
        ciP,
      ]);
      trace("scanned, fast-forwards checked");
      const ci = ciPaths.status === "fulfilled" ? ciPaths.value : [];
      if (scanned.status === "rejected") refusal = incomplete(scanned.reason);
      else if (ciPaths.status === "rejected") refusal = incomplete(ciPaths.reason);
      else if (scanned.value.over !== undefined) refusal = refuse(scanned.value.over);
      else if (scanned.value.findings.length > 0) {
        refusal = refuse(`the commits contain what looks like a secret:\n${formatGateFindings(scanned.value.findings, scanned.value.more)}\nRemove it from history (git rebase -i / git commit --amend) and push again.`);
      } else if (ci.length > 0) {
        refusal = refuse(notAllowed(`the commits change CI or automation files (${ci.slice(0, 5).join(", ")}${ci.length > 5 ? ", …" : ""}), which run with the repository's own credentials`, "ci-files", deps.sandbox.name));
      } else {
        ffOk = ff.status === "fulfilled" && ff.value;
        ok = true;
      }
    }
  } catch (e) {
    failure = e;
  } finally {
    if (!ok || !ffOk) dropped = true;
    try {
      giveVerdict(verdict, ok && ffOk);
    } catch {}
    if (ok && ffOk) {
      const early = held ?? [];
      held = undefined;
      for (const s of early) stderr.write(s);
    }
  }
  if (!ok || !ffOk) {
    await pushing;
    closeVerdict(verdict);
    if (!ok) {
      if (refusal) return refusal;
      throw failure;
    }
    // Clean, but not a fast-forward where the sandbox did not force (or a tag the remote has, or a tip
    // the gate cannot see): the plain push, so git itself refuses or pushes each ref as it would have.
    const again = await openVerdict(g);
    stderr = pushOutputRewriter(names, (d) => send({ t: "err", d }));
    const plain = hookRefsReader(again.nonce, (s) => stderr.write(s));
    before = plain.refs;
    giveVerdict(again, true);
    const r = await remoteGit(g, plan.url, token, pushArgs(refspecs), (s) => plain.write(s), undefined, again);
    closeVerdict(again);
    plain.end();
    return finish(r, stderr);
  }
  const r = await pushing!;
  trace("gate push done");
  closeVerdict(verdict);
  reader.end();
  return finish(r, stderr);
}

/** Per destination ref: did the sandbox ask for a forced update? (The early push forces them all.) */
function forcedBy(out: ReadonlyArray<{ dst: string; force: boolean }>): Map<string, boolean> {
  return new Map(out.map((o) => [shortRef(o.dst), o.force]));
}

/**
 * git's fast-forward rules for the refs the early push (all forced) would update, against what the remote
 * has now (from the pre-push hook): a new ref is fine; an existing tag, or a branch whose remote tip the
 * gate lacks or the new commit does not contain, needs the sandbox's own --force (or `+`).
 * runs: git merge-base --is-ancestor <remote tip> <new> (in the gate, once per updated branch)
 */
export async function fastForwards(g: Gate, out: ReadonlyArray<{ dst: string; sha: string | null; force: boolean }>, refs: readonly HookRef[]): Promise<boolean> {
  const checks = refs.map(async (h) => {
    const o = out.find((x) => x.dst === h.remoteRef);
    if (!o) return false;
    if (o.force || o.sha === null || /^0+$/.test(h.remoteSha) || h.remoteSha === o.sha) return true;
    if (!o.dst.startsWith("refs/heads/")) return false;
    return isAncestor(g, h.remoteSha, o.sha);
  });
  return (await Promise.all(checks)).every(Boolean);
}

function trackingRef(remote: string, dst: string): string | undefined {
  return dst.startsWith("refs/heads/") ? `refs/remotes/${remote}/${dst.slice("refs/heads/".length)}` : undefined;
}

async function fetch(g: Gate, plan: GitPlan, req: BridgeRequest, token: string | undefined, send: (f: Frame) => void, refuse: (r: string) => Outcome): Promise<Outcome> {
  if (plan.remote === undefined) return refuse("fetch a remote of the host repository by name (git fetch origin); URLs are not supported for fetch");
  const remote = plan.remote;
  const branches = plan.rest;
  const prune = opt(plan, "--prune");
  const refspecs = branches.length
    ? branches.map((b) => `+refs/heads/${b}:refs/remotes/${remote}/${b}`)
    : [`+refs/heads/*:refs/remotes/${remote}/*`, "+refs/tags/*:refs/tags/*"];
  const args = ["fetch", "--no-tags", "--no-write-fetch-head"];
  for (const [n] of plan.options) if (["--quiet", "--verbose", "--progress", "--no-progress", "--ipv4", "--ipv6"].includes(n)) args.push(n);
  if (prune && branches.length === 0) args.push("--prune");
  // The gate's own "[new branch]" lines describe the gate, not the sandbox: the shim prints its own.
  const r = await remoteGit(g, plan.url, token, [...args, plan.url, ...refspecs], () => undefined);
  if (r.exitCode !== 0) {
    send({ t: "err", d: r.stderr });
    return { decision: "allowed", exitCode: r.exitCode };
  }
  const all = await listRefs(g, [`refs/remotes/${remote}/`, ...(branches.length ? [] : ["refs/tags/"])]);
  const refs: Record<string, string> = {};
  for (const [name, sha] of Object.entries(all)) {
    if (branches.length && !branches.some((b) => name === `refs/remotes/${remote}/${b}`)) continue;
    refs[name] = sha;
  }
  send({ t: "refs", remote, url: plan.url, refs, prune: prune && branches.length === 0 });
  // Exclude what the sandbox has: its own tips, and the host repo's (it sees the host's objects).
  const haves = await present(g, req.haves ?? []);
  const hostRefs = await listRefs(g, [], g.hostRepo);
  const exclude = [...new Set([...haves, ...Object.values(hostRefs)])];
  const bundle = Object.keys(refs).length ? await makeBundle(g, Object.keys(refs), exclude) : null;
  if (bundle) for (let i = 0; i < bundle.length; i += BUNDLE_CHUNK) send({ t: "bundle", d: Buffer.from(bundle.subarray(i, i + BUNDLE_CHUNK)).toString("base64") });
  return { decision: "allowed", exitCode: 0 };
}

async function clone(g: Gate, plan: GitPlan, token: string | undefined, send: (f: Frame) => void): Promise<Outcome> {
  const dir = scratchDir(g, "clone");
  try {
    const args = ["clone", "--bare", "--template=", "--no-local"];
    for (const [n, v] of plan.options) {
      if (["--quiet", "--verbose", "--progress", "--no-progress", "--single-branch", "--no-single-branch", "--no-tags", "--ipv4", "--ipv6"].includes(n)) args.push(n);
      else if (n === "--branch" || n === "--depth") args.push(`${n}=${v}`);
    }
    const r = await remoteGit(g, plan.url, token, [...args, "--", plan.url, dir], (s) => send({ t: "err", d: s }), g.paths.tmp);
    if (r.exitCode !== 0) return { decision: "allowed", exitCode: r.exitCode };
    const bundle = await makeBundle(g, ["--all"], [], dir);
    send({ t: "refs", remote: "origin", url: plan.url, refs: {}, prune: false });
    if (bundle) for (let i = 0; i < bundle.length; i += BUNDLE_CHUNK) send({ t: "bundle", d: Buffer.from(bundle.subarray(i, i + BUNDLE_CHUNK)).toString("base64") });
    return { decision: "allowed", exitCode: 0 };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** owner/name of a GitHub URL, or undefined. */
export function githubRepo(url: string): string | undefined {
  const f = forgeRepo(url);
  return f?.host === "github.com" ? f.path : undefined;
}

/** The forge host and owner/name of an https or ssh remote URL (`https://h/o/r(.git)`, `git@h:o/r`), or undefined. Pure. */
export function forgeRepo(url: string): { host: string; path: string } | undefined {
  const m =
    /^https:\/\/(?:[^@\/]*@)?([A-Za-z0-9.-]+(?::\d+)?)\/([A-Za-z0-9_.-]+)\/([A-Za-z0-9_.-]+?)(?:\.git)?\/?$/.exec(url) ??
    /^(?:ssh:\/\/)?git@([A-Za-z0-9.-]+)[:\/]([A-Za-z0-9_.-]+)\/([A-Za-z0-9_.-]+?)(?:\.git)?\/?$/.exec(url);
  return m ? { host: m[1]!.toLowerCase(), path: `${m[2]}/${m[3]}` } : undefined;
}

/** Pure: a YAML single-quoted scalar. */
function yamlQuote(s: string): string {
  return `'${s.replaceAll("'", "''")}'`;
}

/**
 * Pure: gh's hosts.yml for one host and token. gh reads its token from here when no GH_TOKEN is set, so the token is
 * in no process's environment, where `--jq '$ENV'` (gojq) would print it.
 */
export function ghHostsYaml(host: string, token: string): string {
  return `${yamlQuote(host)}:\n    oauth_token: ${yamlQuote(token)}\n    git_protocol: https\n`;
}

/**
 * Reads a file the sandbox named exactly once, by descriptor: opened without following a final symlink and without
 * blocking on a FIFO, checked with fstat (a regular file, at most `max` bytes), and on Linux checked again by where the
 * open descriptor really is (a parent swapped for a symlink after the path check leads outside `root`).
 */
export function readNamedFile(path: string, root: string, max: number): { bytes: Uint8Array } | { error: string } {
  let fd: number;
  try {
    fd = openSync(path, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
  } catch (e) {
    return { error: `${path}: cannot open it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); a symlink is not followed` };
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return { error: `${path}: not a regular file in the workspace` };
    if (st.size > max) return { error: `${path} is larger than ${max} bytes` };
    if (process.platform === "linux") {
      let real: string;
      try {
        real = readlinkSync(`/proc/self/fd/${fd}`);
      } catch {
        return { error: `${path}: cannot tell where it is` };
      }
      const rootReal = realOrNull(root) ?? root;
      if (real !== rootReal && !real.startsWith(`${rootReal}/`)) return { error: `${path} resolves outside the sandbox's workspace` };
    }
    const buf = Buffer.alloc(st.size);
    let at = 0;
    while (at < st.size) {
      const n = readSync(fd, buf, at, st.size - at, at);
      if (n === 0) break;
      at += n;
    }
    return { bytes: new Uint8Array(buf.subarray(0, at)) };
  } finally {
    closeSync(fd);
  }
}

/**
 * Runs gh on the host for the host repo's own forge repository: its token in a private GH_CONFIG_DIR made for this one
 * call (never in gh's environment, which `--jq`/`--template` can read), `--repo` (or `gh repo view`'s argument) from the
 * host repo's remote, in a host-owned directory. `gh --version` runs with no token at all; `gh auth status` is answered
 * by the bridge.
 * runs: gh <group> <sub> … --repo [host/]owner/name (stdin: the --body-file the bridge read)
 */
async function runGh(deps: BridgeDeps, g: Gate, ctx: PolicyContext, plan: GhPlan, req: BridgeRequest, send: (f: Frame) => void, refuse: (r: string) => Outcome): Promise<Outcome> {
  const env = (configDir: string): Record<string, string> => ({
    ...deps.tlsEnv,
    PATH: g.path,
    HOME: g.paths.home,
    GH_CONFIG_DIR: configDir,
    GH_PROMPT_DISABLED: "1",
    GH_NO_UPDATE_NOTIFIER: "1",
    NO_COLOR: "1",
    LC_ALL: "C.UTF-8",
  });
  const out = (r: { stdout: string; exitCode: number }): Outcome => {
    if (r.stdout) send({ t: "out", d: r.stdout });
    return { decision: "allowed", exitCode: r.exitCode };
  };
  if (plan.group === "version") {
    const empty = mkdtempSync(join(g.paths.home, "gh-"));
    try {
      return out(await deps.exec.run(["gh", "--version"], { cwd: g.paths.ghCwd, env: env(empty), replaceEnv: true, check: false, timeoutMs: 30_000 }));
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  }
  const url = plan.repo ?? ctx.remotes.origin ?? Object.values(ctx.remotes)[0];
  const forge = url ? forgeRepo(url) : undefined;
  if (!forge) return refuse("the host repository has no forge remote (https://host/owner/repo or git@host:owner/repo), so gh has nothing to act on");
  const token = tokenFor(`https://${forge.host}/`, deps.secrets());
  const tokenName = suggestedTokenName(`https://${forge.host}/`);
  if (plan.group === "auth") {
    if (!token) {
      send({ t: "err", d: `${forge.host}\n  X not logged in: the host has no token for ${forge.host} (sbx secret set ${tokenName})\n` });
      return { decision: "allowed", exitCode: 1 };
    }
    send({ t: "out", d: `${forge.host}\n  ✓ Logged in to ${forge.host} through the sbx bridge: the token stays on the host, gh runs there for ${forge.path}\n` });
    return { decision: "allowed", exitCode: 0 };
  }
  if (!token) return refuse(`no token for ${forge.host} on the host: run \`sbx secret set ${tokenName}\` there`);
  let stdin: Uint8Array | undefined;
  if (plan.bodyFile !== undefined) {
    const body = readNamedFile(plan.bodyFile, deps.sandbox.workspace, BRIDGE_MAX_BODY_FILE);
    if ("error" in body) return refuse(body.error);
    stdin = body.bytes;
  }
  const repoArg = forge.host === "github.com" ? forge.path : `${forge.host}/${forge.path}`;
  if (plan.group === "api") {
    // The path names this repository: through gh's own placeholders, or its owner/name exactly.
    const path = plan.args.at(-1)!.replace(/^\//, "");
    const own = `repos/${forge.path}`;
    const ok = path.startsWith("repos/{owner}/{repo}") ? /^repos\/\{owner\}\/\{repo\}(?:[/?]|$)/.test(path) : path === own || path.startsWith(`${own}/`) || path.startsWith(`${own}?`);
    if (!ok) return refuse(`gh api ${path}: only ${own}/… (or repos/{owner}/{repo}/…) is allowed`);
  }
  const dash = plan.args.indexOf("--");
  const head = dash === -1 ? plan.args : plan.args.slice(0, dash);
  const tail = dash === -1 ? [] : plan.args.slice(dash);
  const extra: string[] = [];
  if (plan.group === "repo") tail.splice(0, tail.length, "--", repoArg);
  else if (plan.group !== "api" && plan.group !== "gist") extra.push("--repo", repoArg);
  if (plan.group === "pr" && plan.sub === "create" && !head.some((a) => a === "--head" || a.startsWith("--head="))) {
    if (!req.branch || !isSafeRefName(req.branch)) return refuse("gh pr create: not on a branch; pass --head <branch>");
    extra.push(`--head=${req.branch}`);
  }
  // A config dir of its own for this call, 0700 in the host-owned gate dir, gone when gh is.
  const configDir = mkdtempSync(join(g.paths.home, "gh-"));
  try {
    writeFileSync(join(configDir, "hosts.yml"), ghHostsYaml(forge.host, token), { mode: 0o600 });
    const r = await deps.exec.run(["gh", ...head, ...extra, ...tail], {
      cwd: g.paths.ghCwd,
      env: { ...env(configDir), ...(forge.host === "github.com" ? {} : { GH_HOST: forge.host }), ...(plan.group === "api" ? { GH_REPO: repoArg } : {}) },
      replaceEnv: true,
      ...(stdin ? { stdin } : {}),
      onStderr: (s) => send({ t: "err", d: s }),
      check: false,
      timeoutMs: 10 * 60_000,
    });
    return out(r);
  } finally {
    rmSync(configDir, { recursive: true, force: true });
  }
}

export interface StartedBridge {
  socketPath: string;
  close(): Promise<void>;
}

async function isLive(socketPath: string): Promise<boolean> {
  try {
    const r = await globalThis.fetch("http://bridge/health", { unix: socketPath, signal: AbortSignal.timeout(1000) } as RequestInit);
    return r.ok;
  } catch {
    return false;
  }
}

/**
 * Serves the bridge on the sandbox's own socket: created under umask 0177 inside a 0700 directory,
 * so only the host user (and the sandbox the directory is mounted into) can connect.
 */
export async function startBridge(o: BridgeDeps & { socketPath: string }): Promise<StartedBridge> {
  const dir = dirname(o.socketPath);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  if (existsSync(o.socketPath)) {
    if (await isLive(o.socketPath)) {
      throw new SbxError("conflict", `a bridge already answers on ${o.socketPath}`, { hint: "Another sbx daemon is serving this sandbox; stop it first." });
    }
    unlinkSync(o.socketPath);
  }
  // No bridge serves this sandbox now, so the gate's scratch files are a dead bridge's leftovers (a verdict
  // FIFO whose push is held or already gave up, partial bundles): gone, so nothing can wait on them.
  rmSync(gatePaths(o.gateDir).tmp, { recursive: true, force: true });
  // The gate is made before the socket answers, so the first push pays nothing for it.
  const gate = await ensureGate(o.exec, o.gateDir, o.sandbox.repo, o.path ?? DEFAULT_PATH, o.tlsEnv, o.ssh);
  const spare = new SpareVerdict(() => openVerdict(gate));
  spare.fill();
  const app = createBridgeApp(o, gate, spare);
  const old = process.umask(0o177);
  let server: ReturnType<typeof Bun.serve>;
  try {
    // No idle limit: a fetch or push whose upstream stays quiet sends nothing for longer than Bun's default 10 s, which
    // cut the call.
    server = Bun.serve({ unix: o.socketPath, fetch: (req: Request) => app.fetch(req), maxRequestBodySize: MAX_REQUEST, ...NO_IDLE_TIMEOUT });
  } finally {
    process.umask(old);
  }
  chmodSync(o.socketPath, 0o600);
  return {
    socketPath: o.socketPath,
    async close() {
      await server.stop(true);
      await spare.dispose();
      rmSync(o.socketPath, { force: true });
    },
  };
}
