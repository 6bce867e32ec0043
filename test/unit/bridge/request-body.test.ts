// The bridge request body: the JSON header line is read first, the pack after it is handed on as a stream (read on demand, size-capped).
import { describe, expect, test } from "bun:test";
import { splitBody } from "../../../src/bridge/server";

const enc = new TextEncoder();
function body(chunks: string[]): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream({
    pull(c) {
      if (i < chunks.length) c.enqueue(enc.encode(chunks[i++]!));
      else c.close();
    },
  });
}

describe("splitBody", () => {
  test("the header ends at the first newline; the pack's bytes follow in order, whatever the chunking", async () => {
    const s = await splitBody(body(['{"tool":', '"git"}\nPA', "CK", "-rest"]));
    if ("error" in s) throw new Error(s.error);
    expect(s.head).toBe('{"tool":"git"}');
    expect(s.pack.present).toBe(true);
    expect(await new Response(s.pack.stream).text()).toBe("PACK-rest");
  });

  test("a body that is only the header line carries no pack", async () => {
    const s = await splitBody(body(['{"tool":"git"}']));
    if ("error" in s) throw new Error(s.error);
    expect(s.head).toBe('{"tool":"git"}');
    expect(s.pack.present).toBe(false);
    expect(await new Response(s.pack.stream).text()).toBe("");
  });

  test("the pack is not read until someone reads it, and can be dropped", async () => {
    let pulls = 0;
    const src = new ReadableStream<Uint8Array>({
      pull(c) {
        pulls++;
        c.enqueue(enc.encode(pulls === 1 ? "{}\nA" : "B"));
        if (pulls > 50) c.close();
      },
    });
    const s = await splitBody(src);
    if ("error" in s) throw new Error(s.error);
    await Bun.sleep(10);
    const before = pulls;
    expect(before).toBeLessThanOrEqual(3);
    s.pack.discard();
  });

  test("a header larger than the limit is refused", async () => {
    const s = await splitBody(body(["x".repeat(1024 * 1024 + 10)]));
    expect(s).toEqual({ error: "bridge request header too large", status: 413 });
  });
});
