// Allowlist changes made with the CLI (sbx allow, deny, approvals allow|deny) leave audit rows the dashboard's feed reads, and the daemon tails them onto its live feed.
import { afterEach, describe, expect, test } from "bun:test";
import { tailCliDecisions } from "../../../src/daemon/hosted";
import { silentLogger } from "../../../src/daemon/log";
import { addPatterns, decidePending, removePatterns } from "../../../src/proxy/allowlist-service";
import { Store } from "../../../src/store/store";
import { createEventBus, feedFromAudit, type FeedEvent } from "../../../src/ui/feed";

let store: Store;
afterEach(() => store?.close());

function world() {
  store = new Store(":memory:");
  const sb = store.createSandbox({ name: "demo", repo: "/r", backend: "docker" });
  return { sb, feed: () => store.listAudit({ kind: "allowlist" }).map((r) => feedFromAudit(r, (id) => store.getSandbox(id)?.name ?? "?")) };
}

describe("CLI allowlist changes are audited in the feed's shape", () => {
  test("allow (only what changed) and deny (a removal), for a sandbox and globally", () => {
    const { sb, feed } = world();
    addPatterns(store, { kind: "sandbox", sandbox: sb }, ["Example.COM", "example.com"], "cli:ann");
    addPatterns(store, { kind: "sandbox", sandbox: sb }, ["example.com"], "cli:ann"); // already there: no row
    addPatterns(store, { kind: "global" }, ["*.npmjs.org"], "cli:ann");
    removePatterns(store, { kind: "sandbox", sandbox: sb }, ["example.com", "never-there.example"], "cli:ann");
    expect(feed().map((e) => e && e.kind === "decision" && [e.action, e.pattern, e.scope, e.sandbox?.name ?? null, e.by])).toEqual([
      ["allow", "example.com", "sandbox", "demo", "cli:ann"],
      ["allow", "*.npmjs.org", "global", null, "cli:ann"],
      ["remove", "example.com", "sandbox", "demo", "cli:ann"],
    ]);
  });

  test("approvals allow|deny name the approval they decided", () => {
    const { sb, feed } = world();
    const a = store.recordPending(sb.id, "api.example.com", 443, "not allowed");
    const b = store.recordPending(sb.id, "evil.example", 8443, "not allowed");
    decidePending(store, a.id, "allow", "cli:ann");
    decidePending(store, b.id, "deny", "cli:ann");
    const got = feed().map((e) => e && e.kind === "decision" && [e.action, e.pattern, e.scope, e.approvalId]);
    expect(got).toEqual([
      ["allow", "api.example.com", "sandbox", a.id],
      ["deny", "evil.example:8443", "sandbox", b.id],
    ]);
  });
});

describe("tailCliDecisions", () => {
  test("rows by cli:… written after the daemon started reach the live feed once; the daemon's own (ui) rows do not", async () => {
    const { sb } = world();
    addPatterns(store, { kind: "sandbox", sandbox: sb }, ["before.example"], "cli:ann"); // before start: history, not live
    const bus = createEventBus();
    const seen: FeedEvent[] = [];
    bus.subscribe((e) => seen.push(e));
    const stop = tailCliDecisions(store, bus, silentLogger, 20);
    try {
      addPatterns(store, { kind: "sandbox", sandbox: sb }, ["after.example"], "cli:ann");
      store.audit({ sandboxId: sb.id, kind: "allowlist", action: "allow", detail: { pattern: "ui.example", scope: "sandbox", by: "ui", approvalId: null } });
      store.audit({ sandboxId: sb.id, kind: "egress", action: "denied", detail: { host: "x.example" } });
      const until = Date.now() + 2000;
      while (seen.length === 0 && Date.now() < until) await Bun.sleep(10);
      await Bun.sleep(100);
      expect(seen.map((e) => e.kind === "decision" && e.pattern)).toEqual(["after.example"]);
    } finally {
      stop();
    }
  });
});
