// .dockerignore as the docker CLI reads it (moby's ignorefile and patternmatcher): which paths of a build context are
// left out. sbx makes the build context itself (drivers/docker/build-context.ts), so it applies the file as docker would.
import { SbxError } from "./errors";

/** Go's path.Clean for a slash-separated path: no empty, `.` or resolvable `..` elements; "" becomes ".". */
export function cleanPath(p: string): string {
  if (p === "") return ".";
  const rooted = p.startsWith("/");
  const out: string[] = [];
  for (const part of p.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") {
      if (out.length > 0 && out[out.length - 1] !== "..") out.pop();
      else if (!rooted) out.push("..");
      continue;
    }
    out.push(part);
  }
  const s = out.join("/");
  return rooted ? `/${s}` : s === "" ? "." : s;
}

/**
 * Pure: the patterns of a .dockerignore (ignorefile.ReadAll): a BOM dropped, `#` lines skipped, each line trimmed,
 * cleaned, a leading `/` dropped, `!` kept as an exception.
 */
export function parseDockerignore(text: string): string[] {
  const out: string[] = [];
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/);
  for (const line of lines) {
    if (line.startsWith("#")) continue;
    let p = line.trim();
    if (p === "") continue;
    const invert = p.startsWith("!");
    if (invert) p = p.slice(1).trim();
    if (p.length > 0) {
      p = cleanPath(p);
      if (p.length > 1 && p.startsWith("/")) p = p.slice(1);
    }
    out.push(invert ? `!${p}` : p);
  }
  return out;
}

interface Pattern {
  exclusion: boolean;
  match: (path: string) => boolean;
}

/** Regexp characters with no meaning in a Go filepath pattern, escaped (patternmatcher's shouldEscape). */
const ESCAPED = new Set([...".+()|{}$"]);

/** patternmatcher's Pattern.compile: an exact, prefix (`a/**`), suffix (`**` first) or regexp match. */
function compile(cleaned: string): (path: string) => boolean {
  let re = "^";
  let kind: "exact" | "prefix" | "suffix" | "regexp" = "exact";
  const chars = [...cleaned];
  // `step` counts tokens as the scanner takes them (its `i`): `**` as the first token makes a suffix match.
  for (let i = 0, step = 0; i < chars.length; i++, step++) {
    const ch = chars[i]!;
    if (ch === "*") {
      if (chars[i + 1] === "*") {
        i++;
        if (chars[i + 1] === "/") i++;
        if (i + 1 >= chars.length) {
          if (kind === "exact") kind = "prefix";
          else {
            re += ".*";
            kind = "regexp";
          }
        } else {
          re += "(.*/)?";
          kind = "regexp";
        }
        if (step === 0) kind = "suffix";
      } else {
        re += "[^/]*";
        kind = "regexp";
      }
    } else if (ch === "?") {
      re += "[^/]";
      kind = "regexp";
    } else if (ESCAPED.has(ch)) {
      re += `\\${ch}`;
    } else if (ch === "\\") {
      if (i + 1 < chars.length) {
        re += `\\${chars[++i]}`;
        kind = "regexp";
      } else re += "\\\\";
    } else if (ch === "[" || ch === "]") {
      re += ch;
      kind = "regexp";
    } else re += ch;
  }
  switch (kind) {
    case "exact":
      return (p) => p === cleaned;
    case "prefix": {
      const prefix = cleaned.slice(0, -2);
      return (p) => p.startsWith(prefix);
    }
    case "suffix": {
      const suffix = cleaned.slice(2);
      return (p) => p.endsWith(suffix) || (suffix.startsWith("/") && p === suffix.slice(1));
    }
    case "regexp": {
      let r: RegExp;
      try {
        r = new RegExp(`${re}$`, "s");
      } catch {
        throw new SbxError("config", `.dockerignore: ${JSON.stringify(cleaned)} is not a valid pattern`, { hint: "Fix the line in .dockerignore (docker refuses it too)." });
      }
      return (p) => r.test(p);
    }
  }
}

/**
 * Pure: whether a context path (slash-separated, relative) is left out by these patterns, its parent dirs matched too,
 * the last matching pattern deciding (patternmatcher's MatchesOrParentMatches); "." is never left out.
 */
export function dockerignoreMatcher(patterns: readonly string[]): (path: string) => boolean {
  const ps: Pattern[] = [];
  for (const raw of patterns) {
    let p = raw.trim();
    if (p === "") continue;
    p = cleanPath(p);
    const exclusion = p.startsWith("!");
    if (exclusion) {
      if (p.length === 1) throw new SbxError("config", '.dockerignore: "!" alone is not a pattern', { hint: "Fix the line in .dockerignore (docker refuses it too)." });
      p = p.slice(1);
    }
    ps.push({ exclusion, match: compile(p) });
  }
  return (file) => {
    const f = cleanPath(file);
    if (f === "." || ps.length === 0) return false;
    const slash = f.lastIndexOf("/");
    const parents = slash < 0 ? [] : f.slice(0, slash).split("/");
    let matched = false;
    for (const p of ps) {
      if (p.exclusion !== matched) continue;
      let m = p.match(f);
      for (let i = 0; !m && i < parents.length; i++) m = p.match(parents.slice(0, i + 1).join("/"));
      if (m) matched = !p.exclusion;
    }
    return matched;
  };
}
