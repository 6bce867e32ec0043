// The LLM key proxy: forwards /llm/<provider>/… to the provider with the host's key injected and every inbound credential stripped, streaming.
import { request as httpRequest, type IncomingMessage, type ServerResponse, type OutgoingHttpHeaders } from "node:http";
import { request as httpsRequest, Agent as HttpsAgent } from "node:https";
import { Agent as HttpAgent } from "node:http";
import { codexPlaceholderTokens } from "../core/agents";
import { readCodexLogin, type CodexRefresher } from "./codex-login";
import { credentialFor, ANTHROPIC_OAUTH_BETA, type Credential, type KeySources, type Provider } from "./keys";
import { canonicalPath, checkScope, LLM_CREDENTIAL_SCOPES, scopeThrough, type LlmCredentialKind } from "../core/credential-scope";
import type { CallUsage } from "../core/llm-usage";
import { CallMeter, FAMILY } from "./meter";
import type { SandboxBudget } from "./budget";

export const PROVIDERS: Record<Provider, string> = {
  anthropic: "https://api.anthropic.com",
  openai: "https://api.openai.com",
  google: "https://generativelanguage.googleapis.com",
  /** Codex with an OpenAI API key; signed in to ChatGPT it goes to CHATGPT_UPSTREAM instead. */
  codex: "https://api.openai.com/v1",
  /** Gemini CLI signed in with Google talks to Code Assist, not the Gemini API. */
  codeassist: "https://cloudcode-pa.googleapis.com",
};

/** Bytes of a sandbox's request body the daemon holds for a provider that reads it slower than it comes. */
const UPLOAD_HELD = 1024 * 1024;

/** Where a ChatGPT-signed-in Codex sends its requests. */
export const CHATGPT_UPSTREAM = "https://chatgpt.com/backend-api/codex";

/** Codex's own token refresh inside a sandbox comes here (CODEX_REFRESH_TOKEN_URL_OVERRIDE): the host refreshes. */
export const CODEX_TOKEN_PATH = "/llm/codex-token";

/**
 * Inbound headers that are never forwarded: credentials (the sandbox only has placeholders), hop-by-hop, and those some
 * servers take as another method or path than the request line's (the scope is judged on the request line).
 */
export const STRIPPED = new Set([
  "authorization",
  "proxy-authorization",
  "x-api-key",
  "api-key",
  "x-goog-api-key",
  "chatgpt-account-id",
  "cookie",
  "connection",
  "keep-alive",
  "proxy-connection",
  "transfer-encoding",
  "te",
  "trailer",
  "upgrade",
  "host",
  "forwarded",
  "x-forwarded-for",
  "x-forwarded-host",
  "x-http-method-override",
  "x-http-method",
  "x-method-override",
  "x-original-url",
  "x-original-method",
  "x-rewrite-url",
]);

export interface LlmEvent {
  provider: Provider | string;
  method: string;
  path: string;
  status: number;
  credential?: string;
  durationMs: number;
  /** What the call was counted as (LLM budget), when it was. */
  usage?: CallUsage;
}

export interface LlmHandlerOptions {
  /** Where keys come from; read on every request. */
  keys: () => KeySources;
  /** Provider base URLs (tests point these at a fake on 127.0.0.1); `chatgpt`: ChatGPT's Codex backend. */
  upstreams?: Partial<Record<Provider | "chatgpt", string>>;
  /** Keeps the host's ChatGPT sign-in for Codex fresh (absent: used as it is). */
  codex?: CodexRefresher;
  /** Keeps the host's Google sign-in for Gemini CLI fresh (absent: used as it is). */
  gemini?: { fresh(): Promise<void> };
  /** macOS: reads Claude Code's login from the Keychain (at most once a minute) before an Anthropic request. */
  claudeKeychain?: { load(): Promise<void> };
  /** This sandbox's LLM budget: each call is counted, and one at the cap is refused (absent: neither). */
  budget?: SandboxBudget;
  onEvent?: (e: LlmEvent) => void;
  /** The agents its requests go out on (the host's parent proxy's, sys/parent.ts); default: straight out, kept alive. */
  agents?: { http: HttpAgent; https: HttpsAgent };
}

/** The sandbox's side of an LLM request: its route, and the canonical path and query after `/llm/<route>`. */
export type LlmRoute = { provider: Provider; rest: string; query: string };

/**
 * Pure: the route of an origin-form target; null when it is not an /llm/<provider>/ path; `malformed` (and why) when it
 * is one whose target has no one reading (core/credential-scope.ts `canonicalPath`: `\`, escaped separators and dots,
 * `;`, `//`, controls, …). The placeholder `key` a Gemini client may put in the query is dropped. Never throws.
 */
export function routeOf(target: string, upstreams: Record<Provider, string>): LlmRoute | null | { malformed: string } {
  if (!target.startsWith("/llm/")) return null;
  const c = canonicalPath(target);
  if (!c.ok) return { malformed: c.reason };
  const m = /^\/llm\/([a-z]+)(\/.*)?$/.exec(c.path);
  if (!m) return null;
  const provider = m[1] as Provider;
  if (!Object.hasOwn(PROVIDERS, provider) || !Object.hasOwn(upstreams, provider)) return null;
  const q = new URLSearchParams(c.query);
  // Gemini clients may put the key in ?key=; it is a placeholder, and the real one goes in a header.
  q.delete("key");
  return { provider, rest: m[2] ?? "/", query: q.toString() };
}

/**
 * Pure: where a route's request goes with a credential of `kind`, the route's default base being `defaultBase` and its
 * configured one `base`: the URL, when the credential's scope (LLM_CREDENTIAL_SCOPES, through `scopeThrough`) takes
 * its method and canonical path; else why not. The URL's path is the canonical one checked, and nothing else.
 */
export function aim(route: LlmRoute, method: string, kind: LlmCredentialKind, defaultBase: string, base: string): { ok: true; url: URL } | { ok: false; reason: string } {
  const b = new URL(base);
  const scope = scopeThrough(LLM_CREDENTIAL_SCOPES[kind], defaultBase, base);
  const v = checkScope(scope, { method, host: b.host, target: `${b.pathname.replace(/\/+$/, "")}${route.rest}${route.query ? `?${route.query}` : ""}` });
  if (!v.ok) return v;
  const url = new URL(b.origin);
  url.pathname = v.path;
  url.search = v.query;
  // The URL parser must not read the path another way than the check did (it would be sent as it reads it).
  if (url.pathname !== v.path) return { ok: false, reason: `its path ${v.path} would be sent as ${url.pathname}` };
  return { ok: true, url };
}

/** Pure: the upstream URL for an origin-form path with no credential's scope in the way (what `aim` starts from). */
export function upstreamFor(path: string, upstreams: Record<Provider, string>): { provider: Provider; url: URL } | null | { malformed: string } {
  const r = routeOf(path, upstreams);
  if (r === null || "malformed" in r) return r;
  const b = new URL(upstreams[r.provider]);
  const url = new URL(b.origin);
  url.pathname = b.pathname.replace(/\/+$/, "") + r.rest;
  url.search = r.query;
  return { provider: r.provider, url };
}

/** Pure: the headers sent upstream — inbound minus credentials and hop-by-hop, plus the host's credential. */
export function upstreamHeaders(inbound: IncomingMessage["headers"], credential: Record<string, string>, host: string): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(inbound)) {
    if (v === undefined || STRIPPED.has(k.toLowerCase())) continue;
    out[k] = v;
  }
  // The answer is read for its usage as it passes (llm/meter.ts): never encoded, so ask for none.
  for (const k of Object.keys(out)) if (k.toLowerCase() === "accept-encoding") delete out[k];
  out["accept-encoding"] = "identity";
  for (const [k, v] of Object.entries(credential)) {
    if (k === "anthropic-beta" && v === ANTHROPIC_OAUTH_BETA && out[k]) {
      const have = String(out[k]).split(",").map((s) => s.trim());
      out[k] = have.includes(v) ? have.join(",") : [...have, v].join(",");
    } else out[k] = v;
  }
  out.host = host;
  return out;
}

function fail(res: ServerResponse, status: number, error: string, message: string, hint: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, { "content-type": "application/json", "x-sbx-error": error });
  res.end(JSON.stringify({ error, message, hint }) + "\n");
}

/** The origin-form request handler the egress proxy mounts for /llm/… paths. */
export function createLlmHandler(o: LlmHandlerOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const upstreams = { ...PROVIDERS, ...o.upstreams };
  // Keep-alive to the provider: each agent turn is many requests, and TLS set-up dominates short ones.
  const agents = o.agents ?? { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };
  return (req, res) => {
    const started = Date.now();
    if ((req.url ?? "").split("?")[0] === CODEX_TOKEN_PATH) {
      void codexToken(o, req, res);
      return;
    }
    const route = routeOf(req.url ?? "", upstreams);
    if (route !== null && "malformed" in route) {
      fail(res, 400, "bad_request", `the LLM route's path was refused: ${route.malformed}`, "Send the path as the provider's SDK writes it.");
      return;
    }
    if (!route) {
      fail(res, 404, "not_found", `no LLM route for ${req.url}`, "Use /llm/anthropic/…, /llm/openai/… or /llm/google/… (the base URLs sbx sets inside the sandbox).");
      return;
    }
    void forward(req, res, started, route);
  };

  /** Where this credential sends the route's request: its own route's base, or ChatGPT's backend for that sign-in. */
  function aimFor(route: LlmRoute, method: string, cred: Credential) {
    const chatgpt = cred.upstream === "chatgpt";
    return aim(route, method, cred.kind, chatgpt ? CHATGPT_UPSTREAM : PROVIDERS[route.provider], chatgpt ? (o.upstreams?.chatgpt ?? CHATGPT_UPSTREAM) : upstreams[route.provider]);
  }

  /** Refuses what the credential's scope does not take: nothing is sent, with or without the credential. */
  function outOfScope(req: IncomingMessage, res: ServerResponse, started: number, route: LlmRoute, cred: Credential, reason: string): void {
    const what = LLM_CREDENTIAL_SCOPES[cred.kind].what;
    fail(res, 403, "out_of_scope", `${what} is not sent there: ${reason}`, "sbx's LLM routes carry the provider's inference endpoints only; the rest of the account is not reached with the host's credential from a sandbox.");
    o.onEvent?.({ provider: route.provider, method: req.method ?? "", path: (req.url ?? "").slice(0, 512), status: 403, credential: cred.source, durationMs: Date.now() - started });
  }

  async function forward(req: IncomingMessage, res: ServerResponse, started: number, route: LlmRoute): Promise<void> {
    const method = req.method ?? "";
    // At the cap nothing is sent and the host does nothing for it (no refresh): the provider's own error shape, said.
    const over = o.budget?.admit(FAMILY[route.provider]) ?? null;
    if (over) {
      req.resume();
      res.writeHead(over.status, { "content-type": "application/json", "x-sbx-error": "llm_budget" });
      res.end(JSON.stringify(over.body) + "\n");
      o.onEvent?.({ provider: route.provider, method, path: (req.url ?? "").slice(0, 512), status: over.status, durationMs: Date.now() - started });
      return;
    }
    if (route.provider === "anthropic") await o.claudeKeychain?.load();
    // Judged before any refresh too: a request the scope does not take makes the host do nothing for it.
    const before = credentialFor(route.provider, o.keys());
    if (before) {
      const a = aimFor(route, method, before);
      if (!a.ok) return outOfScope(req, res, started, route, before, a.reason);
    }
    if (route.provider === "codex" && o.codex) {
      try {
        await o.codex.fresh();
      } catch (e) {
        fail(res, 502, "login_expired", `the host's Codex sign-in could not be refreshed: ${(e as Error).message}`, "On the host: `codex login`, then try again.");
        return;
      }
    }
    if (route.provider === "codeassist" && o.gemini) {
      try {
        await o.gemini.fresh();
      } catch (e) {
        fail(res, 502, "login_expired", `the host's Gemini sign-in could not be refreshed: ${(e as Error).message}`, "On the host: run `gemini` and sign in with Google again.");
        return;
      }
    }
    const cred = credentialFor(route.provider, o.keys());
    if (!cred) {
      fail(res, 503, "no_credentials", `the host has no ${route.provider} credential`, NO_CREDENTIAL_HINT[route.provider]);
      return;
    }
    // The credential read now is the one sent (a refresh may have changed it): its scope decides, on the canonical path.
    const aimed = aimFor(route, method, cred);
    if (!aimed.ok) return outOfScope(req, res, started, route, cred, aimed.reason);
    const { url } = aimed;
    // Counted however it ends (llm/meter.ts): the provider's usage fields as they pass, or an estimate said as one.
    let usage: CallUsage | undefined;
    const meter = o.budget ? new CallMeter(route.provider, method, `${url.pathname}${url.search}`, (u) => (usage = u, o.budget!.record(u))) : null;
    const ended = (status: number) => o.onEvent?.({ provider: route.provider, method: req.method ?? "", path: url.pathname, status, credential: cred.source, durationMs: Date.now() - started, ...(usage ? { usage } : {}) });
    const headers = upstreamHeaders(req.headers, cred.headers, url.host);
    const secrets = secretsOf(cred.headers);
    // The answer's relay (made once its head is in): what it has read and not yet written goes out before a cut.
    let flush = () => undefined as void;
    const send = url.protocol === "https:" ? httpsRequest : httpRequest;
    const up = send(
      url,
      { method: req.method, headers, agent: url.protocol === "https:" ? agents.https : agents.http },
      (upRes) => {
        res.writeHead(upRes.statusCode ?? 502, answerHeaders(Object.entries(upRes.headers), secrets));
        res.flushHeaders();
        meter?.response(upRes.statusCode ?? 502, upRes.headers);
        flush = relay(upRes, res, meter);
        let over = false;
        upRes.on("end", () => {
          over = true;
          flush();
          res.end();
          const complete = upRes.complete;
          // Counted once the answer's last bytes are on their way (as they are read: CallMeter.bodyLater), and said then.
          setImmediate(() => {
            meter?.finish(complete);
            ended(upRes.statusCode ?? 0);
          });
        });
        upRes.on("error", () => {
          // What came before the cut goes to the sandbox (and is counted) before it sees the cut.
          flush();
          meter?.finish(false);
          res.destroy();
        });
        upRes.on("close", () => {
          if (over) return;
          flush();
          meter?.finish(upRes.complete);
        });
      },
    );
    up.on("error", (e) => {
      meter?.finish(false);
      fail(res, 502, "upstream_failed", `${route.provider}: ${e.message}`, "Check the host's network; the request was not sent with any key from the sandbox.");
    });
    res.on("close", () => {
      if (res.writableFinished) return;
      // The client left (or the answer was cut): what was seen is counted, the rest estimated.
      flush();
      meter?.finish(false);
      up.destroy();
    });
    req.on("data", (c: Buffer) => {
      meter?.request(c);
      // The provider's pace is the sandbox's: a provider that reads slowly holds the upload, not the daemon's memory. (Held
      // past a bound, not at the first `false`: the client request says that until its connection is up, and waiting
      // for its `drain` then put a turn of the event loop before every request, the first token's wait.)
      if (!up.write(c) && up.writableLength >= UPLOAD_HELD) {
        req.pause();
        up.once("drain", () => req.resume());
      }
    });
    req.on("end", () => {
      meter?.requestEnded();
      up.end();
    });
    req.on("error", () => up.destroy());
  }
}

/** Answer headers never passed to the sandbox, beside STRIPPED: cookies and proxy authentication are the host's. */
const ANSWER_STRIPPED = new Set(["set-cookie", "set-cookie2", "proxy-authenticate", "proxy-authentication-info"]);

/**
 * Pure: the provider's answer headers the sandbox gets: never hop-by-hop ones (those named by the answer's `Connection`
 * too), cookies, credentials by name, or a header whose value holds a credential sent with the request (`secrets`: a
 * gateway that echoes its request headers back).
 */
export function answerHeaders(entries: Iterable<[string, string | string[] | undefined]>, secrets: readonly string[]): OutgoingHttpHeaders {
  const all = [...entries].map(([k, v]) => [k.toLowerCase(), v] as const);
  const named = new Set(all.filter(([k]) => k === "connection").flatMap(([, v]) => [v ?? []].flat().flatMap((x) => x.split(",").map((t) => t.trim().toLowerCase()))));
  const headers: OutgoingHttpHeaders = {};
  for (const [k, v] of all) {
    if (v === undefined || STRIPPED.has(k) || ANSWER_STRIPPED.has(k) || named.has(k)) continue;
    if (secrets.some((x) => [v].flat().some((y) => y.includes(x)))) continue;
    headers[k] = v;
  }
  return headers;
}

/** Pure: the secret parts of a credential's headers (a bearer token without its scheme), for `answerHeaders`. */
export function secretsOf(credential: Record<string, string>): string[] {
  return Object.entries(credential)
    .filter(([k]) => STRIPPED.has(k.toLowerCase()))
    .map(([, v]) => v.replace(/^Bearer\s+/i, ""))
    .filter((v) => v.length >= 8);
}

/**
 * Passes a provider's answer body to the client as it comes, through the meter. Server-sent events reach the agent as
 * the provider sends them, but not one write each: node:http hands over each chunk of a chunked body as its own `data`
 * (a provider's burst of 500 events, one read, is 500 of them), and a write each made 500 writes down the proxy's
 * in-memory connection and 500 frames to the client (a 500-event answer took 8x its direct time,
 * bench/llm-sse.bench.ts). What arrived together is written together, as one write once the read's events are all out
 * (a microtask: no wait for another turn of the event loop), and read for usage after that. Returns the flush the
 * answer's end, its cut and the client's leaving call first (what was read before a cut is passed on, and counted).
 */
function relay(upRes: IncomingMessage, res: ServerResponse, meter: CallMeter | null): () => void {
  let pending: Buffer[] = [];
  let queued = false;
  const flush = () => {
    queued = false;
    if (pending.length === 0) return;
    const c = pending.length === 1 ? pending[0]! : Buffer.concat(pending);
    pending = [];
    // The client's pace is the provider's: a client that reads slowly holds the provider's stream, not memory.
    if (!res.destroyed && !res.write(c)) {
      upRes.pause();
      res.once("drain", () => upRes.resume());
    }
    // Counted once it is on its way (CallMeter.bodyLater), as one piece.
    meter?.bodyLater(c);
  };
  upRes.on("data", (c: Buffer) => {
    pending.push(c);
    if (!queued) {
      queued = true;
      queueMicrotask(flush);
    }
  });
  return flush;
}

const NO_CREDENTIAL_HINT: Record<Provider, string> = {
  anthropic: "On the host: `sbx secret set ANTHROPIC_API_KEY` (value on stdin), or log in to Claude Code on the host.",
  openai: "On the host: `sbx secret set OPENAI_API_KEY` (value on stdin).",
  google: "On the host: `sbx secret set GEMINI_API_KEY` (value on stdin).",
  codex: "On the host: `codex login` (ChatGPT or an API key), or `sbx secret set OPENAI_API_KEY` (value on stdin).",
  codeassist: "On the host: run `gemini` and sign in with Google (sbx keeps ~/.gemini/oauth_creds.json fresh from then on), or `sbx secret set GEMINI_API_KEY`.",
};

/**
 * Codex's own token refresh from inside (CODEX_REFRESH_TOKEN_URL_OVERRIDE points here): the host's sign-in is refreshed
 * on the host, and the sandbox gets its placeholders again, never a token.
 */
async function codexToken(o: LlmHandlerOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  req.resume();
  if (req.method !== "POST") {
    fail(res, 405, "bad_request", "POST only", "This is where Codex inside refreshes its sign-in.");
    return;
  }
  const login = readCodexLogin(o.keys().codexAuthFile);
  if (login?.kind !== "chatgpt") {
    fail(res, 400, "no_credentials", "the host has no ChatGPT sign-in for Codex", "On the host: `codex login`.");
    return;
  }
  try {
    await o.codex?.fresh(true);
  } catch (e) {
    fail(res, 502, "login_expired", `the host's Codex sign-in could not be refreshed: ${(e as Error).message}`, "On the host: `codex login`, then try again.");
    return;
  }
  const p = codexPlaceholderTokens(login.plan);
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify({ id_token: p.id_token, access_token: p.access_token, refresh_token: p.refresh_token }));
}

/**
 * Pure: the LLM gateways the host itself uses (`ANTHROPIC_BASE_URL`, `OPENAI_BASE_URL`, `GOOGLE_GEMINI_BASE_URL` in the
 * daemon's environment: a corporate gateway, a local model server), as the proxy's upstreams; the host's credentials
 * for them are added as for the providers. OpenAI's base URL includes its `/v1` (as the SDKs take it); the OpenAI route's
 * paths carry their own, so it is taken off there and kept for Codex's route.
 */
export function gatewayUpstreams(env: Readonly<Record<string, string | undefined>>): Partial<Record<Provider, string>> {
  const url = (v: string | undefined): string | null => {
    if (!v || !/^https?:\/\/[^\s/]+/.test(v)) return null;
    try {
      return new URL(v).toString().replace(/\/+$/, "");
    } catch {
      return null;
    }
  };
  const out: Partial<Record<Provider, string>> = {};
  const anthropic = url(env.ANTHROPIC_BASE_URL);
  if (anthropic) out.anthropic = anthropic;
  const openai = url(env.OPENAI_BASE_URL);
  if (openai) {
    out.openai = openai.replace(/\/v1$/, "");
    out.codex = /\/v1$/.test(openai) ? openai : `${openai}/v1`;
  }
  const google = url(env.GOOGLE_GEMINI_BASE_URL);
  if (google) out.google = google;
  return out;
}
