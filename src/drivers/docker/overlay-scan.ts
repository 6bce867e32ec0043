// What an overlay would show inside, read for secrets before a sandbox gets it: the host's own secret values (in every
// form secretForms names) and secret-shaped strings, in the files of the dirs to be overlaid.
import { lstatSync, readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { hostSecretPatterns } from "../../core/redact";
import { SECRET_PATTERNS, type SecretPattern } from "../../core/secrets";

/** Bounds on the read: overlays are config dirs, not data. */
export const OVERLAY_SCAN_LIMITS = { files: 5000, fileBytes: 1 << 20, totalBytes: 32 << 20 } as const;

export interface OverlayFinding {
  /** The file, `~`-relative when under home. */
  file: string;
  line: number;
  what: string;
}

/** Host secret values worth looking for: the sbx secrets file's, and the environment's with a secret's kind of name. */
export function hostSecretValues(env: Readonly<Record<string, string>>, secretsFile: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = { ...secretsFile };
  for (const [k, v] of Object.entries(env)) if (/TOKEN|KEY|SECRET|PASSWORD|CREDENTIAL/i.test(k) && v.length >= 8 && out[k] === undefined) out[k] = v;
  return out;
}

/**
 * Reads the regular files under `roots` (no symlink followed; `only` narrows a root to some of its entries) and reports
 * each line that holds a host secret's value or a secret shape. Stops at the bounds (what is past them is not read:
 * the caller says so).
 */
export function scanOverlays(roots: ReadonlyArray<{ dir: string; only?: readonly string[] }>, values: Readonly<Record<string, string>>, home: string): { findings: OverlayFinding[]; truncated: boolean } {
  const patterns: SecretPattern[] = [...hostSecretPatterns(values), ...SECRET_PATTERNS];
  const findings: OverlayFinding[] = [];
  let files = 0;
  let bytes = 0;
  let truncated = false;
  const show = (p: string) => (p.startsWith(`${home}/`) ? `~/${relative(home, p)}` : p);
  const walk = (p: string): void => {
    if (truncated) return;
    let st;
    try {
      st = lstatSync(p);
    } catch {
      return;
    }
    if (st.isDirectory()) {
      let names: string[] = [];
      try {
        names = readdirSync(p);
      } catch {
        return;
      }
      for (const n of names) walk(join(p, n));
      return;
    }
    if (!st.isFile() || st.size > OVERLAY_SCAN_LIMITS.fileBytes) return;
    if (++files > OVERLAY_SCAN_LIMITS.files || (bytes += st.size) > OVERLAY_SCAN_LIMITS.totalBytes) {
      truncated = true;
      return;
    }
    let text: string;
    try {
      text = readFileSync(p, "latin1");
    } catch {
      return;
    }
    const lines = text.split("\n");
    for (let i = 0; i < lines.length; i++) {
      const hit = patterns.find((x) => x.regex.test(lines[i]!));
      if (hit) findings.push({ file: show(p), line: i + 1, what: hit.description });
    }
  };
  for (const r of roots) for (const p of r.only ? r.only.map((e) => join(r.dir, e)) : [r.dir]) walk(p);
  return { findings, truncated };
}
