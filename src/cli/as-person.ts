// `sudo sbx …` on a Mac: sbx never works as root there, so the whole command runs again as the person sudo works for.
import type { CliContext } from "./verb";

/** Runs argv on this terminal and resolves with its exit code (sys/exec's runAttached; tests give their own). */
export type Attach = (argv: readonly string[], opts: { env: Record<string, string>; cwd?: string }) => Promise<number>;

/** Pure: the command that re-runs sbx (`self`, then the person's `argv`) as `person`: no prompt, their HOME (-H). */
export function handOffArgv(person: string, self: readonly string[], argv: readonly string[]): string[] {
  return ["/usr/bin/sudo", "-n", "-H", "-u", person, "--", ...self, ...argv];
}

/**
 * sbx as root on a Mac: the person (sudo's caller, from Directory Services; refused when there is none) runs the same
 * command, on this terminal, with the environment sudo gives them; its exit code is this one's. Their daemon, their
 * sandboxes, their kit: exactly what `sbx …` run by them would do (host-user.ts says why).
 * runs: dscl /Search -search /Users UniqueID <SUDO_UID>; dscl /Search -read /Users/<person> …; sudo -n -H -u <person> -- <sbx> <argv…>
 */
export async function handOffToPerson(ctx: CliContext, argv: readonly string[], o: { attach?: Attach | undefined; quiet?: boolean } = {}): Promise<number> {
  const { macosPersonForRoot, userDirectory } = await import("../sys/host-user");
  const person = await macosPersonForRoot(ctx.env, userDirectory(ctx.exec, "darwin"));
  const { sbxArgv } = await import("../client/autostart");
  // Not for a silent verb (shell completion), whose every line would land in the person's prompt.
  if (!o.quiet) ctx.render.info(`sbx: on macOS sbx works for ${person.name}, not root: running this command as ${person.name}`);
  const run = o.attach ?? (await import("../sys/exec")).runAttached;
  return run(handOffArgv(person.name, sbxArgv(), argv), { env: { ...ctx.env.raw }, cwd: ctx.cwd });
}
