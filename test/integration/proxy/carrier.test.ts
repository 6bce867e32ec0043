// The seam after a CONNECT is allowed (`carrierFor`): the connection goes to the carrier chosen for it, with the bytes
// that came after its head, and only once the decision allowed it; where none is chosen, the opaque tunnel carries it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { join } from "node:path";
import { fdPassing } from "../../../shims/fd-pass";
import type { Carrier } from "../../../src/proxy/context";
import type { Allowed } from "../../../src/proxy/decision";
import { startEgressProxy, type EgressProxy } from "../../../src/proxy/egress-proxy";
import { echoServer, tempDir } from "./helpers";

const lib = fdPassing();
type Way = "socket" | "port";
const ways: Way[] = lib ? ["socket", "port"] : ["socket"];

let tmp: ReturnType<typeof tempDir>;
let echo: Awaited<ReturnType<typeof echoServer>>;
let proxy: EgressProxy;
let handedPort = 0;
/** Every connection the test's carrier was given: the checked host and port, and the bytes after the CONNECT head. */
const carried: string[] = [];
/** A port nothing listens on, allowed: only the test's carrier answers there. */
const TERMINATED = 9;

/** Stands for a TLS terminator: answers the CONNECT itself and says what it was given. */
const terminator: Carrier = (allowed: Allowed, client, first, replies) => {
  carried.push(`${allowed.host}:${allowed.port} address=${allowed.address} first=${first.toString()} replies=${replies}`);
  client.end(`HTTP/1.1 200 Connection Established\r\n\r\ncarried by the terminator`);
};

beforeAll(async () => {
  tmp = tempDir();
  echo = await echoServer();
  proxy = await startEgressProxy({
    socketPath: join(tmp.dir, "sb", "proxy.sock"),
    sandbox: { id: 1, name: "demo" },
    policy: () => ({ sandbox: [], global: [], published: [`127.0.0.1:${TERMINATED}`, `127.0.0.1:${echo.port}`] }),
    resolve: async () => [],
    carrierFor: (a) => (a.port === TERMINATED ? terminator : null),
  });
  if (lib) {
    const l = lib.listenLoopback(0);
    handedPort = l.port;
    proxy.serveListener(l.fd);
  }
});
afterAll(async () => {
  await proxy.close();
  await echo.close();
  tmp.cleanup();
});

/** Writes `text`, half-closes, reads to the end. */
function exchange(way: Way, text: string): Promise<string> {
  return new Promise((resolve) => {
    const s = way === "socket" ? connect({ path: proxy.socketPath, allowHalfOpen: true }) : connect({ host: "127.0.0.1", port: handedPort, allowHalfOpen: true });
    let out = "";
    const t = setTimeout(() => s.destroy(), 3000);
    s.on("data", (d: Buffer) => (out += d.toString("latin1")));
    s.on("close", () => {
      clearTimeout(t);
      resolve(out);
    });
    s.on("error", () => undefined);
    s.write(text);
    s.end();
  });
}

describe("carrier: after a CONNECT is allowed", () => {
  for (const way of ways) {
    test(`${way}: the chosen carrier gets the client, the checked address and the bytes after the head`, async () => {
      carried.length = 0;
      const out = await exchange(way, `CONNECT 127.0.0.1:${TERMINATED} HTTP/1.1\r\nHost: x\r\n\r\nhello`);
      expect(out).toBe("HTTP/1.1 200 Connection Established\r\n\r\ncarried by the terminator");
      expect(carried).toEqual([`127.0.0.1:${TERMINATED} address=127.0.0.1 first=hello replies=true`]);
    });
    test(`${way}: a refused CONNECT never reaches a carrier; with none chosen the opaque tunnel carries it`, async () => {
      carried.length = 0;
      const refused = await exchange(way, "CONNECT 127.0.0.2:9 HTTP/1.1\r\nHost: x\r\n\r\n");
      expect(refused).toMatch(/^HTTP\/1\.1 403 /);
      const tunnelled = await exchange(way, `CONNECT 127.0.0.1:${echo.port} HTTP/1.1\r\nHost: x\r\n\r\nping`);
      expect(tunnelled).toBe("HTTP/1.1 200 Connection Established\r\n\r\npingbye 4");
      expect(carried).toEqual([]);
    });
  }
});
