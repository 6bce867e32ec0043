// Chat-style allowlist commands (`/allow x [--for 30m|--once]`, `/deny x`, `/allowlist`, `/approve N [for 30m|once]`,
// `/reject N`) parsed into typed operations; pure.
import { parseFor, type AllowTerm } from "./allow-term";
import { parsePattern } from "./allowlist";

export type AllowlistScope = "sandbox" | "global";

export type ChatCommand =
  /** `term`: for a time or once (absent: for good). */
  | { op: "allow"; patterns: string[]; scope: AllowlistScope; term?: AllowTerm }
  | { op: "deny"; patterns: string[]; scope: AllowlistScope }
  | { op: "list" }
  /** `/approve N`, `/reject N`: one pending approval by id (what the bridge asks for, or a host), for its sandbox. */
  | { op: "decide"; id: number; allow: boolean; term?: AllowTerm };

/** null: the text is not an allowlist command (ordinary chat); otherwise a command or why it is malformed. */
export type ChatParse = null | { ok: true; command: ChatCommand } | { ok: false; error: string };

const USAGE = "usage: /allow <domain>… [--global] [--for 30m | --once], /deny <domain>… [--global], /allowlist, /approve <id> [for 30m | once], /reject <id>";

export function parseChatCommand(text: string): ChatParse {
  const words = text.trim().split(/\s+/).filter((w) => w !== "");
  const head = words[0]?.toLowerCase();
  if (head === "/approve" || head === "/reject") {
    const id = words[1] ?? "";
    if (!/^[1-9][0-9]{0,9}$/.test(id)) return { ok: false, error: `${head} takes one approval id (the number in the notice); ${USAGE}` };
    const rest = words.slice(2).map((w) => w.toLowerCase());
    if (rest.length === 0) return { ok: true, command: { op: "decide", id: Number(id), allow: head === "/approve" } };
    // `/approve N once`, `/approve N for 30m`: how long it lasts (an allow only).
    const ms = rest.length === 2 && rest[0] === "for" ? parseFor(rest[1]!) : null;
    const term: AllowTerm | null = rest.length === 1 && rest[0] === "once" ? { kind: "once" } : ms !== null ? { kind: "for", ms } : null;
    if (head === "/reject" || term === null) return { ok: false, error: `${head} ${id} takes ${head === "/approve" ? "nothing more, `once`, or `for 30m` (s, m, h, d)" : "nothing more"}; ${USAGE}` };
    return { ok: true, command: { op: "decide", id: Number(id), allow: true, term } };
  }
  if (head !== "/allow" && head !== "/deny" && head !== "/allowlist") return null;
  const rest = words.slice(1);
  if (head === "/allowlist") {
    return rest.length === 0 ? { ok: true, command: { op: "list" } } : { ok: false, error: `/allowlist takes no arguments; ${USAGE}` };
  }
  let scope: AllowlistScope = "sandbox";
  let term: AllowTerm | null = null;
  const patterns: string[] = [];
  for (let i = 0; i < rest.length; i++) {
    const w = rest[i]!;
    if (w === "--global") scope = "global";
    else if (head === "/allow" && w === "--once") term = { kind: "once" };
    else if (head === "/allow" && w === "--for") {
      const ms = parseFor(rest[++i] ?? "");
      if (ms === null) return { ok: false, error: `--for takes a time from 1s to 90d (30m, 2h, 1d); ${USAGE}` };
      term = { kind: "for", ms };
    } else if (w.startsWith("-")) return { ok: false, error: `unknown option '${w}'; ${USAGE}` };
    else {
      const r = parsePattern(w);
      if (!r.ok) return { ok: false, error: `refused '${w}': ${r.reason}` };
      patterns.push(r.canonical);
    }
  }
  if (patterns.length === 0) return { ok: false, error: `${head} needs a domain; ${USAGE}` };
  if (head === "/allow") return { ok: true, command: { op: "allow", patterns, scope, ...(term ? { term } : {}) } };
  return { ok: true, command: { op: "deny", patterns, scope } };
}
