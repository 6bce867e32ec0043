// Shared benchmark helpers: time a thing and its baseline in the same run, print both and the ratio.

export interface Sample {
  median: number;
  p90: number;
  min: number;
  runs: number;
}

/** Runs fn `runs` times after `warmup` untimed runs; returns milliseconds. */
export async function time(fn: () => unknown | Promise<unknown>, runs = 20, warmup = 2): Promise<Sample> {
  for (let i = 0; i < warmup; i++) await fn();
  const xs: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await fn();
    xs.push(performance.now() - t);
  }
  return summarize(xs);
}

/**
 * Times a thing and its baseline in alternation (a, b, a, b, …) after `warmup` untimed rounds, so load that comes and
 * goes on a shared machine weighs on both alike; returns both samples in milliseconds.
 */
export async function timePair(
  a: () => unknown | Promise<unknown>,
  b: () => unknown | Promise<unknown>,
  runs = 10,
  warmup = 1,
): Promise<{ a: Sample; b: Sample }> {
  for (let i = 0; i < warmup; i++) {
    await a();
    await b();
  }
  const xa: number[] = [];
  const xb: number[] = [];
  for (let i = 0; i < runs; i++) {
    let t = performance.now();
    await a();
    xa.push(performance.now() - t);
    t = performance.now();
    await b();
    xb.push(performance.now() - t);
  }
  return { a: summarize(xa), b: summarize(xb) };
}

export function summarize(xs: number[]): Sample {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
  return { median: at(0.5), p90: at(0.9), min: s[0] ?? NaN, runs: s.length };
}

export interface Comparison {
  name: string;
  unit: string;
  value: number;
  baselineName: string;
  baseline: number;
  /** "lower" when smaller values are better (latency), "higher" for throughput. */
  better: "lower" | "higher";
  /** Target ratio from the issue, if any (value/baseline). */
  target?: number;
}

/** Prints one line per comparison: `name: value unit vs baseline value unit → ratio`. Machine-readable with --json. */
export function report(cs: Comparison[]): void {
  const json = process.argv.includes("--json");
  for (const c of cs) {
    const ratio = c.value / c.baseline;
    if (json) {
      console.log(JSON.stringify({ ...c, ratio }));
      continue;
    }
    const target =
      c.target === undefined ? "" : ` (target ${c.better === "lower" ? "≤" : "≥"} ${c.target}x: ${
        (c.better === "lower" ? ratio <= c.target : ratio >= c.target) ? "met" : "NOT met"
      })`;
    console.log(
      `${c.name}: ${fmt(c.value)} ${c.unit} vs ${c.baselineName}: ${fmt(c.baseline)} ${c.unit} → ratio ${ratio.toFixed(2)}x${target}`,
    );
  }
}

function fmt(n: number): string {
  return n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2);
}
