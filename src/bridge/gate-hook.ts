// A push held at the gate's pre-push hook: the hook (written by the bridge), the lines it reports (the refs the push
// would update), and the verdict channel (a FIFO only the bridge writes) that lets the push go on or stops it.
import { chmodSync, closeSync, constants, lstatSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { mkdir0700, scratchDir, type Gate, type GatePaths } from "./gate-git";

/** The lines the pre-push hook writes to the push's stderr (read and removed by the bridge): each ref the push would update, with what the remote has now. */
export const HOOK_REF = "sbx-gate-ref";
export const HOOK_REFS_END = "sbx-gate-refs-end";

/**
 * The gate's pre-push hook. git runs it after the remote's ref advertisement and before it packs or sends
 * anything. It reports each ref the push would update, with the remote's current value, on the push's
 * stderr (the bridge reads and removes those lines: its fast-forward check), then waits for one line on
 * the push's own FIFO and lets the push go on only if that line is `ok <nonce>`.
 * It never waits for ever: the FIFO is opened read-write first (which does not block), so the read-only
 * open after it returns at once, and the read-write end is closed again. From then on the bridge, which
 * holds the FIFO open from before the push starts, is its only writer: the read returns the verdict, or
 * end-of-file as soon as the bridge is gone, whether it died before the hook opened the FIFO or after.
 * SIGPIPE is ignored, so a dead bridge (its end of stderr gone) cannot end the hook in a way that passes.
 * Every way out but `ok <nonce>` exits non-zero. POSIX sh only (dash, macOS sh).
 */
export const PRE_PUSH_HOOK = `#!/bin/sh
# sbx gate: hold this push until the bridge's secret scan has passed (written by sbx; not the sandbox's).
test -n "$SBX_VERDICT_FIFO" && test -n "$SBX_VERDICT_NONCE" || exit 1
trap '' PIPE
while read -r lr lo rr ro; do printf '\\n${HOOK_REF} %s %s %s %s\\n' "$SBX_VERDICT_NONCE" "$rr" "$ro" "$lo" >&2; done
printf '\\n${HOOK_REFS_END} %s\\n' "$SBX_VERDICT_NONCE" >&2
exec 3<>"$SBX_VERDICT_FIFO" 4<"$SBX_VERDICT_FIFO" 3>&-
v=
read -r v <&4
test "$v" = "ok $SBX_VERDICT_NONCE"
`;
/** A ref the held push would update, as its pre-push hook saw it: what the remote has now (zeros: nothing). */
export interface HookRef {
  remoteRef: string;
  remoteSha: string;
  localSha: string;
}

/**
 * Takes the pre-push hook's lines out of the push's stderr (passing everything else on, in order) and
 * resolves `refs` when the hook has listed them all. Only lines with this push's nonce count.
 */
export function hookRefsReader(nonce: string, emit: (s: string) => void): { write(s: string): void; end(): void; refs: Promise<HookRef[]> } {
  let resolve!: (r: HookRef[]) => void;
  const refs = new Promise<HookRef[]>((r) => (resolve = r));
  const seen: HookRef[] = [];
  const marker = new RegExp(`\\n(?:${HOOK_REF} ${nonce} (\\S+) ([0-9a-f]{40,64}) (\\S+)|${HOOK_REFS_END} ${nonce})\\n`);
  const start = `\n${HOOK_REF.slice(0, HOOK_REF.lastIndexOf("-"))}`;
  let buf = "";
  return {
    refs,
    write(s) {
      buf += s;
      for (let m = marker.exec(buf); m; m = marker.exec(buf)) {
        if (m.index > 0) emit(buf.slice(0, m.index));
        buf = buf.slice(m.index + m[0].length);
        if (m[1] !== undefined) seen.push({ remoteRef: m[1], remoteSha: m[2]!, localSha: m[3]! });
        else resolve(seen);
      }
      // Hold back only what may be the start of a marker still arriving.
      let keep = buf.lastIndexOf(start);
      if (keep !== -1 && buf.indexOf("\n", keep + 1) !== -1) keep = -1;
      if (keep === -1) for (let k = Math.min(start.length - 1, buf.length); k > 0; k--) if (start.startsWith(buf.slice(buf.length - k))) { keep = buf.length - k; break; }
      if (keep === -1) keep = buf.length;
      if (keep > 0) emit(buf.slice(0, keep));
      buf = buf.slice(keep);
    },
    end() {
      if (buf) emit(buf);
      buf = "";
    },
  };
}

/**
 * (Re)writes the pre-push hook unless it is already exactly ours: a regular 0700 file in the host-owned gate.
 * Checked before every push, because a hook that is missing or not executable is skipped by git.
 */
export function ensurePrePushHook(paths: GatePaths): void {
  const file = join(paths.hooks, "pre-push");
  const st = lstatSync(file, { throwIfNoEntry: false });
  if (st && st.isFile() && (st.mode & 0o777) === 0o700 && readFileSync(file, "utf8") === PRE_PUSH_HOOK) return;
  mkdir0700(paths.hooks);
  rmSync(file, { force: true, recursive: true });
  writeFileSync(file, PRE_PUSH_HOOK, { mode: 0o700 });
  chmodSync(file, 0o700);
}

/** One push's verdict channel: a FIFO in a fresh 0700 scratch dir, held open (read-write) by the bridge. */
export interface Verdict {
  fifo: string;
  nonce: string;
  fd: number;
  dir: string;
}

/**
 * Makes the FIFO and opens it read-write (never blocks; keeps the pipe alive until the bridge closes it).
 * runs: mkfifo -m 600 <gate>/tmp/v-<random>/verdict
 */
export async function openVerdict(g: Gate): Promise<Verdict> {
  const dir = scratchDir(g, "v");
  mkdir0700(dir);
  const fifo = join(dir, "verdict");
  await g.exec.run(["mkfifo", "-m", "600", fifo], { env: { PATH: g.path, LC_ALL: "C" }, replaceEnv: true, cwd: dir });
  const fd = openSync(fifo, constants.O_RDWR | constants.O_NONBLOCK);
  return { fifo, nonce: randomBytes(16).toString("hex"), fd, dir };
}

/** Writes the verdict the hook waits for: `ok <nonce>` lets the push proceed, anything else stops it. */
export function giveVerdict(v: Verdict, ok: boolean): void {
  writeSync(v.fd, ok ? `ok ${v.nonce}\n` : "no\n");
}

export function closeVerdict(v: Verdict): void {
  try {
    closeSync(v.fd);
  } catch {}
  rmSync(v.dir, { recursive: true, force: true });
}
