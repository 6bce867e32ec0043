// NO_PROXY read as curl reads it, shown against curl itself: for each list and host, curl (with the list in its
// environment and a proxy on loopback) asks the proxy or goes straight out, and sbx's `noProxyMatches` must say the
// same. Straight out only ever reaches loopback: names are pinned there with --resolve, addresses are loopback ones.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createServer } from "node:net";
import { noProxyMatches } from "../../../src/core/parent-proxy";
import { startFakeParent, type FakeParent } from "../../support/fake-parent";

const curl = Bun.which("curl");

/** A loopback port nothing listens on (a direct attempt is refused at once). */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const p = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return p;
}

describe.skipIf(!curl)("parent-proxy NO_PROXY: sbx and curl agree (curl is needed to compare with)", () => {
  let parent: FakeParent;
  let port: number;
  beforeAll(async () => {
    parent = await startFakeParent({ sites: {} });
    port = await closedPort();
  });
  afterAll(() => parent.close());

  // Hosts are loopback names and addresses only: a direct attempt never leaves the machine. Left out, as curl's
  // versions differ there and sbx follows today's lib/noproxy.c: a blank not followed by a comma (7.88, Debian 12's,
  // takes it as a separator; today's curl ends the list there) and IPv6 networks (7.88 compares an IPv6 host as text;
  // today's curl as an address, though it gets prefixes that are not whole bytes wrong, which sbx does not copy).
  const cases: [string, string][] = [
    ["*", "a.corp"],
    ["*,b.corp", "a.corp"],
    ["*.corp", "a.corp"],
    [".corp", "corp"],
    [".corp", "a.b.corp"],
    ["corp", "acorp"],
    ["corp.", "a.corp"],
    ["CORP", "a.corp"],
    [" x.test , a.corp", "a.corp"],
    ["x.test,,a.corp", "a.corp"],
    ["127.0.0.0/8", "127.9.9.9"],
    ["127.0.0.0/24", "127.9.9.9"],
    ["127.9.9.9", "127.9.9.9"],
    ["127.9.9.0/0", "127.9.9.9"],
    ["127.9.9.0/33", "127.9.9.9"],
    ["127.0.0.0/8", "a.corp"],
    ["::1", "[::1]"],
    ["a.corp", "[::1]"],
  ];
  for (const [list, host] of cases) {
    test(`NO_PROXY=${JSON.stringify(list)} for ${host}`, async () => {
      const before = parent.seen.length;
      const name = host.startsWith("[") || /^[0-9.]+$/.test(host) ? null : host;
      const p = Bun.spawn([curl!, "-s", "-o", "/dev/null", "--max-time", "3", "-x", parent.url, ...(name ? ["--resolve", `${name}:${port}:127.0.0.1`] : []), `http://${host}:${port}/`], {
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", no_proxy: list },
        stdout: "ignore",
        stderr: "ignore",
      });
      await p.exited;
      const viaProxy = parent.seen.length > before;
      expect({ list, host, skipsParent: noProxyMatches(list, host) }).toEqual({ list, host, skipsParent: !viaProxy });
    });
  }
});
