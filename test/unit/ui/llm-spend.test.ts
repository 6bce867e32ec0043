// llm-budget on the dashboard: /api/state carries each sandbox's LLM spend (with the line the page shows), and a budget
// approval is one sandbox's (no "every sandbox" offered), decided like any other through the policy service.
import { afterEach, beforeEach, expect, test } from "bun:test";
import { createDashboardApp, CSRF_HEADER } from "../../../src/ui/app";
import { createEventBus } from "../../../src/events/feed";
import { Store } from "../../../src/store/store";
import { LlmBudgets } from "../../../src/llm/budget";
import { DEFAULT_PRICES, parseBudget } from "../../../src/core/llm-budget";

const TOKEN = "launch-token-" + "y".repeat(30);
const ORIGIN = "http://127.0.0.1:4321";
let store: Store;
let app: ReturnType<typeof createDashboardApp>;

beforeEach(() => {
  store = new Store(":memory:");
  const budgets = new LlmBudgets({ store, prices: () => DEFAULT_PRICES });
  app = createDashboardApp({ source: { store, events: createEventBus(), stateOf: () => "running", spendOf: (sb) => budgets.view(sb) }, token: TOKEN, log: { info: () => undefined, warn: () => undefined } });
});
afterEach(() => store.close());

const req = (path: string, init: RequestInit & { headers?: Record<string, string> } = {}) => app.request(`${ORIGIN}${path}`, { ...init, headers: { host: "127.0.0.1:4321", ...init.headers } });

test("llm-budget: the dashboard shows each sandbox's spend, and a budget approval is answered for its sandbox only", async () => {
  const sb = store.createSandbox({ name: "night", repo: "/src/app", backend: "fake", identity: { llmBudget: parseBudget("1usd/day") } });
  const budgets = new LlmBudgets({ store, prices: () => DEFAULT_PRICES });
  budgets.forSandbox({ id: sb.id, name: "night" }).record({ model: "claude-sonnet-4-5", input: 200_000, output: 0, cacheRead: 0, cacheWrite: 0, estimated: false });
  expect(budgets.forSandbox({ id: sb.id, name: "night" }).admit("anthropic")).toBeNull();
  budgets.forSandbox({ id: sb.id, name: "night" }).record({ model: "claude-sonnet-4-5", input: 0, output: 100_000, cacheRead: 0, cacheWrite: 0, estimated: false });
  expect(budgets.forSandbox({ id: sb.id, name: "night" }).admit("anthropic")?.status).toBe(402);
  const cookie = ((await req(`/?token=${encodeURIComponent(TOKEN)}`)).headers.get("set-cookie") ?? "").split(";")[0]!;
  const state = (await (await req("/api/state", { headers: { cookie } })).json()) as {
    csrf: string;
    sandboxes: { name: string; llm: { line: string; cap: { over: boolean } } }[];
    pending: { id: number; kind: string; sandboxOnly: boolean }[];
  };
  expect(state.sandboxes[0]!.llm).toMatchObject({ line: "$2.10 of $1.00 today (at its cap)", cap: { over: true } });
  expect(state.pending).toMatchObject([{ kind: "budget", sandboxOnly: true }]);
  const every = await req(`/api/approvals/${state.pending[0]!.id}/decide`, { method: "POST", body: JSON.stringify({ choice: "allow-global" }), headers: { cookie, "content-type": "application/json", [CSRF_HEADER]: state.csrf, origin: ORIGIN } });
  expect(every.status).toBe(400);
  const one = await req(`/api/approvals/${state.pending[0]!.id}/decide`, { method: "POST", body: JSON.stringify({ choice: "allow-sandbox" }), headers: { cookie, "content-type": "application/json", [CSRF_HEADER]: state.csrf, origin: ORIGIN } });
  expect(one.status).toBe(200);
  expect(store.getSandbox(sb.id)!.identity.llmBudget).toMatchObject({ grant: { amount: 1 } });
});
