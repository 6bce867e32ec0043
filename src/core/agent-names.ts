// The names of the agents `sbx run AGENT` knows (core/agents has what each one is). Separate and tiny: every CLI start
// loads it to tell an agent from a sandbox name.
export const AGENT_NAMES = ["claude", "codex", "gemini", "opencode", "aider"] as const;
export type AgentName = (typeof AGENT_NAMES)[number];

export function isAgentName(s: string): s is AgentName {
  return (AGENT_NAMES as readonly string[]).includes(s);
}
