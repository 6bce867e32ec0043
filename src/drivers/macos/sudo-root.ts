// The host user's side of the root helper's wire: one request through `sudo -n` to privileged.ts, its answer or its
// error (a typed SbxError the helper wrote on its last stderr line) read back.
import { z } from "zod";
import { SbxError } from "../../core/errors";
import { ExecError, type Exec } from "../../sys/exec";
import { BIN } from "./bin";
import type { RootOp, RootRunner } from "./privileged";

/** The argv the host user runs for one request: `sudo -n <helper…> '<json>'`. Pure. */
export function sudoHelperArgv(helperArgv: readonly string[], op: RootOp): string[] {
  return [BIN.sudo, "-n", ...helperArgv, JSON.stringify(op)];
}

const WireResult = z.object({ changed: z.boolean(), out: z.string() });
const WireError = z.object({ error: z.string(), message: z.string(), hint: z.string() });

/**
 * The production runner: each request goes through `sudo -n` to the root helper.
 * runs: sudo -n <bun> <privileged.js> '<json>'
 */
export function sudoRoot(exec: Exec, helperArgv: readonly string[]): RootRunner {
  return {
    async run(op) {
      // From /: the helper's Bun reads nothing from the caller's directory (its flags say so too: sys/bun-args.ts).
      const r = await exec.run(sudoHelperArgv(helperArgv, op), { check: false, cwd: "/" });
      if (r.exitCode === 0) return WireResult.parse(JSON.parse(r.stdout));
      if (/a password is required|may not run sudo|not allowed to execute/i.test(r.stderr)) {
        throw new SbxError("permission", `sbx's root helper is not allowed to run (${op.op})`, {
          hint: "Run `sbx service install`: it installs the helper and the sudoers rule it needs (shown before it is written).",
        });
      }
      const lastLine = r.stderr.trim().split("\n").at(-1) ?? "";
      const wire = (() => {
        try {
          return WireError.safeParse(JSON.parse(lastLine));
        } catch {
          return null;
        }
      })();
      if (wire?.success) {
        const code = wire.data.error as ConstructorParameters<typeof SbxError>[0];
        throw new SbxError(code, wire.data.message, { hint: wire.data.hint });
      }
      throw new ExecError(r, "sbx's root helper failed; run the same command by hand to see why.");
    },
  };
}
