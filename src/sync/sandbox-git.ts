// git run AS THE SANDBOX in its own clone: the only way the host learns what a clone holds. Its output is untrusted.
import { printable } from "../core/printable";
import type { StreamedRun } from "../sys/exec";

/**
 * Runs `git <args>` in the sandbox's clone with the sandbox's identity and view (Docker: its exec agent, `docker exec`,
 * or a one-off container of its image with the clone read-only; user accounts: the guest). stdin is given whole.
 */
export type SandboxGit = (args: string[], stdin?: string) => StreamedRun;

/**
 * Options every sandbox-side git sbx starts gets: the clone's hooks (reference-transaction on update-ref) and fsmonitor
 * never run on sbx's behalf, so nothing its config names outlives the command or runs behind a stopped sandbox's back.
 */
export const SANDBOX_GIT_SAFE: readonly string[] = ["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"];

/** What ref sync may ask of a sandbox: read its clone (any time), or change its refs (only while it runs). */
export type SandboxGitMode = "read" | "write";

const OID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

export function isOid(s: string): boolean {
  return OID.test(s);
}

/**
 * A ref name from a sandbox the host will write under its own name: `git check-ref-format` rules, and printable ASCII
 * only (no controls, no space, no bytes a terminal or a bidi algorithm could act on). Stricter than git, on purpose.
 */
export function isValidRefName(name: string): boolean {
  if (name.length === 0 || name.length > 1024 || name.endsWith("/") || name.endsWith(".")) return false;
  if (name.includes("..") || name.includes("@{") || name === "@") return false;
  if (/[^\x21-\x7e]|[~^:?*[\\]/.test(name)) return false;
  return name.split("/").every((c) => c.length > 0 && !c.startsWith(".") && !c.endsWith(".lock"));
}

/** Reads a run's stdout as text, at most `max` bytes (more is an error: the sandbox chose the size). */
export async function collectText(run: StreamedRun, max: number): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  const chunks: Uint8Array[] = [];
  let n = 0;
  let over = false;
  const reader = run.stdout.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    n += value.length;
    if (n > max) {
      over = true;
      await reader.cancel().catch(() => undefined);
      break;
    }
    chunks.push(value);
  }
  const end = await run.done;
  if (over) return { exitCode: end.exitCode === 0 ? 1 : end.exitCode, stdout: "", stderr: `output over ${max} bytes` };
  return { exitCode: end.exitCode, stdout: new TextDecoder().decode(Buffer.concat(chunks)), stderr: end.stderr };
}

export interface SandboxRefs {
  /** Branch (the part after refs/heads/) → object id. */
  branches: Map<string, string>;
  /** What HEAD resolves to, when it does. */
  head?: string;
  /** Lines left out, and why (a bad name, a bad id): audited, never written to the host. */
  skipped: string[];
}

/** Pure: `git show-ref --head --heads` output from a sandbox, validated line by line. */
export function parseSandboxRefs(text: string, maxRefs = 50_000): SandboxRefs {
  const out: SandboxRefs = { branches: new Map(), skipped: [] };
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const i = line.indexOf(" ");
    const oid = i > 0 ? line.slice(0, i) : "";
    const ref = i > 0 ? line.slice(i + 1) : line;
    if (!isOid(oid)) {
      out.skipped.push(`${printable(ref.slice(0, 200))}: not an object id`);
      continue;
    }
    if (ref === "HEAD") {
      out.head = oid;
      continue;
    }
    if (!ref.startsWith("refs/heads/") || !isValidRefName(ref) || ref.slice("refs/heads/".length) === "HEAD") {
      out.skipped.push(`${printable(ref.slice(0, 200))}: not a branch name sbx takes`);
      continue;
    }
    if (out.branches.size >= maxRefs) {
      out.skipped.push(`more than ${maxRefs} branches: the rest left out`);
      break;
    }
    out.branches.set(ref.slice("refs/heads/".length), oid);
  }
  return out;
}

/** Pure: the object count in a pack's header (bytes 8..11), or null when these are not a pack's first 12 bytes. */
export function packObjectCount(head: Uint8Array): number | null {
  if (head.length < 12 || head[0] !== 0x50 || head[1] !== 0x41 || head[2] !== 0x43 || head[3] !== 0x4b) return null;
  return ((head[8]! << 24) | (head[9]! << 16) | (head[10]! << 8) | head[11]!) >>> 0;
}
