// Which parsed requests the proxy forwards: one unambiguous end (one Content-Length or chunked), HTTP/1.x only.
import { expect, test } from "bun:test";
import { framingProblem } from "../../../src/proxy/egress-proxy";

test("one Content-Length, or Transfer-Encoding: chunked, or neither: forwarded", () => {
  expect(framingProblem("1.1", ["Host", "a.test"])).toBeNull();
  expect(framingProblem("1.1", ["Content-Length", "12"])).toBeNull();
  expect(framingProblem("1.1", ["transfer-encoding", "Chunked"])).toBeNull();
  expect(framingProblem("1.0", ["Content-Length", "0"])).toBeNull();
});

test("everything else is refused, with the reason", () => {
  const cases: [string, string[], RegExp][] = [
    ["0.9", [], /not HTTP\/1\.1/],
    ["2.0", [], /not HTTP\/1\.1/],
    ["1.1", ["Content-Length", "1", "content-length", "1"], /more than one Content-Length/],
    ["1.1", ["Content-Length", "1, 1"], /not a number/],
    ["1.1", ["Content-Length", "+1"], /not a number/],
    ["1.1", ["Content-Length", "1234567890123456"], /not a number/],
    ["1.1", ["Transfer-Encoding", "chunked", "Transfer-Encoding", "chunked"], /more than one Transfer-Encoding/],
    ["1.1", ["Transfer-Encoding", "chunked", "Content-Length", "3"], /both/],
    ["1.1", ["Transfer-Encoding", "gzip, chunked"], /other than chunked/],
    ["1.1", ["Transfer-Encoding", "xchunked"], /other than chunked/],
    ["1.1", ["Transfer-Encoding", "chunked "], /other than chunked/],
    ["1.0", ["Transfer-Encoding", "chunked"], /HTTP\/1\.0/],
  ];
  for (const [v, h, why] of cases) expect({ v, h, r: framingProblem(v, h) }).toEqual({ v, h, r: expect.stringMatching(why) });
});
