// llm-budget from the command line, through the daemon's routes (served in this process): `sbx create --llm-budget`
// keeps it, `sbx list` shows the spend column and `--json` field, `sbx limits --llm-budget` changes it, and a
// budget that is not one is refused with the forms before anything is made.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { dockerCliWorld, type DockerCliWorld } from "../../support/docker-cli-world";

let x: DockerCliWorld;
beforeEach(async () => {
  x = await dockerCliWorld();
});
afterEach(async () => {
  await x.close();
});
const cli = (argv: string[]) => x.cli(argv);

describe("llm-budget: sbx create, list and limits", () => {
  test("create --llm-budget keeps it; list shows it (LLM SPEND, --json llm); limits changes it", async () => {
    expect((await cli(["create", "demo", "--llm-budget", "5usd/day"])).code).toBe(0);
    const [item] = JSON.parse((await cli(["list", "--json"])).stdout) as { llm: { budget: string; spent: { calls: number; usd: number }; cap: { amount: number; over: boolean } } }[];
    expect(item!.llm).toMatchObject({ budget: "5usd/day", spent: { calls: 0, usd: 0 }, cap: { amount: 5, over: false } });
    const table = (await cli(["list"])).stdout.split("\n");
    expect(table[0]).toContain("LLM SPEND");
    expect(table[1]).toContain("$0.00 of $5.00 today");
    const l = await cli(["limits", "demo", "--llm-budget", "2mtokens/day"]);
    expect(l.code).toBe(0);
    expect(l.stdout).toContain("demo: LLM budget: 2mtokens/day; today: 0 tokens of 2M tokens");
    expect((await cli(["limits", "demo"])).stdout).toContain("LLM budget: 2mtokens/day");
  });

  test("a budget that is not one is refused with the forms (exit 64), and no sandbox is made", async () => {
    const r = await cli(["create", "demo", "--llm-budget", "plenty"]);
    expect(r.code).toBe(64);
    expect(r.stderr).toContain("--llm-budget: 'plenty' is not a budget");
    expect(r.stderr).toContain("5usd/day");
    expect(JSON.parse((await cli(["list", "--json"])).stdout)).toEqual([]);
  });
});
