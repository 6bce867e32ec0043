// What a sandbox may hand over on listen.sock: the proxy's loopback listener, and, only for a container with the
// transparent path, 0.0.0.0 on a transparent port (the container's own loopback). Never a 0.0.0.0 listener otherwise:
// on a host's network namespace it would let the network use the sandbox's proxy.
import { expect, test } from "bun:test";
import { handedListener } from "../../../src/guards/proxy";

const l = (address: string, port: number, more: Partial<{ stream: boolean; listening: boolean }> = {}) => ({ family: "inet" as const, stream: true, listening: true, address, port, ...more });

test("the proxy's loopback listener is taken with or without the transparent path", () => {
  expect(handedListener(l("127.0.0.1", 3128), null)).toBeNull();
  expect(handedListener(l("127.0.0.1", 3128), [80, 443])).toBeNull();
});

test("0.0.0.0 on a transparent port only with the transparent path: 80, 443, and what its allowlist names", () => {
  expect(handedListener(l("0.0.0.0", 443), [80, 443])).toBeNull();
  expect(handedListener(l("0.0.0.0", 80), [80, 443])).toBeNull();
  expect(handedListener(l("0.0.0.0", 443), null)).toContain("no transparent path");
  expect(handedListener(l("0.0.0.0", 8080), [80, 443])).toContain("not a transparent port");
  // A port the sandbox's allowlist names (sbx allow host:8080) is one of its transparent ports.
  expect(handedListener(l("0.0.0.0", 8080), [80, 443, 8080])).toBeNull();
  expect(handedListener(l("0.0.0.0", 443, { listening: false }), [80, 443])).toContain("not a listening");
});

test("any other address, and what is not a socket, stays refused", () => {
  expect(handedListener(l("10.0.0.5", 443), [80, 443])).toContain("not loopback");
  expect(handedListener({ error: "fd 9 is not a socket" }, [80, 443])).toBe("fd 9 is not a socket");
});
