// The Host header's authority as the proxy compares it with the request target.
import { expect, test } from "bun:test";
import { hostHeaderAuthority } from "../../../src/proxy/decision";

test("normalised, port 80 when none; several values or garbage: null; no header: undefined", () => {
  expect(hostHeaderAuthority(undefined)).toBeUndefined();
  expect(hostHeaderAuthority("Example.COM.")).toEqual({ host: "example.com", port: 80 });
  expect(hostHeaderAuthority("example.com:8080")).toEqual({ host: "example.com", port: 8080 });
  expect(hostHeaderAuthority("[::1]:8080")).toEqual({ host: "::1", port: 8080 });
  expect(hostHeaderAuthority("[2001:db8::1]")).toEqual({ host: "2001:db8::1", port: 80 });
  expect(hostHeaderAuthority("0x7f.1")).toEqual({ host: "127.0.0.1", port: 80 });
  for (const bad of [["a.test", "b.test"], "", "a b", "a.test:99999", "::1"]) expect({ bad, r: hostHeaderAuthority(bad as string) }).toEqual({ bad, r: null });
});
