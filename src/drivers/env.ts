// The one builder of a sandbox's environment, for every kind: terminal and locale, SANDBOX, the proxy and LLM variables, sbx's sockets and shims.
//
// Pure. What differs per kind is where things are as the guest sees them (`EnvPlace`); the variables and their values
// are decided here only, so a container and a user account can never drift apart again.
import { terminalVars } from "../core/terminal-vars";
import type { Provider } from "../llm/keys";

export { terminalVars };

/** The placeholder the LLM clients inside send as their key: the proxy replaces it with the host's, on the way out. */
export const PLACEHOLDER_KEY = "sbx-placeholder";

/** Where sbx's pieces are, as the sandbox's processes see them. */
export interface EnvPlace {
  /** The proxy listens on 127.0.0.1:<port> (the forwarder in a container; the loopback port of a user account). */
  proxyPort: number;
  /** The bridge's socket. */
  bridgeSocket: string;
  /** The proxy's socket, where the sandbox can reach it (a container's socket dir). */
  proxySocket?: string;
  /** The host's Bun that runs the shims. */
  bun?: string;
  /** PATH, where sbx sets it in the environment (a user account's rc files put its ~/bin first themselves). */
  path?: string;
  /**
   * The sandbox's own hostname, which resolves to its loopback (a container's): kept direct like `localhost`. Only where
   * a client that goes around the proxy for it is still judged by the proxy (the transparent path): NO_PROXY matches
   * by suffix, so a sandbox named like a top-level domain (`dev`, `app`) sends every host under it the direct way.
   */
  hostname?: string;
}

/** Pure: NO_PROXY for a sandbox: the loopback forms, and its own hostname where it is given. */
export function noProxyFor(hostname?: string): string {
  return hostname ? `${NO_PROXY},${hostname}` : NO_PROXY;
}

/**
 * The LLM providers the proxy serves at `/llm/<route>`, and the variables that point each one's clients there. The
 * handler's routes (src/llm/handler.ts) and these must agree: a unit test checks every base URL against it.
 */
export const LLM_ROUTES: Record<Provider, { base: string; suffix: string; keys: readonly string[] }> = {
  anthropic: { base: "ANTHROPIC_BASE_URL", suffix: "", keys: ["ANTHROPIC_AUTH_TOKEN"] },
  openai: { base: "OPENAI_BASE_URL", suffix: "/v1", keys: ["OPENAI_API_KEY"] },
  google: { base: "GOOGLE_GEMINI_BASE_URL", suffix: "", keys: ["GEMINI_API_KEY", "GOOGLE_API_KEY"] },
  // Codex's own route (sbx's launcher points it here): its login is a placeholder auth.json, no variable.
  codex: { base: "SBX_CODEX_BASE_URL", suffix: "", keys: [] },
  // Gemini CLI signed in with Google: Code Assist, at the address its own variable names.
  codeassist: { base: "CODE_ASSIST_ENDPOINT", suffix: "", keys: [] },
};

/**
 * Hosts no client may send to the proxy: the sandbox's own loopback in every form a dev server is reached by
 * (0.0.0.0 included: what a server bound to all interfaces prints). The sandbox's hostname is added per sandbox
 * where it is safe (`EnvPlace.hostname`).
 */
export const NO_PROXY = "localhost,127.0.0.1,::1,0.0.0.0";

export interface SandboxEnvOptions {
  /** The caller's terminal and locale variables are taken from here (and nothing else of it). */
  terminal?: Readonly<Record<string, string | undefined>>;
  /** The user's own `env:` entries (already checked to hold no known secret); sbx's own variables win over them. */
  user?: Readonly<Record<string, string>>;
}

/** Pure: the JVM's proxy properties for the proxy at 127.0.0.1:port, with the sandbox's loopback left direct. */
export function javaProxyOptions(port: number, hostname?: string): string {
  const direct = `localhost|127.*|[::1]|0.0.0.0${hostname ? `|${hostname}` : ""}`;
  return [
    `-Dhttp.proxyHost=127.0.0.1`,
    `-Dhttp.proxyPort=${port}`,
    `-Dhttps.proxyHost=127.0.0.1`,
    `-Dhttps.proxyPort=${port}`,
    `-Dhttp.nonProxyHosts=${direct}`,
  ].join(" ");
}

/**
 * Pure: the environment a sandbox's processes get. Terminal variables and SANDBOX; the proxy variables (every client
 * goes through the proxy, the only way out); the LLM base URLs with placeholder keys; where the bridge (and proxy)
 * sockets are; the Bun the shims run on; PATH where sbx sets it. sbx's own variables win over the user's, so a config
 * entry cannot point a client around the proxy.
 */
export function sandboxEnv(name: string, place: EnvPlace, opts: SandboxEnvOptions = {}): Record<string, string> {
  const proxy = `http://127.0.0.1:${place.proxyPort}`;
  const llm: Record<string, string> = {};
  for (const [route, v] of Object.entries(LLM_ROUTES)) {
    llm[v.base] = `${proxy}/llm/${route}${v.suffix}`;
    for (const k of v.keys) llm[k] = PLACEHOLDER_KEY;
  }
  const noProxy = noProxyFor(place.hostname);
  return {
    ...(opts.terminal ? terminalVars(opts.terminal) : {}),
    ...opts.user,
    SANDBOX: name,
    HTTP_PROXY: proxy,
    HTTPS_PROXY: proxy,
    http_proxy: proxy,
    https_proxy: proxy,
    ALL_PROXY: proxy,
    all_proxy: proxy,
    NO_PROXY: noProxy,
    no_proxy: noProxy,
    // Node ≥ 22.21/24.5 honours the proxy variables in fetch only with this set.
    NODE_USE_ENV_PROXY: "1",
    // npm reads its own settings before the variables (a user's .npmrc proxy= would win otherwise).
    npm_config_proxy: proxy,
    npm_config_https_proxy: proxy,
    npm_config_noproxy: noProxy,
    // The JVM reads no proxy variable; these properties are its equivalent (the transparent path catches the rest).
    JAVA_TOOL_OPTIONS: javaProxyOptions(place.proxyPort, place.hostname),
    ...llm,
    ...(place.proxySocket ? { SBX_PROXY_SOCKET: place.proxySocket } : {}),
    SBX_BRIDGE_SOCKET: place.bridgeSocket,
    ...(place.bun ? { SBX_BUN: place.bun } : {}),
    ...(place.path ? { PATH: place.path } : {}),
  };
}
