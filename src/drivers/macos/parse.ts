// Pure parsers of macOS command output: dscl listings and records, `ls -lde[O]` modes and ACLs, pfctl status and tokens.

/** `dscl . -list /Users UniqueID` (or `/Groups PrimaryGroupID`): name → number. */
export function parseDsclList(out: string): Map<string, number> {
  const m = new Map<string, number>();
  for (const line of out.split("\n")) {
    const r = /^(\S+)\s+(-?\d+)\s*$/.exec(line);
    if (r) m.set(r[1]!, Number(r[2]));
  }
  return m;
}

/** `dscl . -read /Users/<u> A B …`: attribute → value (multi-line values joined with a space). */
export function parseDsclRecord(out: string): Map<string, string> {
  const m = new Map<string, string>();
  let last: string | null = null;
  for (const line of out.split("\n")) {
    if (line.trim() === "") continue;
    const r = /^([A-Za-z0-9_:.-]+?):(?: (.*))?$/.exec(line);
    if (r && !line.startsWith(" ")) {
      last = r[1]!;
      m.set(last, r[2] ?? "");
    } else if (last !== null && line.startsWith(" ")) {
      const prev = m.get(last) ?? "";
      m.set(last, prev === "" ? line.trim() : `${prev} ${line.trim()}`);
    }
  }
  return m;
}

export interface LsEntry {
  /** e.g. `drwx------+` */
  modeString: string;
  /** Permission bits parsed from the mode string (0o700). */
  mode: number;
  owner: string;
  /** BSD file flags column (`ls -O`), `-` when none; undefined when -O was not given. */
  flags: string | undefined;
  /** ACL entries as printed (`user:alice allow list,search`), in order. */
  acl: string[];
}

function modeBits(s: string): number {
  const perms = s.slice(1, 10);
  let n = 0;
  for (let i = 0; i < 9; i++) {
    const c = perms[i] ?? "-";
    if (c !== "-" && c !== "S" && c !== "T") n |= 1 << (8 - i);
  }
  return n;
}

/** `ls -lde path` or `ls -ldeO path` (withFlags) of one entry. */
export function parseLsEntry(out: string, withFlags: boolean): LsEntry | null {
  const lines = out.split("\n").filter((l) => l.trim() !== "");
  const head = lines[0];
  if (!head) return null;
  const t = head.trim().split(/\s+/);
  if (t.length < 4 || !/^[-dlsp][-rwxsStT]{9}[+@]?$/.test(t[0]!)) return null;
  const acl = lines.slice(1).flatMap((l) => {
    const r = /^\s*\d+:\s+(.*?)\s*$/.exec(l);
    return r ? [r[1]!] : [];
  });
  return { modeString: t[0]!, mode: modeBits(t[0]!), owner: t[2]!, flags: withFlags ? t[4] : undefined, acl };
}

/** True when `acl` has an entry for `principal` (`user:<name>`) allowing at least `perms` (order-free). */
export function aclGrants(acl: readonly string[], principal: string, perms: readonly string[]): boolean {
  return acl.some((e) => {
    const r = /^(\S+)\s+(?:inherited\s+)?allow\s+(\S+)$/.exec(e);
    if (!r || r[1] !== principal) return false;
    const have = new Set(r[2]!.split(","));
    return perms.every((p) => have.has(p));
  });
}

/** `pfctl -s info`: whether pf is enabled. */
export function parsePfEnabled(out: string): boolean {
  return /^Status:\s+Enabled\b/m.test(out);
}

/** `pfctl -E` prints `Token : <n>` (on stderr on the releases seen; both streams are searched). */
export function parsePfToken(out: string): string | null {
  const r = /Token\s*:\s*(\d+)/.exec(out);
  return r ? r[1]! : null;
}

/** `pfctl -s References`: the enable tokens currently held (rows `<pid> <process> <token> <timestamp>`). */
export function parsePfReferences(out: string): string[] {
  const tokens: string[] = [];
  for (const line of out.split("\n")) {
    const r = /^\s*\d+\s+\S+\s+(\d{6,})\b/.exec(line);
    if (r) tokens.push(r[1]!);
  }
  return tokens;
}

/** `pfctl -a com.apple -s Anchors`: child anchor names, one a line (`com.apple/sbx_7000`). */
export function parsePfAnchors(out: string): string[] {
  return out
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "");
}
