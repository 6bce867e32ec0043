// A guest's nft chain, read and converged: the table as it is, and the rules a sandbox should have loaded only when
// they differ (the rendering itself is nft.ts's).
import type { SandboxSpec } from "../../core/spec";
import type { GuestSystem } from "./layout";
import { chainName } from "./naming";
import { chainMatches, parseTable, renderBase, renderSandbox, type SandboxRules, type TableState } from "./nft";

/** runs: nft -j list table inet <table> */
export async function readTable(sys: GuestSystem): Promise<TableState> {
  const r = await sys.exec.run(["nft", "-j", "list", "table", "inet", sys.table], { check: false });
  return parseTable(r.exitCode === 0 ? r.stdout : "");
}

/** runs: nft -f - (the rendered base and/or sandbox chain on stdin), only when the table differs */
export async function ensureFirewall(sys: GuestSystem, want: SandboxRules, state?: TableState): Promise<boolean> {
  const t = state ?? (await readTable(sys));
  const parts: string[] = [];
  if (!t.baseOk) parts.push(renderBase(sys.table));
  if (!t.baseOk || !chainMatches(t.chains.get(chainName(want.id)), want)) parts.push(renderSandbox(want, sys.table));
  if (parts.length === 0) return false;
  await sys.exec.run(["nft", "-f", "-"], { stdin: parts.join("") });
  return true;
}

/** The firewall's part of the transparent path for a spec: its redirects, when the sandbox has it. */
export function transparentRule(spec: SandboxSpec): { transparent?: true } {
  return spec.options.driver === "user" && spec.options.transparent === true ? { transparent: true } : {};
}
