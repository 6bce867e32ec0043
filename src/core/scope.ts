// Pure: which allowlist `--sandbox NAME` / `--global` name, checked the same way by the CLI (before it reaches the daemon) and the daemon.
import { SbxError } from "./errors";

/** The sandbox's name, or null for the global list; exactly one of the two must be given. */
export function listScope(verb: string, sandbox: string | undefined, global: boolean): string | null {
  if (sandbox !== undefined && global) {
    throw new SbxError("usage", "--sandbox and --global cannot be used together", { hint: `Run \`sbx ${verb}\` once for each scope.` });
  }
  if (global) return null;
  if (sandbox === undefined) {
    throw new SbxError("usage", "say which list: --sandbox NAME or --global", { hint: `e.g. \`sbx ${verb} example.com --sandbox demo\`; \`sbx list\` shows the sandboxes.` });
  }
  return sandbox;
}
