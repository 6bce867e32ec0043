// The LLM key proxy: forwards /llm/<provider>/… to the provider with the host's key injected and every inbound credential
// stripped, streaming, as a request of the egress proxy's own (its reader, its forwarder, its pool: proxy/connection.ts).
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse, OutgoingHttpHeaders } from "node:http";
import type { OriginForwarder, Prepared } from "../proxy/connection";
import type { Destination } from "../proxy/forward";
import type { Header, RequestHead } from "../proxy/http1";
import { answer } from "../proxy/refusal";
import { tlsDial, UpstreamPool } from "../proxy/upstream";
import type { ParentRouter } from "../sys/parent";
import { codexPlaceholderTokens } from "../core/agents";
import { readCodexLogin, type CodexRefresher } from "./codex-login";
import { credentialFor, ANTHROPIC_OAUTH_BETA, type Credential, type KeySources, type Provider } from "./keys";
import { canonicalPath, checkScope, LLM_CREDENTIAL_SCOPES, scopeThrough, type LlmCredentialKind } from "../core/credential-scope";
import type { CallUsage } from "../core/llm-usage";
import { formsMemo } from "../core/reflection-forms";
import { replaceAll, StreamReplacer } from "../core/stream-replace";
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
  /** The host's parent proxy (sys/parent.ts): a provider it applies to is reached through it; default: straight out. */
  parent?: ParentRouter;
  /** CA certificates a provider's TLS is verified against (PEM); default: the runtime's roots. */
  upstreamCa?: string;
  connectTimeoutMs?: number;
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
export function upstreamHeaders(inbound: IncomingHttpHeaders, credential: Record<string, string>, host: string): OutgoingHttpHeaders {
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

/** An answer of the LLM proxy's own, on the proxy's connection: JSON, its kind in `X-Sbx-Error`. */
function own(status: number, error: string, body: unknown): (close: boolean) => Buffer {
  return (close) => answer(status, JSON.stringify(body) + "\n", { close, contentType: "application/json", headers: [["X-Sbx-Error", error]] });
}

/** The refusal of a request the LLM proxy will not send (nothing is sent upstream). */
function refused(status: number, error: string, message: string, hint: string): Prepared {
  return { ok: false, message, answer: own(status, error, { error, message, hint }) };
}

/** Pure: a head's headers as node:http gives them to a handler (names in lower case, a repeated one joined). */
function headerObject(list: readonly Header[]): IncomingHttpHeaders {
  const o: Record<string, string> = {};
  for (const [k, v] of list) {
    const n = k.toLowerCase();
    o[n] = n in o ? `${o[n]}, ${v}` : v;
  }
  return o;
}

/** Pure: headers as node:http takes them, as a list in that order (an array value is one line each). */
function headerList(o: OutgoingHttpHeaders): Header[] {
  const out: Header[] = [];
  for (const [k, v] of Object.entries(o)) {
    if (v === undefined) continue;
    for (const x of [v].flat()) out.push([k, String(x)]);
  }
  return out;
}

/** What the egress proxy takes from the LLM key proxy: its routes, sent on by the proxy's reader, and its own answers. */
export interface LlmProxy extends OriginForwarder {
  /** The route sbx answers itself (Codex's token refresh, CODEX_TOKEN_PATH), as the proxy's origin handler serves it. */
  local: (req: IncomingMessage, res: ServerResponse) => void;
}

/**
 * The LLM key proxy of one sandbox: each /llm/<route>/… request read by the egress proxy's own reader (connection.ts) is
 * judged here (its route, the credential's scope on its canonical path, the budget) and sent on with the host's
 * credential by the proxy's forwarder (forward.ts) on upstream.ts's pool: TLS verified, through the parent where it
 * applies, kept alive. Its answer streams to the sandbox as it comes, its headers cleaned (answerHeaders), its usage read
 * by the meter as it passes.
 */
export function createLlmHandler(o: LlmHandlerOptions): LlmProxy {
  const upstreams = { ...PROVIDERS, ...o.upstreams };
  // Keep-alive to the provider: each agent turn is many requests, and TLS set-up dominates short ones.
  const timeout = o.connectTimeoutMs ?? 10_000;
  // The credentials' spellings an answer is masked for (never reflected), made once per key.
  const forms = formsMemo(8);
  const pools = { plain: new UpstreamPool(timeout), tls: new UpstreamPool(timeout, undefined, tlsDial(o.upstreamCa ? { ca: o.upstreamCa } : {}), "secureConnect") };

  /** Where this credential sends the route's request: its own route's base, or ChatGPT's backend for that sign-in. */
  function aimFor(route: LlmRoute, method: string, cred: Credential) {
    const chatgpt = cred.upstream === "chatgpt";
    return aim(route, method, cred.kind, chatgpt ? CHATGPT_UPSTREAM : PROVIDERS[route.provider], chatgpt ? (o.upstreams?.chatgpt ?? CHATGPT_UPSTREAM) : upstreams[route.provider]);
  }

  /** Refuses what the credential's scope does not take: nothing is sent, with or without the credential. */
  function outOfScope(head: RequestHead, started: number, route: LlmRoute, cred: Credential, reason: string): Prepared {
    const what = LLM_CREDENTIAL_SCOPES[cred.kind].what;
    o.onEvent?.({ provider: route.provider, method: head.method, path: head.target.slice(0, 512), status: 403, credential: cred.source, durationMs: Date.now() - started });
    return refused(403, "out_of_scope", `${what} is not sent there: ${reason}`, "sbx's LLM routes carry the provider's inference endpoints only; the rest of the account is not reached with the host's credential from a sandbox.");
  }

  async function prepare(head: RequestHead): Promise<Prepared> {
    const started = Date.now();
    const method = head.method;
    const route = routeOf(head.target, upstreams);
    if (route !== null && "malformed" in route) return refused(400, "bad_request", `the LLM route's path was refused: ${route.malformed}`, "Send the path as the provider's SDK writes it.");
    if (!route) return refused(404, "not_found", `no LLM route for ${head.target}`, "Use /llm/anthropic/…, /llm/openai/… or /llm/google/… (the base URLs sbx sets inside the sandbox).");
    // At the cap nothing is sent and the host does nothing for it (no refresh): the provider's own error shape, said.
    const over = o.budget?.admit(FAMILY[route.provider]) ?? null;
    if (over) {
      o.onEvent?.({ provider: route.provider, method, path: head.target.slice(0, 512), status: over.status, durationMs: Date.now() - started });
      return { ok: false, message: over.message, answer: own(over.status, "llm_budget", over.body) };
    }
    if (route.provider === "anthropic") await o.claudeKeychain?.load();
    // Judged before any refresh too: a request the scope does not take makes the host do nothing for it.
    const before = credentialFor(route.provider, o.keys());
    const first = before ? aimFor(route, method, before) : null;
    if (before && first && !first.ok) return outOfScope(head, started, route, before, first.reason);
    if (route.provider === "codex" && o.codex) {
      try {
        await o.codex.fresh();
      } catch (e) {
        return refused(502, "login_expired", `the host's Codex sign-in could not be refreshed: ${(e as Error).message}`, "On the host: `codex login`, then try again.");
      }
    }
    if (route.provider === "codeassist" && o.gemini) {
      try {
        await o.gemini.fresh();
      } catch (e) {
        return refused(502, "login_expired", `the host's Gemini sign-in could not be refreshed: ${(e as Error).message}`, "On the host: run `gemini` and sign in with Google again.");
      }
    }
    // A route with a sign-in to refresh reads its credential again (the refresh may have changed it); its scope decides,
    // on the canonical path. The others send the one just judged.
    const refreshed = (route.provider === "codex" && o.codex) || (route.provider === "codeassist" && o.gemini);
    const cred = refreshed ? credentialFor(route.provider, o.keys()) : before;
    if (!cred) return refused(503, "no_credentials", `the host has no ${route.provider} credential`, NO_CREDENTIAL_HINT[route.provider]);
    const aimed = cred === before && first ? first : aimFor(route, method, cred);
    if (!aimed.ok) return outOfScope(head, started, route, cred, aimed.reason);
    const { url } = aimed;
    // Counted however it ends (llm/meter.ts): the provider's usage fields as they pass, or an estimate said as one.
    let usage: CallUsage | undefined;
    const meter = o.budget ? new CallMeter(route.provider, method, `${url.pathname}${url.search}`, (u) => (usage = u, o.budget!.record(u))) : null;
    let status = 502;
    // Every spelling of the credential an answer could show it in (plain, JSON, URL, base64): a header holding one is
    // dropped, and the body and reason phrase show each as a run of '*' (never reflected, as for a secret bound to a host).
    const spellings = secretsOf(cred.headers).flatMap((v) => forms(v, null));
    const secrets = spellings.map((f) => f.from);
    const masked = spellings.map((f) => ({ from: enc.encode(f.from), to: enc.encode(f.to) }));
    const tls = url.protocol === "https:";
    const hostname = url.hostname.replace(/^\[|\]$/g, "");
    const parent = o.parent?.route(tls ? "https" : "http", hostname) ?? null;
    const dest: Destination = {
      pool: tls ? pools.tls : pools.plain,
      address: hostname,
      port: Number(url.port || (tls ? 443 : 80)),
      via: parent ? { route: parent, host: hostname } : null,
      target: `${url.pathname}${url.search}`,
      // Host is the provider's: written by `tap.headers` with the credential.
      host: null,
      done(ok) {
        // Counted once the answer's last bytes are on their way (read as they were written: CallMeter.bodyLater), and said then.
        setImmediate(() => {
          meter?.finish(ok);
          o.onEvent?.({ provider: route.provider, method, path: url.pathname, status, credential: cred.source, durationMs: Date.now() - started, ...(usage ? { usage } : {}) });
        });
      },
      // What the provider sent may be quoted (a head it could not read): masked as its answers are.
      failure: (why) => `${route.provider}: ${replaceAll(why, spellings).text}`,
      failedAnswer: (message, close) => own(502, "upstream_failed", { error: "upstream_failed", message, hint: "Check the host's network; the request was not sent with any key from the sandbox." })(close),
      rewrite: {
        requestBody: null,
        responseHead: (h) => ({ reason: replaceAll(h.reason, spellings).text, headers: h.headers }),
        responseBody: new StreamReplacer(masked),
      },
      tap: {
        headers: (sent) => headerList(upstreamHeaders(headerObject(sent), cred.headers, url.host)),
        requestBody: (d) => meter?.request(d),
        requestEnd: () => meter?.requestEnded(),
        answerHead(st, shown) {
          status = st;
          meter?.response(st, headerObject(shown.headers));
          return { reason: shown.reason, headers: headerList(answerHeaders(shown.headers, secrets)) };
        },
        // Counted once it is on its way (CallMeter.bodyLater).
        answerBody: (d) => meter?.bodyLater(d),
      },
    };
    return { ok: true, head, dest };
  }

  return {
    handles: (target) => target.startsWith("/llm/") && target.split("?")[0] !== CODEX_TOKEN_PATH,
    prepare,
    local(req, res) {
      if ((req.url ?? "").split("?")[0] === CODEX_TOKEN_PATH) return void codexToken(o, req, res);
      fail(res, 404, "not_found", `no LLM route for ${req.url}`, "Use /llm/anthropic/…, /llm/openai/… or /llm/google/… (the base URLs sbx sets inside the sandbox).");
    },
    close() {
      pools.plain.close();
      pools.tls.close();
    },
  };
}

const enc = new TextEncoder();

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
