// Sandbox naming rules: `[a-z0-9][a-z0-9-]*`, short enough for container names, users and DNS labels.
import { SbxError } from "./errors";

export const NAME_PATTERN = /^[a-z0-9][a-z0-9-]*$/;
export const NAME_MAX = 63;

/** Returns the name if it is valid, else throws a usage error that says what is wrong. */
export function validateSandboxName(name: string): string {
  const hint = "Use lowercase letters, digits and '-', starting with a letter or digit, e.g. `sbx create fix-login`.";
  if (name.length === 0) throw new SbxError("invalid_name", "sandbox name is empty", { hint });
  if (name.length > NAME_MAX) {
    throw new SbxError("invalid_name", `sandbox name '${name}' is ${name.length} characters; at most ${NAME_MAX}`, { hint });
  }
  if (!NAME_PATTERN.test(name)) {
    const bad = [...name].find((c) => !/[a-z0-9-]/.test(c));
    const why = bad !== undefined ? `contains '${bad}'` : "must start with a letter or digit";
    throw new SbxError("invalid_name", `invalid sandbox name '${name}': ${why}`, { hint });
  }
  return name;
}
