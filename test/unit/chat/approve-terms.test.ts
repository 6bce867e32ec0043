// Chat answers an approval for a time or once, as the CLI and the dashboard do: `/approve N for 30m`, `/approve N once`,
// `/allow HOST --for 30m`; what it cannot do for one sandbox (once for every sandbox) changes nothing and says why.
import { afterEach, describe, expect, test } from "bun:test";
import { handleChat, topicFor } from "../../../src/chat/commands";
import { Store } from "../../../src/store/store";

let store: Store;
afterEach(() => store?.close());

function world() {
  store = new Store(":memory:", { now: () => 1_000_000 });
  const sb = store.createSandbox({ name: "demo", repo: "/src/app", backend: "fake" });
  const ctx = { store, allowSenders: ["ann@example.com"], source: "zulip", now: () => 1_000_000 };
  const say = (content: string) => handleChat(ctx, { senderEmail: "ann@example.com", senderName: "Ann", topic: topicFor(sb), content });
  return { sb, say };
}

describe("approval-lapses / approval-once in chat", () => {
  test("/approve N for 30m and /approve N once answer with a timed and a one-time entry, and say so", () => {
    const { sb, say } = world();
    const a = store.recordPending(sb.id, "timed.example", 443, "not allowed")!;
    const b = store.recordPending(sb.id, "once.example", 443, "not allowed")!;
    expect(say(`/approve ${a.id} for 30m`)).toContain("Approved for **demo** for 30m");
    expect(say(`/approve ${b.id} once`)).toContain("once (one connection)");
    const byPattern = Object.fromEntries(store.listAllow(sb.id).map((e) => [e.pattern, e]));
    expect(byPattern["timed.example"]).toMatchObject({ once: false, expiresAt: 1_000_000 + 30 * 60_000 });
    expect(byPattern["once.example"]).toMatchObject({ once: true });
  });

  test("/allow HOST --for 2h; /allow HOST --global --once is refused and changes nothing", () => {
    const { sb, say } = world();
    expect(say("/allow a.example --for 2h")).toContain("Allowed `a.example` for sandbox **demo** for 2h.");
    expect(store.listAllow(sb.id)[0]).toMatchObject({ pattern: "a.example", expiresAt: 1_000_000 + 2 * 3_600_000 });
    expect(say("/allow b.example --global --once")).toContain("not for every sandbox");
    expect(store.listAllow(null)).toEqual([]);
  });
});
