// The relay's state machine (shims/relay.ts) with ends that model a socket's rules: `write` takes up to `room` bytes
// and says how many; pause/resume are recorded. What a client sends before its upstream exists goes up, never back
// to it (a drain on the client meanwhile once sent it its own bytes); a FIN before then is passed on, not echoed;
// and the relay holds at most the chunk that did not fit, pausing the source.
import { describe, expect, test } from "bun:test";
import { relayDrain, relayEarly, relayEnd, relayForward, relayJoin, relaySide, type RelayEnd } from "../../../shims/relay";

function end(room = Infinity) {
  const e = {
    data: relaySide(),
    got: [] as string[],
    room,
    paused: false,
    fin: false,
    closed: false,
    write(b: Uint8Array) {
      const n = Math.min(b.length, e.room);
      e.room -= n;
      if (n > 0) e.got.push(new TextDecoder().decode(b.subarray(0, n)));
      return n;
    },
    shutdown: () => void (e.fin = true),
    end: () => void (e.closed = true),
    pause: () => void (e.paused = true),
    resume: () => void (e.paused = false),
  };
  return e satisfies RelayEnd;
}

describe("relay: early bytes and backpressure", () => {
  test("bytes a client sends before its upstream exists go up once it does, never back to the client on a drain", () => {
    const client = end();
    relayEarly(client, new TextEncoder().encode("GET / HTTP/1.1\r\n\r\n"));
    expect(client.paused).toBe(true);
    relayDrain(client); // the client's socket became writable while the upstream was being made
    expect(client.got).toEqual([]);
    const up = end();
    relayJoin(client, up);
    expect(up.got).toEqual(["GET / HTTP/1.1\r\n\r\n"]);
    expect(client.got).toEqual([]);
    expect(client.paused).toBe(false);
  });

  test("a client that ends before its upstream exists: the FIN goes up after its bytes, the client gets none", () => {
    const client = end();
    relayEarly(client, new TextEncoder().encode("x"));
    relayEnd(client);
    relayDrain(client);
    expect(client.fin).toBe(false);
    const up = end();
    relayJoin(client, up);
    expect(up.got).toEqual(["x"]);
    expect(up.fin).toBe(true);
  });

  test("a reader that takes nothing: one chunk is held and the source paused; more is not read until it drains", () => {
    const src = end();
    const dst = end(0);
    relayJoin(src, dst);
    relayForward(src, dst, new Uint8Array(1 << 20));
    expect(src.paused).toBe(true);
    expect(dst.data.queue.reduce((n, b) => n + b.length, 0)).toBe(1 << 20);
    dst.room = Infinity;
    relayDrain(dst);
    expect(dst.data.queue).toEqual([]);
    expect(src.paused).toBe(false);
    expect(dst.data.written).toBe(1 << 20);
  });
});
