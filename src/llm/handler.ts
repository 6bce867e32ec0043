// The LLM key proxy: forwards /llm/<provider>/… to the provider with the host's key injected and every inbound credential stripped, streaming.
import { request as httpRequest, type IncomingMessage, type ServerResponse, type OutgoingHttpHeaders } from "node:http";
import { request as httpsRequest, Agent as HttpsAgent } from "node:https";
import { Agent as HttpAgent } from "node:http";
import { credentialFor, ANTHROPIC_OAUTH_BETA, type KeySources, type Provider } from "./keys";

export const PROVIDERS: Record<Provider, string> = {
  anthropic: "https://api.anthropic.com",
  openai: "https://api.openai.com",
  google: "https://generativelanguage.googleapis.com",
};

/** Inbound headers that are never forwarded: credentials (the sandbox only has placeholders) and hop-by-hop. */
export const STRIPPED = new Set([
  "authorization",
  "proxy-authorization",
  "x-api-key",
  "api-key",
  "x-goog-api-key",
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
]);

export interface LlmEvent {
  provider: Provider | string;
  method: string;
  path: string;
  status: number;
  credential?: string;
  durationMs: number;
}

export interface LlmHandlerOptions {
  /** Where keys come from; read on every request. */
  keys: () => KeySources;
  /** Provider base URLs (tests point these at a fake on 127.0.0.1). */
  upstreams?: Partial<Record<Provider, string>>;
  onEvent?: (e: LlmEvent) => void;
}

/** A path segment decoded, or null when it holds a `%` that is not a valid escape (or escapes to invalid UTF-8). */
function decodeSegment(s: string): string | null {
  try {
    return decodeURIComponent(s);
  } catch {
    return null;
  }
}

/**
 * Pure: the upstream URL for an origin-form path; null when it is not an /llm/<provider>/ path; "malformed" when it is
 * one whose path cannot be taken as written (a bad escape, `.`/`..`, an escaped `/`). Never throws.
 */
export function upstreamFor(path: string, upstreams: Record<Provider, string>): { provider: Provider; url: URL } | null | "malformed" {
  const m = /^\/llm\/([a-z]+)(\/[^?#]*)?(\?[^#]*)?$/.exec(path);
  if (!m) return null;
  const provider = m[1] as Provider;
  if (!Object.hasOwn(upstreams, provider)) return null;
  const rest = m[2] ?? "/";
  if (rest.split("/").some((s) => { const d = decodeSegment(s); return s === ".." || s === "." || d === null || d.includes("/") || d === ".." || d === "."; })) return "malformed";
  if (m[3] !== undefined && decodeSegment(m[3].replace(/\+/g, " ")) === null) return "malformed";
  const base = new URL(upstreams[provider]);
  const url = new URL(base.origin);
  url.pathname = base.pathname.replace(/\/$/, "") + rest;
  const q = new URLSearchParams(m[3] ?? "");
  // Gemini clients may put the key in ?key=; it is a placeholder, and the real one goes in a header.
  q.delete("key");
  url.search = q.toString();
  return { provider, url };
}

/** Pure: the headers sent upstream — inbound minus credentials and hop-by-hop, plus the host's credential. */
export function upstreamHeaders(inbound: IncomingMessage["headers"], credential: Record<string, string>, host: string): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(inbound)) {
    if (v === undefined || STRIPPED.has(k.toLowerCase())) continue;
    out[k] = v;
  }
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
  const agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };
  return (req, res) => {
    const started = Date.now();
    const target = upstreamFor(req.url ?? "", upstreams);
    if (target === "malformed") {
      fail(res, 400, "bad_request", "the LLM route's path is malformed (an invalid %-escape, '.' or '..', or an escaped '/')", "Send the path as the provider's SDK writes it.");
      return;
    }
    if (!target) {
      fail(res, 404, "not_found", `no LLM route for ${req.url}`, "Use /llm/anthropic/…, /llm/openai/… or /llm/google/… (the base URLs sbx sets inside the sandbox).");
      return;
    }
    const cred = credentialFor(target.provider, o.keys());
    if (!cred) {
      fail(res, 503, "no_credentials", `the host has no ${target.provider} credential`, `On the host: \`sbx secret set ${target.provider === "openai" ? "OPENAI_API_KEY" : target.provider === "google" ? "GEMINI_API_KEY" : "ANTHROPIC_API_KEY"}\` (value on stdin), or log in to Claude Code on the host.`);
      return;
    }
    const { url } = target;
    const send = url.protocol === "https:" ? httpsRequest : httpRequest;
    const up = send(
      url,
      { method: req.method, headers: upstreamHeaders(req.headers, cred.headers, url.host), agent: url.protocol === "https:" ? agents.https : agents.http },
      (upRes) => {
        const headers: OutgoingHttpHeaders = {};
        for (const [k, v] of Object.entries(upRes.headers)) if (v !== undefined && !STRIPPED.has(k) && k !== "set-cookie") headers[k] = v;
        res.writeHead(upRes.statusCode ?? 502, headers);
        res.flushHeaders();
        // Piped chunk by chunk: server-sent events reach the agent as the provider sends them.
        upRes.on("data", (c: Buffer) => res.write(c));
        upRes.on("end", () => {
          res.end();
          o.onEvent?.({ provider: target.provider, method: req.method ?? "", path: url.pathname, status: upRes.statusCode ?? 0, credential: cred.source, durationMs: Date.now() - started });
        });
        upRes.on("error", () => res.destroy());
      },
    );
    up.on("error", (e) => fail(res, 502, "upstream_failed", `${target.provider}: ${e.message}`, "Check the host's network; the request was not sent with any key from the sandbox."));
    res.on("close", () => {
      if (!res.writableFinished) up.destroy();
    });
    req.on("data", (c: Buffer) => up.write(c));
    req.on("end", () => up.end());
    req.on("error", () => up.destroy());
  };
}
