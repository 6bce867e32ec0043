// The names of the agents `sbx run AGENT` knows (core/agents has what each one is). Separate and tiny: every CLI start
// loads it to tell an agent from a sandbox name.
export const AGENT_NAMES = ["claude", "codex", "gemini", "opencode", "aider"] as const;
export type AgentName = (typeof AGENT_NAMES)[number];

export function isAgentName(s: string): s is AgentName {
  return (AGENT_NAMES as readonly string[]).includes(s);
}

/**
 * Pure: the agent's arguments only ask it about itself (its version, its help), so it acts on nothing and gets none of
 * the flags that let it act without asking: it answers as it does outside a sandbox (Claude Code answers a bare
 * `--version` without loading its program, ≈0.6 s less than beside a flag). Anything more is a run, flags and all.
 */
export function asksAboutItself(args: readonly string[]): boolean {
  return args.length === 1 && ["--version", "--help", "-h"].includes(args[0]!);
}
