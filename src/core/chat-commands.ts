// Chat-style allowlist commands (`/allow x`, `/deny x`, `/allowlist`, `/approve N`, `/reject N`) parsed into typed operations; pure.
import { parsePattern } from "./allowlist";

export type AllowlistScope = "sandbox" | "global";

export type ChatCommand =
  | { op: "allow"; patterns: string[]; scope: AllowlistScope }
  | { op: "deny"; patterns: string[]; scope: AllowlistScope }
  | { op: "list" }
  /** `/approve N`, `/reject N`: one pending approval by id (what the bridge asks for, or a host), for its sandbox. */
  | { op: "decide"; id: number; allow: boolean };

/** null: the text is not an allowlist command (ordinary chat); otherwise a command or why it is malformed. */
export type ChatParse = null | { ok: true; command: ChatCommand } | { ok: false; error: string };

const USAGE = "usage: /allow <domain>… [--global], /deny <domain>… [--global], /allowlist, /approve <id>, /reject <id>";

export function parseChatCommand(text: string): ChatParse {
  const words = text.trim().split(/\s+/).filter((w) => w !== "");
  const head = words[0]?.toLowerCase();
  if (head === "/approve" || head === "/reject") {
    const id = words[1] ?? "";
    if (words.length !== 2 || !/^[1-9][0-9]{0,9}$/.test(id)) return { ok: false, error: `${head} takes one approval id (the number in the notice); ${USAGE}` };
    return { ok: true, command: { op: "decide", id: Number(id), allow: head === "/approve" } };
  }
  if (head !== "/allow" && head !== "/deny" && head !== "/allowlist") return null;
  const rest = words.slice(1);
  if (head === "/allowlist") {
    return rest.length === 0 ? { ok: true, command: { op: "list" } } : { ok: false, error: `/allowlist takes no arguments; ${USAGE}` };
  }
  let scope: AllowlistScope = "sandbox";
  const patterns: string[] = [];
  for (const w of rest) {
    if (w === "--global") scope = "global";
    else if (w.startsWith("-")) return { ok: false, error: `unknown option '${w}'; ${USAGE}` };
    else {
      const r = parsePattern(w);
      if (!r.ok) return { ok: false, error: `refused '${w}': ${r.reason}` };
      patterns.push(r.canonical);
    }
  }
  if (patterns.length === 0) return { ok: false, error: `${head} needs a domain; ${USAGE}` };
  return { ok: true, command: { op: head === "/allow" ? "allow" : "deny", patterns, scope } };
}
