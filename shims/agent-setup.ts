// agent-setup: run inside a sandbox, as it, each time `sbx run AGENT` starts the agent. Writes sbx's section into the
// agent's user-level instruction file and the settings that spare it a first-run prompt (only keys the person has not
// set). Everything it writes was decided on the host (core/agents agentSetupPlan) and is nothing secret. Bun built-ins
// only; the daemon's tests import the pure parts.
//
//   agent-setup '<plan as JSON>' [HASH STAMP]   (then HASH is written to $HOME/STAMP when everything was applied)
import { existsSync, lstatSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";

export interface Plan {
  instructions: { path: string; section: string };
  setup: Array<
    | { kind: "json-defaults"; path: string; values: Record<string, unknown> }
    | { kind: "file-if-missing"; path: string; content: string }
    | { kind: "file"; path: string; content: string }
    | { kind: "json-set"; path: string; values: Record<string, unknown> }
  >;
}

/** A file bigger than this is not the kind sbx edits: it is left alone. */
const MAX_FILE = 16 << 20;

/** Pure: `text` with sbx's section put in (replacing an earlier one, else added at the end). */
export function withInstructionSection(text: string, section: string): string {
  const begin = text.indexOf("<!-- sbx:begin");
  const endMark = "<!-- sbx:end -->";
  const end = begin === -1 ? -1 : text.indexOf(endMark, begin);
  if (begin !== -1 && end !== -1) {
    let after = end + endMark.length;
    if (text[after] === "\n") after++;
    return text.slice(0, begin) + section + text.slice(after);
  }
  if (text === "") return section;
  return `${text}${text.endsWith("\n") ? "" : "\n"}\n${section}`;
}

/** Pure: `base` with every key of `defaults` it lacks (objects merged key by key; a value already there is kept). */
export function mergeDefaults(base: unknown, defaults: unknown): unknown {
  if (base === undefined) return defaults;
  if (!defaults || typeof defaults !== "object" || Array.isArray(defaults)) return base;
  if (!base || typeof base !== "object" || Array.isArray(base)) return base;
  const out: Record<string, unknown> = { ...(base as Record<string, unknown>) };
  for (const [k, d] of Object.entries(defaults)) out[k] = mergeDefaults(out[k], d);
  return out;
}

/** Pure: `base` with every key of `values` set (objects merged key by key; what `values` does not name is kept). */
export function mergeSet(base: unknown, values: unknown): unknown {
  if (!values || typeof values !== "object" || Array.isArray(values)) return values;
  const b = base && typeof base === "object" && !Array.isArray(base) ? (base as Record<string, unknown>) : {};
  const out: Record<string, unknown> = { ...b };
  for (const [k, v] of Object.entries(values)) out[k] = mergeSet(b[k], v);
  return out;
}

/** The file under $HOME a plan names; a path that climbs out, or is absolute, is refused. */
function under(home: string, rel: string): string {
  const n = normalize(rel);
  if (rel.startsWith("/") || n.startsWith("..") || n.includes("/../")) throw new Error(`not a path under $HOME: ${rel}`);
  return join(home, n);
}

/** The text of a file, "" when missing, null when it is something sbx leaves alone (too big, not a file). */
function read(p: string): string | null {
  if (!existsSync(p)) return "";
  const st = lstatSync(p);
  if (!st.isFile() || st.size > MAX_FILE) return null;
  return readFileSync(p, "utf8");
}

function write(p: string, text: string, mode: number): void {
  mkdirSync(dirname(p), { recursive: true });
  const tmp = `${p}.sbx-${process.pid}`;
  writeFileSync(tmp, text, { mode });
  renameSync(tmp, p);
}

/** Applies the plan; returns whether every part of it was (a part left alone with a warning is retried next start). */
export function apply(plan: Plan, home: string, warn: (m: string) => void): boolean {
  let whole = true;
  const w = (m: string) => {
    whole = false;
    warn(m);
  };
  const ins = under(home, plan.instructions.path);
  const cur = read(ins);
  if (cur === null) w(`${plan.instructions.path} is not a plain file under 16 MiB; sbx's section was not written`);
  else {
    const next = withInstructionSection(cur, plan.instructions.section);
    if (next !== cur) write(ins, next, 0o644);
  }
  for (const s of plan.setup) {
    const p = under(home, s.path);
    const text = read(p);
    if (text === null) {
      w(`${s.path} is not a plain file under 16 MiB; left alone`);
      continue;
    }
    if (s.kind === "file-if-missing") {
      if (text === "" && !existsSync(p)) write(p, s.content, 0o600);
      continue;
    }
    if (s.kind === "file") {
      if (text !== s.content) write(p, s.content, 0o600);
      continue;
    }
    let base: unknown;
    try {
      base = text.trim() === "" ? {} : JSON.parse(text);
    } catch {
      w(`${s.path} is not valid JSON; left alone`);
      continue;
    }
    const next = s.kind === "json-set" ? mergeSet(base, s.values) : mergeDefaults(base, s.values);
    if (JSON.stringify(next) !== JSON.stringify(base)) write(p, `${JSON.stringify(next, null, 2)}\n`, 0o600);
  }
  return whole;
}

if (import.meta.main) {
  const warn = (m: string) => process.stderr.write(`sbx: ${m}\n`);
  try {
    const home = process.env.HOME;
    if (!home || !home.startsWith("/")) throw new Error("HOME is not set");
    const [, , planText = "", hash, stamp] = process.argv;
    if (apply(JSON.parse(planText) as Plan, home, warn) && hash && stamp) write(under(home, stamp), `${hash}\n`, 0o644);
  } catch (e) {
    // The agent still starts: a missing section or default is a prompt more, not a reason to refuse.
    warn(`agent setup: ${(e as Error).message}`);
  }
}
