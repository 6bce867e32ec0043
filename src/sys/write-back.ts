// Rewrites a file someone else owns the format of (an agent's login file) in place: atomically, with its mode kept.
import { chmodSync, renameSync, statSync, writeFileSync } from "node:fs";

/** Replaces `file`'s content with `text`: a temp file beside it with the same mode, then one rename. */
export function writeBack(file: string, text: string): void {
  const mode = statSync(file).mode & 0o777;
  const tmp = `${file}.sbx-${process.pid}`;
  writeFileSync(tmp, text, { mode });
  chmodSync(tmp, mode);
  renameSync(tmp, file);
}
