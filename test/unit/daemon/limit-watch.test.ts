// The daemon notices a sandbox running into a limit: one audit row per change (never the same hit twice), a note for
// the command that was waiting, and nothing for a sandbox that does not run.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LimitCounters } from "../../../src/core/limits";
import type { Sandbox } from "../../../src/core/schemas";
import { LimitWatch } from "../../../src/daemon/limit-watch";
import { silentLogger } from "../../../src/sys/log";
import { Store } from "../../../src/store/store";

let dir: string;
let store: Store;
let counters: Map<number, LimitCounters | null>;
let row: Sandbox;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "sbx-lw-"));
  store = new Store(join(dir, "db.sqlite"));
  row = store.createSandbox({ name: "a", repo: "/r", backend: "docker", identity: { id: "x", dir: "/d", limits: { memory: 268435456, cpus: 1, pids: 128 } } });
  counters = new Map();
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

const watch = () => new LimitWatch({ service: { counters: async (r: Sandbox) => counters.get(r.id) ?? null }, store, log: silentLogger });

describe("limit watch", () => {
  const audited = () => store.listAudit({ kind: "limit" }).map((a) => ({ action: a.action, detail: a.detail }));

  test("the first reading is the baseline; a later gain is audited once, with the limit's value", async () => {
    const lw = watch();
    counters.set(row.id, { oomKills: 3, pidsRefused: 0 });
    await lw.sample(row); // hits from before the daemon started are `sbx limits`' to show, not new
    expect(audited()).toEqual([]);
    counters.set(row.id, { oomKills: 4, pidsRefused: 10 });
    await lw.sample(row);
    await lw.sample(row);
    expect(audited()).toEqual([
      { action: "memory", detail: { count: 1, limit: 268435456 } },
      { action: "pids", detail: { count: 10, limit: 128 } },
    ]);
  });

  test("a command's span is its own: the periodic pass reading the counters meanwhile takes nothing from its note", async () => {
    const lw = watch();
    counters.set(row.id, { oomKills: 0, pidsRefused: 0 });
    await lw.sample(row);
    const ended = await lw.span(row);
    counters.set(row.id, { oomKills: 0, pidsRefused: 300 });
    await lw.sample(row); // the 5 s pass, in the middle of the command: it audits the hit
    counters.set(row.id, { oomKills: 0, pidsRefused: 369 });
    expect(await ended()).toEqual([{ limit: "pids", count: 369 }]);
    // And the audit has each fork counted once, over the two readings.
    expect(audited().map((a) => a.detail.count)).toEqual([300, 69]);
  });

  test("a sandbox that stopped starts again from zero (its new container counts anew)", async () => {
    const lw = watch();
    counters.set(row.id, { oomKills: 5, pidsRefused: 0 });
    await lw.sample(row);
    counters.set(row.id, null);
    expect(await lw.sample(row)).toBeNull();
    counters.set(row.id, { oomKills: 1, pidsRefused: 0 });
    await lw.sample(row); // a new baseline, not "-4"
    counters.set(row.id, { oomKills: 2, pidsRefused: 0 });
    await lw.sample(row);
    expect(audited()).toEqual([{ action: "memory", detail: { count: 1, limit: 268435456 } }]);
  });

  test("the note names the sandbox, the limit and the command that raises it", () => {
    expect(watch().notes(row, [{ limit: "pids", count: 2 }])).toBe("sbx: sandbox a hit its process limit (128): 2 forks were refused. Raise it with `sbx limits a --pids N`.\n");
    expect(watch().notes(row, [])).toBe("");
  });
});
