// What the steps of `sbx demo` run: the demo's own sbx (its own state), the agent script inside the sandbox, git with no
// config of the caller's, docker's view of the sandbox, and a step's record (kept, and printed at once).
import type { Exec, ExecResult } from "../sys/exec";
import type { Paths } from "../sys/paths";
import { defaultDaemonArgv } from "../client/autostart";
import { clip, parseAgentLines, type Step } from "./steps";
import { cleanGitEnv } from "./upstream";

export const SANDBOX = "demo";

export interface DemoHooks {
  /** A finished step (printed at once by the CLI). */
  step(s: Step): void;
  /** A note on a choice the demo made (stderr). */
  note(line: string): void;
  /** Progress of slow work (image build), raw chunks (stderr). */
  progress(chunk: string): void;
}

/** The sbx CLI as a command: the same binary (compiled) or bun with the CLI's entry. */
function sbxArgv(): string[] {
  return defaultDaemonArgv().slice(0, -1);
}

export interface Ctx {
  exec: Exec;
  root: string;
  repo: string;
  env: Record<string, string>;
  paths: Paths;
  hooks: DemoHooks;
}

export async function sbx(c: Ctx, args: string[], o: { stdin?: string; timeoutMs?: number; progress?: boolean } = {}): Promise<ExecResult> {
  return c.exec.run([...sbxArgv(), ...args], {
    cwd: c.repo,
    env: c.env,
    replaceEnv: true,
    check: false,
    timeoutMs: o.timeoutMs ?? 120_000,
    ...(o.stdin !== undefined ? { stdin: o.stdin } : {}),
    ...(o.progress ? { onStderr: c.hooks.progress } : {}),
  });
}

/** runs: sbx shell demo -- bash agent.sh <phase> … (inside the sandbox) */
export async function agent(c: Ctx, phase: string, ...args: string[]): Promise<{ r: ExecResult; kv: Record<string, string> }> {
  const r = await sbx(c, ["shell", SANDBOX, "--", "bash", "agent.sh", phase, ...args], { timeoutMs: 120_000 });
  return { r, kv: parseAgentLines(r.stdout) };
}

/** Why a command failed, in one line (its last stderr line). */
export function why(r: ExecResult): string {
  const last = (r.stderr.trim().split("\n").filter(Boolean).slice(-2).join(" | ") || r.stdout.trim().split("\n").slice(-1)[0]) ?? "";
  return `exit ${r.exitCode}${last ? `: ${clip(last, 160)}` : ""}`;
}

/** runs: git <args> in a dir with no config of the caller's (identity given on the command line). */
export async function git(c: Ctx, cwd: string, args: string[], env: Record<string, string> = {}): Promise<ExecResult> {
  return c.exec.run(["git", "-c", "user.name=sbx demo", "-c", "user.email=demo@sbx.invalid", "-c", "commit.gpgsign=false", ...args], {
    cwd,
    env: { ...cleanGitEnv(c.env.PATH ?? "/usr/bin:/bin"), ...env },
    replaceEnv: true,
    check: false,
    timeoutMs: 60_000,
  });
}

/** runs: docker inspect --format … on the demo sandbox's container (found by its sbx labels). */
export async function containerState(c: Ctx): Promise<{ id: string; started: string; image: string } | null> {
  const ids = await c.exec.run(["docker", "ps", "--all", "--quiet", "--no-trunc", "--filter", `label=sbx.repo=${c.repo}`, "--filter", "label=sbx.role=sandbox"], { check: false });
  const id = ids.stdout.trim().split("\n").filter(Boolean)[0];
  if (!id) return null;
  const r = await c.exec.run(["docker", "inspect", "--format", "{{.State.StartedAt}} {{.Config.Image}}", id], { check: false });
  if (r.exitCode !== 0) return null;
  const [started = "", image = ""] = r.stdout.trim().split(" ");
  return { id, started, image };
}

export function step(c: Ctx, steps: Step[], s: Step): void {
  steps.push(s);
  c.hooks.step(s);
}

export function agentFailure(r: ExecResult, kv: Record<string, string>): string {
  if (r.exitCode !== 0 && Object.keys(kv).length === 0) return `the agent could not run: ${why(r)}`;
  const bits = Object.entries(kv).map(([k, v]) => `${k}=${clip(v, 80)}`);
  return clip(bits.join(" "), 240) || why(r);
}
