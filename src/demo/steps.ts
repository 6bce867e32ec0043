// The demo's results: one step per claim (tried, expected, happened, pass), rendered as one line each or as JSON. Pure.

export interface Step {
  /** Stable id, e.g. `blocked-site` (for scripts and the e2e test). */
  id: string;
  /** What was tried, in a few words. */
  tried: string;
  expected: string;
  happened: string;
  pass: boolean;
}

export interface DemoReport {
  ok: boolean;
  steps: Step[];
  /** Lines that explain choices the demo made (base image, loopback allowance, …). */
  notes: string[];
  /** The demo's temporary root (state, repo, upstream), kept only with --keep. */
  root: string;
  kept: boolean;
  /** The demo's own daemon, stopped at the end (null when none was started). */
  daemonPid: number | null;
  /** Set when the run was cut short (^C, SIGTERM). */
  interrupted: boolean;
}

/** A colour seam so this stays pure (the CLI passes its chalk). */
export interface Paint {
  pass(s: string): string;
  fail(s: string): string;
  dim(s: string): string;
}

export const NO_PAINT: Paint = { pass: (s) => s, fail: (s) => s, dim: (s) => s };

/** One line: `PASS  <id>: tried …; expected …; got …`. */
export function renderStep(s: Step, paint: Paint = NO_PAINT): string {
  const mark = s.pass ? paint.pass("PASS") : paint.fail("FAIL");
  return `${mark}  ${s.id}: ${s.tried} ${paint.dim("— expected")} ${s.expected}${paint.dim("; got")} ${s.happened}`;
}

export function summary(steps: readonly Step[]): string {
  const failed = steps.filter((s) => !s.pass).length;
  return failed === 0 ? `all ${steps.length} steps passed` : `${failed} of ${steps.length} steps failed`;
}

/** The agent prints `key=value` lines; the last value of a key wins. Lines of other shapes are ignored. */
export function parseAgentLines(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split("\n")) {
    const m = /^([a-z_]+)=(.*)$/.exec(line);
    if (m) out[m[1]!] = m[2]!.trim();
  }
  return out;
}

/** Shortens text for a one-line report. */
export function clip(s: string, n = 120): string {
  const one = s.replace(/\s+/g, " ").trim();
  return one.length > n ? `${one.slice(0, n - 1)}…` : one;
}
