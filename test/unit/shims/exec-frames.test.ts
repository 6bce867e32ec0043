// The exec agent's frames: reassembled from any cut of the byte stream, bounded in size, and every field the daemon or agent acts on checked.
import { describe, expect, test } from "bun:test";
import {
  dataFrames,
  encodeFrame,
  FRAME_HEADER,
  FrameDecoder,
  FrameType,
  jsonFrame,
  MAX_FRAME,
  parseExit,
  parseJson,
  parseStart,
} from "../../../shims/exec-frames";

const enc = new TextEncoder();

describe("FrameDecoder", () => {
  test("frames come back whole whatever the chunk boundaries", () => {
    const stream = new Uint8Array([
      ...encodeFrame(FrameType.stdout, 7, enc.encode("hello")),
      ...encodeFrame(FrameType.stdinEnd, 7),
      ...jsonFrame(FrameType.exit, 7, { code: 3 }),
    ]);
    for (const step of [1, 2, 5, 9, 13, stream.length]) {
      const d = new FrameDecoder();
      const frames = [];
      for (let off = 0; off < stream.length; off += step) frames.push(...d.push(stream.slice(off, off + step)));
      expect(frames.map((f) => [f.type, f.session, new TextDecoder().decode(f.payload)])).toEqual([
        [FrameType.stdout, 7, "hello"],
        [FrameType.stdinEnd, 7, ""],
        [FrameType.exit, 7, '{"code":3}'],
      ]);
      expect(d.pending).toBe(0);
    }
  });

  test("a header announcing more than MAX_FRAME throws before any payload is buffered", () => {
    const h = new Uint8Array(FRAME_HEADER);
    new DataView(h.buffer).setUint32(5, MAX_FRAME + 1);
    expect(() => new FrameDecoder().push(h)).toThrow(/exceeds/);
  });

  test("encodeFrame refuses an oversized payload; dataFrames splits one", () => {
    expect(() => encodeFrame(FrameType.stdout, 1, new Uint8Array(MAX_FRAME + 1))).toThrow(/exceeds/);
    const parts = dataFrames(FrameType.stdout, 1, new Uint8Array(MAX_FRAME * 2 + 5));
    expect(parts.map((p) => p.length - FRAME_HEADER)).toEqual([MAX_FRAME, MAX_FRAME, 5]);
    expect(dataFrames(FrameType.stdout, 1, new Uint8Array(0))).toEqual([]);
  });
});

describe("parseStart", () => {
  const ok = { argv: ["git", "status"], cwd: "/r", env: { TERM: "xterm" }, stdin: false };
  test("a well-formed request passes unchanged", () => {
    expect(parseStart(ok)).toEqual(ok);
  });
  test.each([
    ["no argv", { ...ok, argv: [] }],
    ["argv not strings", { ...ok, argv: ["a", 1] }],
    ["NUL in argv", { ...ok, argv: ["a\0b"] }],
    ["relative cwd", { ...ok, cwd: "r" }],
    ["env name with '='", { ...ok, env: { "A=B": "x" } }],
    ["env value not a string", { ...ok, env: { A: 1 } }],
    ["env an array", { ...ok, env: ["A=1"] }],
    ["stdin missing", { argv: ok.argv, cwd: ok.cwd, env: {} }],
    ["not an object", "git status"],
    ["null", null],
  ])("refused: %s", (_label, value) => {
    expect(parseStart(value)).toBeUndefined();
  });
});

describe("parseExit / parseJson", () => {
  test("exit codes are 0..255 integers; anything else is 255", () => {
    expect(parseExit({ code: 0 })).toBe(0);
    expect(parseExit({ code: 137 })).toBe(137);
    for (const bad of [{ code: -1 }, { code: 256 }, { code: 1.5 }, { code: "0" }, {}, null, undefined]) expect(parseExit(bad)).toBe(255);
  });
  test("a payload that is not JSON is undefined, never a throw", () => {
    expect(parseJson(enc.encode("{"))).toBeUndefined();
    expect(parseJson(enc.encode('{"v":1}'))).toEqual({ v: 1 });
  });
});
