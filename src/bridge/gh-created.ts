// What a sandbox opened on its forge through the bridge (pull requests, issues, gists): the gh changes it may make
// without asking. Kept in its gate dir (host-owned, 0700; gone with the sandbox), never where the sandbox can write.
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { GH_TARGET, ghTargetKey } from "../core/bridge-settings";

/** How many it remembers (the newest): a bound on what one sandbox can make the daemon keep. */
export const MAX_CREATED = 2000;

/** The keys (`ghTargetKey`) recorded in `file`; none when there is no file. */
export function readCreated(file: string): Set<string> {
  let text = "";
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return new Set();
  }
  return new Set(text.split("\n").filter((l) => GH_TARGET.test(l)));
}

/** Adds keys to `file` (written whole beside it and renamed over it, 0600), keeping the newest MAX_CREATED. */
export function recordCreated(file: string, keys: readonly string[]): void {
  if (keys.length === 0) return;
  const all = [...readCreated(file), ...keys.filter((k) => GH_TARGET.test(k))];
  const kept = [...new Set(all.reverse())].slice(0, MAX_CREATED).reverse();
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${kept.join("\n")}\n`, { mode: 0o600 });
  renameSync(tmp, file);
}

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * Pure: what a successful `gh pr create`, `gh issue create` or `gh gist create` made, from its stdout. gh prints the new
 * thing's URL and nothing else there; anything more (a dry run's preview, which carries the sandbox's own title and
 * body) is not taken, nor a URL of another repository. Only the number counts, never the pull request's branch: gh
 * picks a branch's pull request itself, and a colleague may have another open from the same branch.
 */
export function createdKeys(host: string, repo: string, group: string, stdout: string): string[] {
  const lines = stdout.split("\n").map((l) => l.trim()).filter((l) => l !== "");
  if (lines.length !== 1) return [];
  const url = lines[0]!;
  if (group === "gist") {
    const m = new RegExp(`^https://(?:gist\\.${escape(host)}|${escape(host)}/gist)/(?:[A-Za-z0-9-]{1,100}/)?([0-9a-f]{1,64})$`, "i").exec(url);
    return m ? [ghTargetKey(host, repo, { kind: "gist", id: m[1]!.toLowerCase() })] : [];
  }
  const what = group === "pr" ? "pull" : "issues";
  const m = new RegExp(`^https://${escape(host)}/${escape(repo)}/${what}/([1-9]\\d{0,8})$`, "i").exec(url);
  if (!m) return [];
  return [ghTargetKey(host, repo, { kind: "number", id: m[1]! })].filter((k) => GH_TARGET.test(k));
}
