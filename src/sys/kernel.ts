// What this kernel offers that sbx's confinement depends on, read from its release string.

/** Pure: whether a kernel release gives each proc mount its own options (Linux 5.8: hidepid per mount, not per machine). */
export function procMountsApart(release: string): boolean {
  const m = /^(\d+)\.(\d+)/.exec(release);
  return m !== null && (Number(m[1]) > 5 || (Number(m[1]) === 5 && Number(m[2]) >= 8));
}
