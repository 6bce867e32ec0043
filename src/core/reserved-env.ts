// The variables sbx sets itself in a sandbox (proxy, LLM, socket, PATH, the JVM's options): nothing a person
// configures or binds may override them. Pure, and apart from config.ts so what checks a name loads no zod.

/** Variables sbx sets itself: a config entry must not be able to point a client around the proxy or the bridge. */
export const RESERVED = /^(PATH|SANDBOX|SBX_.*|HTTPS?_PROXY|https?_proxy|ALL_PROXY|all_proxy|NO_PROXY|no_proxy|NODE_USE_ENV_PROXY|npm_config_(https_)?proxy|npm_config_noproxy|JAVA_TOOL_OPTIONS|[A-Z]+_BASE_URL)$/;

/** Pure: whether sbx sets this variable itself (proxy, LLM, socket, PATH): nothing a person configures may override it. */
export function isReservedEnv(name: string): boolean {
  return RESERVED.test(name);
}
