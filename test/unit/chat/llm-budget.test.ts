// llm-budget where the team is: a sandbox at its budget is announced like any other new approval (the webhook and Slack
// take it from the feed's llm event, the Zulip bot posts a notice once), and reads as what it asks, never as a host.
import { expect, test } from "bun:test";
import { describeApproval, newApprovalOf } from "../../../src/chat/decide";
import { pendingMessage } from "../../../src/chat/slack";
import { budgetNotice } from "../../../src/chat/commands";
import { Store } from "../../../src/store/store";

test("llm-budget: a budget approval is announced once on every channel, and reads as more budget, not as host:port", () => {
  const store = new Store(":memory:");
  const sb = store.createSandbox({ name: "night", repo: "/src/app", backend: "fake" });
  const a = store.recordPending(sb.id, "llm-budget 5usd/day", 0, "LLM budget spent: $5.02 of $5.00 today", "budget")!;
  const e = { kind: "llm" as const, at: 1, sandbox: { id: sb.id, name: "night" }, action: "budget-reached" as const, detail: "$5.02 of $5.00 today", approvalId: a.id, count: 1 };
  expect(newApprovalOf(e)).toEqual({ approvalId: a.id, sandboxId: sb.id });
  expect(newApprovalOf({ ...e, count: 2 })).toBeNull();
  expect(describeApproval(a).asks).toBe("spend one more budget's worth on model calls (llm-budget 5usd/day)");
  const slack = JSON.stringify(pendingMessage(a, sb));
  expect(slack).toContain("asks to spend one more budget's worth");
  expect(slack).not.toContain(":0");
  expect(budgetNotice(e)).toContain(`/approve ${a.id}`);
  expect(budgetNotice(e)).toContain("**night** has spent its LLM budget: $5.02 of $5.00 today");
  store.close();
});
