// Deliveries to a service outside (a webhook, Slack), one at a time in order, off every caller's path: a bounded queue,
// a timeout per attempt, a bounded number of retries, and counts that `sbx status` shows. A dead or hanging receiver
// costs the daemon one pending request and a queue that drops its oldest entries; nothing waits on it.

/** How the channels reach the outside (tests pass their own). */
export type Fetch = (input: string, init?: RequestInit) => Promise<Response>;

/** A failure that says whether trying again may help (a timeout, a 5xx, a 429 may; a 4xx will not). */
export class DeliveryError extends Error {
  constructor(
    message: string,
    readonly retry: boolean,
    /** The receiver asked for this pause (Retry-After), ms. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

export interface Delivery {
  /** What it is, for the log (no secret, no payload). */
  what: string;
  /**
   * Sends once; throws (a DeliveryError, or anything: retried) on failure; "skipped" when there was nothing left to send
   * (not counted). Must give up when `signal` aborts.
   */
  send(signal: AbortSignal): Promise<void | "skipped">;
}

export interface OutboxStats {
  queued: number;
  delivered: number;
  failed: number;
  /** Dropped unsent because the queue was full (the oldest go first). */
  dropped: number;
  lastError: string | null;
  lastErrorAt: number | null;
  lastOkAt: number | null;
}

export interface OutboxOptions {
  /** Names the service in the log (`webhook`, `slack`). */
  name: string;
  log?: { warn(msg: string, fields?: Record<string, unknown>): void };
  timeoutMs?: number;
  /** Tries per delivery, the first included. */
  attempts?: number;
  /** Backoff between tries: full jitter over baseMs·4^(n-1), at most maxMs (a Retry-After is honoured up to maxMs). */
  backoff?: { baseMs: number; maxMs: number };
  maxQueue?: number;
  now?: () => number;
  random?: () => number;
}

export interface Outbox {
  push(d: Delivery): void;
  stats(): OutboxStats;
  /** Resolves when the queue is empty and nothing is being sent (tests). */
  idle(): Promise<void>;
  /** Aborts the delivery under way and drops the queue. */
  close(): Promise<void>;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

export function createOutbox(o: OutboxOptions): Outbox {
  const timeoutMs = o.timeoutMs ?? 5000;
  const attempts = o.attempts ?? 3;
  const backoff = o.backoff ?? { baseMs: 1000, maxMs: 30_000 };
  const maxQueue = o.maxQueue ?? 100;
  const now = o.now ?? Date.now;
  const random = o.random ?? Math.random;
  const stop = new AbortController();
  const queue: Delivery[] = [];
  const s = { delivered: 0, failed: 0, dropped: 0, lastError: null as string | null, lastErrorAt: null as number | null, lastOkAt: null as number | null };
  let running: Promise<void> | null = null;
  let toldFull = false;

  const fail = (d: Delivery, message: string) => {
    s.failed++;
    s.lastError = message;
    s.lastErrorAt = now();
    o.log?.warn(`${o.name}: delivery failed`, { what: d.what, message });
  };

  const deliver = async (d: Delivery) => {
    for (let n = 1; n <= attempts; n++) {
      if (stop.signal.aborted) return;
      try {
        if ((await d.send(AbortSignal.any([stop.signal, AbortSignal.timeout(timeoutMs)]))) === "skipped") return;
        s.delivered++;
        s.lastOkAt = now();
        return;
      } catch (e) {
        if (stop.signal.aborted) return;
        const err = e as Error;
        const message = err.name === "TimeoutError" ? `no answer within ${timeoutMs} ms` : err.message;
        const retry = e instanceof DeliveryError ? e.retry : true;
        if (!retry || n === attempts) return fail(d, n > 1 ? `${message} (after ${n} tries)` : message);
        // Full jitter over min(maxMs, baseMs·4^(n-1)); a Retry-After the receiver sent is honoured up to maxMs.
        const wait = e instanceof DeliveryError && e.retryAfterMs !== undefined ? Math.min(e.retryAfterMs, backoff.maxMs) : Math.floor(random() * Math.min(backoff.maxMs, backoff.baseMs * 4 ** (n - 1)));
        await sleep(wait, stop.signal);
      }
    }
  };

  const run = async () => {
    while (queue.length > 0 && !stop.signal.aborted) await deliver(queue.shift()!);
    running = null;
  };

  return {
    push(d) {
      if (stop.signal.aborted) return;
      queue.push(d);
      if (queue.length > maxQueue) {
        queue.shift();
        s.dropped++;
        if (!toldFull) o.log?.warn(`${o.name}: the delivery queue is full; the oldest undelivered notices are dropped`, { maxQueue });
        toldFull = true;
      } else if (queue.length < maxQueue / 2) toldFull = false;
      // Started on a later tick: the caller (a listener on the event bus, on the proxy's path) returns at once.
      running ??= Promise.resolve().then(run);
    },
    stats: () => ({ queued: queue.length, ...s }),
    async idle() {
      while (running) await running;
    },
    async close() {
      stop.abort();
      queue.length = 0;
      await running;
    },
  };
}
