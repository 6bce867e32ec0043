// llm-budget in the sandbox's settings: `sbx create --llm-budget` (over the config file's llmBudget) keeps it in the
// identity the LLM handler reads; a bad one refuses the create before anything is made; `sbx limits --llm-budget`
// changes it and answers the pending budget approval; `sbx list` and `sbx limits` show the spend.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import type { SbxError } from "../../../src/core/errors";
import { dayOf } from "../../../src/core/llm-budget";
import { SandboxService } from "../../../src/sandboxes/service";
import { LlmLedger } from "../../../src/store/llm-usage";
import { FakeDriver } from "../../fakes/driver";
import { tempWorld, type TempWorld } from "../../support/temp-world";

let w: TempWorld;
let drivers: Record<string, FakeDriver>;

const service = () =>
  new SandboxService({ exec: w.exec, env: w.env, paths: w.paths, store: w.store, drivers: { docker: () => drivers.docker! }, defaultKind: "docker", log: () => undefined });

function config(c: unknown): void {
  mkdirSync(dirname(w.paths.configFile), { recursive: true });
  writeFileSync(w.paths.configFile, JSON.stringify(c));
}

beforeEach(async () => {
  w = await tempWorld();
  drivers = { docker: new FakeDriver("docker", w.exec, w.paths, w.host) };
});
afterEach(() => w.close());

describe("llm-budget: a sandbox's budget is set where its limits are", () => {
  test("create keeps --llm-budget in the identity, over the config file's llmBudget, which is the default", async () => {
    config({ llmBudget: "5usd/day" });
    const s = service();
    await s.create({ name: "flag", cwd: w.repo, limits: { llmBudget: "2mtokens/day" } });
    await s.create({ name: "dflt", cwd: w.repo });
    expect(w.store.findSandbox(w.repo, "flag")!.identity.llmBudget).toEqual({ amount: 2_000_000, unit: "tokens", per: "day" });
    expect(w.store.findSandbox(w.repo, "dflt")!.identity.llmBudget).toEqual({ amount: 5, unit: "usd", per: "day" });
    const none = await s.create({ name: "free", cwd: w.repo, limits: { llmBudget: "none" } });
    expect(none.sandbox.identity.llmBudget).toBeUndefined();
  });

  test("a budget that is not one refuses the create before anything is made; run of an existing sandbox with one names `sbx limits`", async () => {
    const s = service();
    const err = await s.create({ name: "bad", cwd: w.repo, limits: { llmBudget: "lots" } }).then(() => null, (e: unknown) => e as SbxError);
    expect(err?.message).toContain("--llm-budget: 'lots' is not a budget");
    expect(w.store.findSandbox(w.repo, "bad")).toBeNull();
    expect(drivers.docker!.calls).not.toContain("provision");
    await s.create({ name: "l", cwd: w.repo });
    const again = await s.create({ name: "l", cwd: w.repo, ifExists: "reuse", limits: { llmBudget: "1usd" } }).then(() => null, (e: unknown) => e as SbxError);
    expect(again?.hint).toContain("sbx limits l --llm-budget");
  });

  test("sbx limits --llm-budget changes it (none removes it), answers the pending budget approval, and shows the spend", async () => {
    const s = service();
    await s.create({ name: "l", cwd: w.repo, limits: { llmBudget: "1usd/day" } });
    const row = w.store.findSandbox(w.repo, "l")!;
    new LlmLedger(w.store).add(row.id, dayOf(Date.now()), { model: "claude-sonnet-4-5", input: 1_000_000, output: 0, cacheRead: 0, cacheWrite: 0, estimated: false });
    const pending = w.store.recordPending(row.id, "llm-budget 1usd/day", 0, "spent", "budget")!;
    const shown = await s.limits("l", { cwd: w.repo });
    expect(shown.llm).toMatchObject({ budget: "1usd/day", spent: { usd: 3, calls: 1 }, cap: { unit: "usd", amount: 1, spent: 3, over: true } });
    const r = await s.limits("l", { cwd: w.repo, set: { llmBudget: "10usd/day" } });
    expect(r.llm).toMatchObject({ budget: "10usd/day", cap: { amount: 10, over: false } });
    expect(w.store.getApproval(pending.id)).toMatchObject({ state: "allowed", decidedBy: "sbx limits --llm-budget" });
    expect(drivers.docker!.calls.filter((c) => c === "applyLimits")).toEqual([]);
    await s.limits("l", { cwd: w.repo, set: { llmBudget: "none" } });
    expect(w.store.findSandbox(w.repo, "l")!.identity.llmBudget).toBeUndefined();
    expect((await s.list()).find((i) => i.name === "l")?.llm).toMatchObject({ budget: null, spent: { usd: 3, tokens: 1_000_000 } });
  });

  test("the config file's own prices are what spend is shown at", async () => {
    config({ llmPrices: { "my-model": { input: 100, output: 0 } } });
    const s = service();
    await s.create({ name: "p", cwd: w.repo });
    const row = w.store.findSandbox(w.repo, "p")!;
    new LlmLedger(w.store).add(row.id, dayOf(Date.now()), { model: "my-model", input: 10_000, output: 0, cacheRead: 0, cacheWrite: 0, estimated: false });
    expect((await s.list())[0]!.llm?.spent).toMatchObject({ usd: 1, unpricedTokens: 0 });
  });
});
