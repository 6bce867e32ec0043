// The LLM variables a sandbox gets: base URLs at the in-sandbox forwarder and placeholder keys (the real ones stay on the host).

export const PLACEHOLDER_KEY = "sbx-placeholder";

/** Pure: the in-sandbox environment for the forwarder on 127.0.0.1:<port>. */
export function llmEnv(forwarderPort: number): Record<string, string> {
  const base = `http://127.0.0.1:${forwarderPort}/llm`;
  return {
    ANTHROPIC_BASE_URL: `${base}/anthropic`,
    ANTHROPIC_API_KEY: PLACEHOLDER_KEY,
    OPENAI_BASE_URL: `${base}/openai/v1`,
    OPENAI_API_KEY: PLACEHOLDER_KEY,
    GOOGLE_GEMINI_BASE_URL: `${base}/google`,
    GEMINI_API_KEY: PLACEHOLDER_KEY,
    GOOGLE_API_KEY: PLACEHOLDER_KEY,
  };
}
