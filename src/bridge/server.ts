// The command bridge: a hono app on one sandbox's own unix socket that runs vetted git/gh network operations on the host.
// Its wire and job types are job.ts's; a push is push.ts's, gh is gh-run.ts's; fetch, clone and ls-remote are here.
import { Hono } from "hono";
import { chmodSync, existsSync, mkdirSync, rmSync, unlinkSync } from "node:fs";
import { dirname } from "node:path";
import { SbxError } from "../core/errors";
import { RedactingLines, redact } from "../core/redact";
import { NO_IDLE_TIMEOUT } from "../sys/serve";
import { decideGit, type GitPlan } from "./git-policy";
import { decideGh } from "./gh-policy";
import { makePathChecker } from "./path-check";
import type { PolicyContext } from "./policy";
import { NO_BRIDGE_SETTINGS, type BridgeSettings, type BridgeSubject } from "../core/bridge-settings";
import { remoteHosts } from "../core/credential-scope";
import { ensureGate, maintainGate, hostRemotes, indexPack, knownTips, type KnownTips, listRefs, makeBundle, present, remoteGit, setViewTips, userTips } from "./gate";
import { gatePaths, scratchDir, type Gate } from "./gate-git";
import { closeVerdict, openVerdict, type Verdict } from "./gate-hook";
import { credentialHost, suggestedTokenName, tokenFor, withheldText } from "./tokens";
import { realOrNull, runGh } from "./gh-run";
import { BridgeRequest, REFUSED_EXIT, type BridgeDeps, type Frame, type Job, type Outcome } from "./job";
import { opt, push } from "./push";
import { BRIDGE_MAX_HEADER, BRIDGE_MAX_PACK, BRIDGE_MAX_REQUESTS, cutText } from "../core/bounds";

export { BridgeRequest, type AuditEvent, type BridgeDeps, type BridgeSandbox, type Frame, type PushFaults } from "./job";

const BUNDLE_CHUNK = 48 * 1024;
const DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin";
const MAX_REQUEST = BRIDGE_MAX_PACK;


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
  // The gate lends its git and gh the host's parent proxy, where the host has one.
  const lent = (g: Gate): Gate => (deps.parent ? { ...g, parent: deps.parent } : g);
  let gateP: Promise<Gate> | undefined = ready ? Promise.resolve(lent(ready)) : undefined;
  const gate = () => (gateP ??= ensureGate(deps.exec, deps.gateDir, deps.sandbox.repo, path, deps.tlsEnv, deps.ssh, deps.sandbox.name).then(lent, (e) => {
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
    // The caller has hung up (the git shim's push does once its tracking refs are written; any caller's exit closes the
    // connection).
    let callerGone!: () => void;
    const gone = new Promise<void>((r) => (callerGone = r));
    const stream = new ReadableStream<Uint8Array>({
      cancel: () => callerGone(),
      start: (controller) => {
        const enc = new TextEncoder();
        const known = () => Object.values(deps.secrets()).filter((v) => typeof v === "string");
        const enqueue = (f: Frame) => {
          try {
            controller.enqueue(enc.encode(JSON.stringify(f) + "\n"));
          } catch {
            // The caller went away (or stopped reading after "exit"); the operation still finishes.
          }
        };
        // Output is redacted a whole line at a time (a token a read cut in two is still found): each stream's unended
        // line waits for its end, or for any other frame, which goes after it.
        const lines = { out: new RedactingLines(known), err: new RedactingLines(known) };
        const send = (f: Frame) => {
          if (f.t === "out" || f.t === "err") {
            const d = lines[f.t].push(f.d);
            if (d) enqueue({ t: f.t, d });
            return;
          }
          for (const t of ["out", "err"] as const) {
            const d = lines[t].end();
            if (d) enqueue({ t, d });
          }
          enqueue(f);
        };
        const started = Date.now();
        const job = queue.then(async () => {
          let after: (() => Promise<void>) | undefined;
          try {
            const { after: a, ...r } = await handle({ deps, gate, req, pack, send, spare });
            after = a;
            deps.audit({ sandbox: deps.sandbox.id, tool: req.tool, args: req.args, cwd: req.cwd, durationMs: Date.now() - started, ...r });
            send({ t: "exit", code: r.exitCode });
            deps.trace?.("exit sent");
          } catch (e) {
            const msg = e instanceof Error ? e.message : String(e);
            deps.audit({ sandbox: deps.sandbox.id, tool: req.tool, args: req.args, cwd: req.cwd, decision: "failed", reason: redact(msg, known()), exitCode: 1, durationMs: Date.now() - started });
            send({ t: "err", d: `sbx bridge: ${msg}\n` });
            send({ t: "exit", code: 1 });
          }
          // Bookkeeping the caller need not wait for (the shim stops reading at "exit"), but the next
          // operation on this gate must: it stays inside the queue. A caller that says it hangs up (the git shim's push)
          // is waited for, at most AFTER_REPLY_WAIT_MS: on a machine of few cores the gate's ref writes and the next
          // push's FIFO otherwise run beside the shim's own tracking-ref update and exit, which the person waits for.
          if (req.hangsUp) {
            let timer: ReturnType<typeof setTimeout> | undefined;
            await Promise.race([gone, new Promise<void>((r) => (timer = setTimeout(r, AFTER_REPLY_WAIT_MS)))]);
            clearTimeout(timer);
            deps.trace?.("caller gone");
          }
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
/** How long a request's bookkeeping after its reply waits for the caller to hang up first (a shim exits within ms). */
const AFTER_REPLY_WAIT_MS = 250;

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


/** Whether a request may be a push (checked properly by the policy): its pack and verdict are made ready early. */
function isPush(req: BridgeRequest): boolean {
  return req.tool === "git" && req.args.includes("push");
}

/** One request: the gate, the work a push can start before the policy's answer, then `decideAndRun`. */
async function handle(h: { deps: BridgeDeps; gate: () => Promise<Gate>; req: BridgeRequest; pack: Payload; send: (f: Frame) => void; spare: SpareVerdict | undefined }): Promise<Outcome> {
  const { deps, req, pack, send, spare } = h;
  const g = await h.gate();
  deps.trace?.("gate ready");
  const remotesP = hostRemotes(g);
  const pushing = isPush(req);
  // A push's ref reads (host and gate refs, nothing the sandbox controls) and the pack going into the gate (it only adds
  // objects, no ref) need not wait for the policy's answer, but they start only after the gate's push has (push.ts
  // runPush): every process started before it delays it on a machine of few cores, and it is what the shim waits for.
  // Each starts at its first use, once; a refused push starts neither.
  let tipsP: Promise<KnownTips> | undefined;
  let indexingP: Promise<void> | undefined;
  const tips = () => {
    if (!tipsP) {
      tipsP = knownTips(g);
      tipsP.catch(() => undefined);
    }
    return tipsP;
  };
  const indexing = () => {
    if (!indexingP) {
      indexingP = pack.present ? indexPack(g, pack.stream) : Promise.resolve();
      indexingP.catch(() => undefined);
    }
    return indexingP;
  };
  // The push's verdict FIFO (made ahead when it can be): the early push starts the moment the policy says yes. Whoever
  // takes it closes it; if nobody does (a refusal, an error), it is closed when this request ends.
  let verdictTaken = false;
  const verdictP = pushing ? (spare ? spare.take() : openVerdict(g)) : undefined;
  verdictP?.catch(() => undefined);
  const takeVerdict = () => {
    verdictTaken = true;
    return verdictP ?? openVerdict(g);
  };
  try {
    return await decideAndRun({ deps, gate: g, req, send, remotes: remotesP, tips, takeVerdict, indexing });
  } finally {
    if (verdictP && !verdictTaken) void verdictP.then(closeVerdict, () => undefined);
  }
}

/** A request once its gate is ready, and what `handle` made ready for it before the policy's answer. */
interface Prepared {
  deps: BridgeDeps;
  gate: Gate;
  req: BridgeRequest;
  send: (f: Frame) => void;
  /** The host repo's remotes (the only source of URLs). */
  remotes: Promise<Record<string, string>>;
  /** A push's known tips (per remote), read once asked for. */
  tips: () => Promise<KnownTips>;
  /** A push's verdict FIFO. */
  takeVerdict: () => Promise<Verdict>;
  /** A push's pack going into the gate as it arrives, once asked for. */
  indexing: () => Promise<void>;
}

/** The policy's answer, then the operation it allows. */
async function decideAndRun(p: Prepared): Promise<Outcome> {
  const { deps, gate: g, req, send, remotes: remotesP, tips, takeVerdict, indexing } = p;
  // This request's switches, read once (`sbx bridge NAME` changes apply from the next request).
  const settings = settingsOf(deps);
  const ctx: PolicyContext = {
    remotes: await remotesP.then((r) => (deps.trace?.("remotes read"), r)),
    checkPath: makePathChecker({ workspace: deps.sandbox.workspace, workspaceView: deps.sandbox.workspaceView ?? deps.sandbox.workspace, realpath: realOrNull }),
    options: { ghApi: settings.allow.includes("gh-api"), ghGist: settings.allow.includes("gh-gist"), ...deps.policy },
    extraRepos: settings.repos,
    pushRemote: settings.pushRemote,
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
  let job: Job = { deps, gate: g, req, send, refuse, refuseOrAsk, settings };
  if (req.tool === "gh") {
    const d = decideGh(req.args, req.cwd, ctx);
    if (!d.ok) return refuseOrAsk(d);
    return runGh(job, ctx, d.plan);
  }
  const d = decideGit(req.args, req.cwd, ctx);
  if (!d.ok) return refuse(d.reason);
  deps.trace?.("policy decided");
  let plan = d.plan;
  // The token goes only to the host repo's own remotes (and repositories the user added): a URL the sandbox named that is
  // not one of them gets none, and a fallback token (GIT_TOKEN) only a host of those remotes (credential-scope).
  const ownHosts = remoteHosts(Object.values(ctx.remotes));
  const choice = plan.own ? tokenFor(plan.url, deps.secrets(), ownHosts) : { name: null };
  let token = choice.name !== null ? choice.value : undefined;
  // Nothing is sent with it; the request goes on as anyone's would (a public repository is read), and says why.
  if (choice.name === null && choice.withheld && plan.ssh === undefined) send({ t: "err", d: `sbx: ${withheldText(choice.withheld, plan.url, ownHosts)}\n` });
  // An ssh remote: over https with the token where the host has one for that forge, else over ssh with the host's
  // ssh and agent (no token then).
  if (plan.ssh !== undefined && (token === undefined || plan.url === plan.ssh)) {
    if (!deps.ssh) return refuse(`remote ${plan.remote} is ssh (${plan.ssh}) and this bridge has no ssh set up`);
    plan = { ...plan, url: plan.ssh };
    token = undefined;
  }
  // No token for a remote that asks for a login: git's own words ("could not read Username … terminal prompts
  // disabled") become the secret's name and the command that sets it (no silent failure).
  if (token === undefined && /^https?:\/\//.test(plan.url)) job = { ...job, send: loginAsked(send, plan.url) };
  const err = (s: string) => job.send({ t: "err", d: s });
  switch (plan.op) {
    case "push":
      return push({ ...job, plan, indexing, tips, takeVerdict, token });
    case "fetch":
    case "pull":
      return fetch(job, plan, token);
    case "ls-remote": {
      const opts = plan.options.map(([n, v]) => (v === undefined ? n : `${n}=${v}`));
      const r = await remoteGit(g, plan.url, token, ["ls-remote", ...opts, plan.url, ...plan.rest], err);
      if (r.stdout) send({ t: "out", d: r.stdout });
      return { decision: "allowed", exitCode: r.exitCode };
    }
    case "clone":
      return clone(job, plan, token);
  }
}

/** git's lines about a login prompt it could not show. */
const LOGIN_PROMPT = /could not read (Username|Password)|terminal prompts disabled|unable to read askpass/i;

/** A sender that says which token a login prompt wanted, in place of git's lines about the prompt it could not show. */
function loginAsked(send: Job["send"], url: string): Job["send"] {
  let said = false;
  return (f) => {
    if (f.t === "err" && LOGIN_PROMPT.test(f.d)) {
      const rest = f.d.split("\n").filter((l) => l !== "" && !LOGIN_PROMPT.test(l));
      if (!said) {
        said = true;
        send({ t: "err", d: `sbx: ${credentialHost(url)} asked for a login, and the host has no token for it: run \`sbx secret set ${suggestedTokenName(url)}\` on the host (value typed hidden), then this again\n` });
      }
      if (rest.length > 0) send({ t: "err", d: `${rest.join("\n")}\n` });
      return;
    }
    send(f);
  };
}

function settingsOf(deps: Pick<BridgeDeps, "settings">): BridgeSettings {
  return deps.settings?.() ?? NO_BRIDGE_SETTINGS;
}

async function fetch(job: Job, plan: GitPlan, token: string | undefined): Promise<Outcome> {
  const { gate: g, req, send, refuse } = job;
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
  // What the remote is told the gate has: the person's tips it can read (the host view's refs, ALTERNATE_REFS).
  const mine = await userTips(g);
  setViewTips(g, mine);
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
  // Exclude what the sandbox has: its own tips, and what the person's refs reach (it sees the host's objects, and
  // promotion puts there what those refs reach of a store). Another sandbox's refs on the host (`sandbox-*`, retired)
  // reach objects in that sandbox's store, which this one never sees: they cut nothing (untrusted-by-origin). Each as
  // far as the gate sees it (a person's ref on a store's commit not yet promoted is not seen: sandboxes-apart).
  const exclude = await present(g, [...new Set([...(req.haves ?? []), ...mine])]);
  const bundle = Object.keys(refs).length ? await makeBundle(g, Object.keys(refs), exclude) : null;
  if (bundle) for (let i = 0; i < bundle.length; i += BUNDLE_CHUNK) send({ t: "bundle", d: Buffer.from(bundle.subarray(i, i + BUNDLE_CHUNK)).toString("base64") });
  return { decision: "allowed", exitCode: 0 };
}

async function clone(job: Job, plan: GitPlan, token: string | undefined): Promise<Outcome> {
  const { gate: g, send } = job;
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
  const gate = await ensureGate(o.exec, o.gateDir, o.sandbox.repo, o.path ?? DEFAULT_PATH, o.tlsEnv, o.ssh, o.sandbox.name);
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
