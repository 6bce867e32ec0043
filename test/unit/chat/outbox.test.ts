// bounded (invariant 14) for deliveries out: one at a time, each try within its timeout, a bounded number of tries, a
// queue that drops its oldest past its bound; pushing never waits; closing abandons what is under way.
import { describe, expect, test } from "bun:test";
import { createOutbox, DeliveryError } from "../../../src/chat/outbox";

const noWait = { baseMs: 1, maxMs: 5 };

describe("bounded: the delivery outbox", () => {
  test("push returns at once; deliveries run one at a time, in order", async () => {
    const o = createOutbox({ name: "t", backoff: noWait });
    let open = 0;
    let most = 0;
    const order: number[] = [];
    for (let i = 0; i < 10; i++)
      o.push({
        what: `d${i}`,
        send: async () => {
          most = Math.max(most, ++open);
          await Bun.sleep(5);
          order.push(i);
          open--;
        },
      });
    // push queued all ten and returned: not one send has finished yet (each sleeps first).
    expect(order).toEqual([]);
    await o.idle();
    expect(most).toBe(1);
    expect(order).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(o.stats()).toMatchObject({ delivered: 10, failed: 0, queued: 0 });
  });

  test("a send that never ends is given up at its timeout, tried `attempts` times, counted as failed", async () => {
    const o = createOutbox({ name: "t", timeoutMs: 50, attempts: 3, backoff: noWait });
    let tries = 0;
    o.push({ what: "hang", send: (signal) => (tries++, new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason)))) });
    await o.idle();
    expect(tries).toBe(3);
    expect(o.stats()).toMatchObject({ delivered: 0, failed: 1, lastError: "no answer within 50 ms (after 3 tries)" });
  });

  test("a final refusal is not retried; a Retry-After is honoured up to the backoff's cap", async () => {
    const o = createOutbox({ name: "t", attempts: 3, backoff: { baseMs: 1, maxMs: 40 } });
    let tries = 0;
    o.push({
      what: "no",
      send: async () => {
        tries++;
        throw new DeliveryError("HTTP 403", false);
      },
    });
    await o.idle();
    expect(tries).toBe(1);
    const when: number[] = [];
    o.push({
      what: "later",
      send: async () => {
        when.push(performance.now());
        if (when.length < 2) throw new DeliveryError("429", true, 60_000);
      },
    });
    await o.idle();
    expect(when).toHaveLength(2);
    expect(when[1]! - when[0]!).toBeGreaterThanOrEqual(35);
    expect(when[1]! - when[0]!).toBeLessThan(1000);
  });

  test("past its bound the queue drops its oldest, counts them and says so once", async () => {
    const warned: string[] = [];
    const o = createOutbox({ name: "t", maxQueue: 5, log: { warn: (m) => void warned.push(m) } });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const sent: string[] = [];
    o.push({ what: "first", send: async () => void (await gate, sent.push("first")) });
    await Bun.sleep(1); // the first is under way
    for (let i = 0; i < 20; i++) o.push({ what: `d${i}`, send: async () => void sent.push(`d${i}`) });
    expect(o.stats()).toMatchObject({ queued: 5, dropped: 15 });
    expect(warned.filter((w) => w.includes("queue is full"))).toHaveLength(1);
    release();
    await o.idle();
    expect(sent).toEqual(["first", "d15", "d16", "d17", "d18", "d19"]);
  });

  test("close abandons the delivery under way and drops the rest, at once", async () => {
    const o = createOutbox({ name: "t", timeoutMs: 30_000 });
    let aborted = false;
    o.push({ what: "hang", send: (signal) => new Promise((_, reject) => signal.addEventListener("abort", () => ((aborted = true), reject(signal.reason)))) });
    o.push({ what: "next", send: async () => undefined });
    await Bun.sleep(1);
    const t0 = performance.now();
    await o.close();
    // At once: far below the 30 s the send would have been given (a bound, not a speed: the suite judges no speed).
    expect(performance.now() - t0).toBeLessThan(5_000);
    expect(aborted).toBe(true);
    expect(o.stats()).toMatchObject({ delivered: 0, queued: 0 });
  });
});
