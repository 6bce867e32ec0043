// The one function that decides a sandbox's environment: terminal and locale variables, SANDBOX, the proxy and LLM variables, sbx's sockets and shims.
import { RUNTIME_MOUNT, SOCKET_MOUNT } from "../backend/docker/args";
import { DEFAULT_FORWARDER_PORT, proxyEnv } from "../core/egress";
import { llmEnv } from "../llm/env";
import { terminalVars } from "./terminal-vars";

export { terminalVars };

/** The PATH inside: the git/gh shims first (network git goes to the bridge), then the usual system dirs. */
export const SANDBOX_PATH = `${RUNTIME_MOUNT.shims}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`;

/** The PATH for git that must NOT go through the shims (host → clone ref sync runs the image's own git). */
export const PLAIN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

export interface SandboxEnvOptions {
  /** The in-sandbox forwarder's port (127.0.0.1:<port>). */
  proxyPort?: number;
  /** The user's own `env:` entries (already checked to hold no known secret); applied before sbx's own. */
  user?: Readonly<Record<string, string>>;
}

/**
 * Pure: the environment a sandbox's processes get. Terminal variables and SANDBOX; the proxy variables (every client
 * goes through the forwarder, which is the only way out); the LLM base URLs with placeholder keys; where the proxy and
 * bridge sockets are; the host's Bun for the shims; PATH with the shims first. sbx's own variables win over the
 * user's, so a config entry cannot point a client around the proxy.
 */
export function sandboxEnv(host: Readonly<Record<string, string | undefined>>, name: string, opts: SandboxEnvOptions = {}): Record<string, string> {
  const port = opts.proxyPort ?? DEFAULT_FORWARDER_PORT;
  return {
    ...terminalVars(host),
    ...opts.user,
    SANDBOX: name,
    ...proxyEnv(port),
    ...llmEnv(port),
    SBX_PROXY_SOCKET: `${SOCKET_MOUNT}/proxy.sock`,
    SBX_BRIDGE_SOCKET: `${SOCKET_MOUNT}/bridge.sock`,
    SBX_BUN: RUNTIME_MOUNT.bun,
    PATH: SANDBOX_PATH,
  };
}
