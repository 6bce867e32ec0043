// One approval for a name on a company's private DNS (issue 39). sbx never resolves a name nobody allowed (a lookup
// is a way out for what a sandbox knows), so a refused name is approved as a name. Once a person has allowed it, sbx
// looks it up: each non-public address it resolves to (not the host's own, never loopback) is allowed as the pairing
// `name@address` in the same scope, by the same person's decision, and said. Without this, the next request would be
// refused again (a name alone never reaches a private address) and need a second approval nobody expected.
import { parsePattern } from "../core/allowlist";
import { canonicalIp, classify, parseIp } from "../core/addresses";
import { pairText, patternFor } from "../core/egress";
import type { FeedEvent } from "../events/feed";
import type { Store } from "../store/store";
import type { PolicyService } from "./service";
import { termOfEntry } from "./lapse";

/** How long the lookup after an approval may take; past it, nothing is paired (the next refusal offers the pairing). */
const LOOKUP_MS = 5_000;

/** Pure: the `name@address` patterns an allowed name gets for the non-public addresses it resolved to. */
export function pairsFor(name: string, port: number, addresses: readonly string[], hostOwn: ReadonlySet<string> = new Set()): string[] {
  const out: string[] = [];
  for (const raw of addresses) {
    const a = canonicalIp(raw);
    const b = a ? parseIp(a) : null;
    if (!a || !b) continue;
    const k = classify(b);
    if (k === "public" || k === "loopback" || k === "unspecified" || hostOwn.has(a)) continue;
    out.push(patternFor(pairText(name, a), port));
  }
  return [...new Set(out)];
}

/**
 * Listens to decisions: an approval allowed for a name (one exact name, from a pending approval) is looked up, and its
 * private addresses paired. Returns the unsubscribe.
 */
export function pairApprovedNames(o: {
  subscribe: (fn: (e: FeedEvent) => void) => () => void;
  policy: PolicyService;
  store: Store;
  resolve: (host: string) => Promise<string[]>;
  hostOwn?: () => ReadonlySet<string>;
  log?: (message: string, fields: Record<string, unknown>) => void;
}): () => void {
  return o.subscribe((e) => {
    if (e.kind !== "decision" || e.action !== "allow" || e.approvalId === undefined) return;
    const p = parsePattern(e.pattern);
    if (!p.ok || p.pattern.kind !== "exact") return;
    const name = p.pattern.host;
    const port = p.pattern.port ?? 443;
    const timeout = new Promise<string[]>((r) => setTimeout(() => r([]), LOOKUP_MS));
    void Promise.race([o.resolve(name).catch(() => [] as string[]), timeout]).then((addresses) => {
      const pairs = pairsFor(name, port, addresses, o.hostOwn?.() ?? new Set());
      if (pairs.length === 0) return;
      const sandbox = e.scope === "sandbox" && e.sandbox ? o.store.getSandbox(e.sandbox.id) : null;
      if (e.scope === "sandbox" && !sandbox) return;
      // The pairing lasts as the allow it follows does (policy/lapse.ts): for good, until the same moment, or once; an
      // allow already used up or lapsed gets none.
      const term = termOfEntry(o.store, sandbox?.id ?? null, e.pattern, e.at);
      if (term === null) return;
      try {
        o.policy.allow(sandbox ? { kind: "sandbox", sandbox } : { kind: "global" }, pairs, `${e.by} (approved ${name}, which resolves to a private address)`, term);
      } catch (err) {
        o.log?.("could not pair an approved name with its private address", { name, err: (err as Error).message });
      }
    });
  });
}
