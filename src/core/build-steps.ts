// Pure: the steps of a `docker build`'s output (the classic builder's "Step 3/7 : RUN make", BuildKit's
// "#8 [2/4] RUN make"), for progress that shows step n of m, and a failure that says which step and what it printed.

export interface BuildStep {
  n: number;
  of: number;
  /** The instruction as the builder printed it (from the repo's Dockerfile: shown through terminalLine only). */
  text: string;
}

const CLASSIC = /^Step (\d+)\/(\d+) : (.*)$/;
const BUILDKIT = /^#\d+ \[(?:[^\]]* )?(\d+)\/(\d+)\] (.*)$/;

/** The step a line of build output starts, or null. */
export function parseBuildStep(line: string): BuildStep | null {
  const m = CLASSIC.exec(line) ?? BUILDKIT.exec(line);
  if (!m) return null;
  const n = Number(m[1]);
  const of = Number(m[2]);
  if (!(n >= 1 && of >= n)) return null;
  return { n, of, text: m[3]!.trim() };
}

/** How many of a failed build's last lines are shown. */
export const BUILD_TAIL_LINES = 40;

/** Follows a build's output: the step it is at and its last lines (bounded), fed line by line. */
export class BuildTracker {
  step: BuildStep | null = null;
  private readonly tail: string[] = [];

  line(l: string): BuildStep | null {
    this.tail.push(l);
    if (this.tail.length > BUILD_TAIL_LINES) this.tail.shift();
    const s = parseBuildStep(l);
    if (s) this.step = s;
    return s;
  }

  lastLines(): string[] {
    return [...this.tail];
  }
}
