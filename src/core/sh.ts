// Quoting for the shell scripts sbx renders (rc files, shim wrappers, agent launchers). Pure.

/** POSIX single-quoting, valid in sh, bash and zsh. */
export function shQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}
