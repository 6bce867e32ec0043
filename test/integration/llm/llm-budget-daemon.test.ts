// llm-budget through the daemon's own wiring (productionComponents): a sandbox's proxy guard, on its own socket, counts
// the sandbox's model calls into the ledger, refuses the one past its budget in the provider's shape with an approval
// to raise it, and `sbx list`'s source (the sandbox service) shows the spend, priced by the config file's table.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { productionComponents, TEST_LLM_UPSTREAMS_VAR } from "../../../src/daemon/main";
import { createEventBus, type FeedEvent } from "../../../src/events/feed";
import { readEnv } from "../../../src/sys/env";
import { silentLogger } from "../../../src/sys/log";
import { SandboxService } from "../../../src/sandboxes/service";
import { parseBudget } from "../../../src/core/llm-budget";
import type { GuardHandle } from "../../../src/guards/guards";
import { guardContext } from "../../support/guard-context";
import { tempWorld, type TempWorld } from "../../support/temp-world";
import { startFakeAgentLlm, type FakeAgentLlm } from "../../support/fake-agent-llm";

let w: TempWorld;
let fake: FakeAgentLlm;
let proxy: GuardHandle;
let sock = "";
const feed: FeedEvent[] = [];

beforeAll(async () => {
  w = await tempWorld();
  fake = await startFakeAgentLlm();
  fake.tokens = { input: 1000, output: 1000, cacheRead: 0, cacheWrite: 0 };
  mkdirSync(dirname(w.paths.configFile), { recursive: true });
  writeFileSync(w.paths.configFile, JSON.stringify({ llmPrices: { "house-model": { input: 100, output: 100 } } }));
  const env = readEnv({ vars: { ...w.env.vars, [TEST_LLM_UPSTREAMS_VAR]: JSON.stringify({ anthropic: fake.url }), ANTHROPIC_API_KEY: "sk-ant-host-budget" }, uid: w.env.uid, gid: w.env.gid, platform: "linux", osUserName: () => "t" });
  const events = createEventBus(() => undefined);
  events.subscribe((e) => void feed.push(e));
  const comps = await productionComponents({ env, paths: w.paths, exec: w.exec, log: silentLogger, store: w.store, events }, {});
  const sandbox = w.store.createSandbox({ name: "night", repo: w.repo, backend: "docker", identity: { llmBudget: parseBudget("0.25usd/day") } });
  const dir = join(w.paths.runtimeDir, "sb", "budget");
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  proxy = await comps.guards.find((g) => g.name === "proxy")!.start(guardContext({ store: w.store, sandbox, dir, specDir: join(w.paths.stateDir, "night") }));
  sock = join(dir, "proxy.sock");
});
afterAll(async () => {
  await proxy?.stop();
  await fake.stop();
  await w.close();
});

const call = async () => {
  const r = await fetch("http://sandbox/llm/anthropic/v1/messages", { unix: sock, method: "POST", headers: { "content-type": "application/json", "x-api-key": "placeholder" }, body: JSON.stringify({ model: "house-model", max_tokens: 10, messages: [] }) } as RequestInit);
  return { status: r.status, body: await r.text() };
};

test("llm-budget: the daemon's proxy counts a sandbox's calls at the config's prices and refuses the one past its budget", async () => {
  // house-model at $100/M both ways: each call $0.20.
  expect((await call()).status).toBe(200);
  expect((await call()).status).toBe(200);
  const refused = await call();
  expect(refused.status).toBe(402);
  expect(JSON.parse(refused.body)).toMatchObject({ type: "error", error: { type: "billing_error", message: expect.stringContaining("$0.40 of $0.25 today") } });
  expect(fake.requests.length).toBe(2);
  expect(w.store.listApprovals({ state: "pending" })).toMatchObject([{ kind: "budget", host: "llm-budget 0.25usd/day" }]);
  expect(feed.some((e) => e.kind === "llm" && e.action === "budget-reached")).toBe(true);
  const svc = new SandboxService({ exec: w.exec, env: w.env, paths: w.paths, store: w.store, drivers: {}, defaultKind: "docker", log: () => undefined });
  const [item] = await svc.list();
  expect(item!.llm).toMatchObject({ budget: "0.25usd/day", spent: { calls: 2, tokens: 4000, usd: 0.4 }, cap: { over: true } });
});
