// ports-held with real sockets: who holds a loopback port (from /proc), and claimPort's rule: a sandbox's guest is ended
// and the port taken back; anything else is left alone and named.
import { afterEach, describe, expect, test } from "bun:test";
import { createServer, type Server } from "node:net";
import { claimPort, inUse, parseProcNet, portHolders, procNetAddress } from "../../../src/sys/port-holders";
import { FakeExec } from "../../fakes/exec";

const canRead = process.platform === "linux";
let servers: Server[] = [];
afterEach(async () => {
  for (const s of servers) await new Promise((r) => s.close(() => r(undefined)));
  servers = [];
});
/** A listener of this process on 127.0.0.1 (a free port the kernel picks). */
async function listen(host = "127.0.0.1"): Promise<number> {
  const s = createServer();
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, host, () => r()));
  return (s.address() as { port: number }).port;
}
/** A bind of the same port, as the daemon's would be: fails while it is held. */
function bindAgain(port: number): () => Promise<Server> {
  return () =>
    new Promise((resolve, reject) => {
      const s = createServer();
      s.once("error", reject);
      s.listen(port, "127.0.0.1", () => (servers.push(s), resolve(s)));
    });
}

describe("ports-held: who holds a port", () => {
  test("pure: /proc/net addresses in both families, and only sockets that collide with 127.0.0.1:<port>", () => {
    expect(procNetAddress("0100007F")).toBe("127.0.0.1");
    expect(procNetAddress("00000000")).toBe("0.0.0.0");
    expect(procNetAddress("00000000000000000000000000000000")).toBe("::");
    expect(procNetAddress("0000000000000000FFFF00000100007F")).toBe("::ffff:127.0.0.1");
    expect(procNetAddress("00000000000000000000000001000000")).toBe("::1");
    const table = [
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode",
      "   0: 0100007F:5DC0 00000000:0000 0A 00000000:00000000 00:00000000 00000000   994        0 111 1",
      "   1: 0200007F:5DC0 00000000:0000 0A 00000000:00000000 00:00000000 00000000   995        0 222 1", // 127.0.0.2: no collision
      "   2: 00000000:5DC0 00000000:0000 0A 00000000:00000000 00:00000000 00000000   996        0 333 1",
      "   3: 0100007F:5DC0 0100007F:9999 01 00000000:00000000 00:00000000 00000000   997        0 444 1", // a connection, not a listener
      "   4: 0100007F:5DC1 00000000:0000 0A 00000000:00000000 00:00000000 00000000   998        0 555 1",
    ].join("\n");
    expect(parseProcNet(table, "tcp", 0x5dc0)).toEqual([
      { address: "127.0.0.1", uid: 994, inode: 111 },
      { address: "0.0.0.0", uid: 996, inode: 333 },
    ]);
    // UDP: any bound socket (state 07) on the port.
    expect(parseProcNet(table.replace(/ 0A /g, " 07 "), "udp", 0x5dc0).map((r) => r.uid)).toEqual([994, 996, 997]);
    expect(inUse(Object.assign(new Error("listen EADDRINUSE"), { code: "EADDRINUSE" }))).toBe(true);
    expect(inUse(new Error("bind 127.0.0.1:1: Address already in use (errno 98)"))).toBe(true);
    expect(inUse(new Error("bind: Permission denied"))).toBe(false);
  });

  test.skipIf(!canRead)("a real listener of this process is found with its pid, uid and argv", async () => {
    const port = await listen();
    const h = portHolders("tcp", port);
    expect(h.length).toBe(1);
    expect(h[0]).toMatchObject({ address: "127.0.0.1", uid: process.getuid!(), pids: [process.pid] });
    expect(h[0]!.command).toContain("bun");
    expect(portHolders("tcp", port === 65535 ? 65534 : port + 1).filter((x) => x.pids.includes(process.pid))).toEqual([]);
  });

  test.skipIf(!canRead)("held by something that is no sandbox's guest: nothing is ended, and the refusal names the pid, user and what to do", async () => {
    const port = await listen();
    const killed: number[] = [];
    const exec = new FakeExec().always((a) => a[0] === "getent", { stdout: "someone:x:1:1::/:/bin/sh\n" });
    const err = await claimPort({ proto: "tcp", port, what: "sandbox b's proxy port", sandbox: "b", bind: bindAgain(port), guestOf: async () => null, exec, reclaimed: () => {}, kill: (p) => void killed.push(p) }).catch((e) => e);
    expect(killed).toEqual([]);
    expect(err.message).toContain(`127.0.0.1:${port} (sandbox b's proxy port) is held by pid ${process.pid}`);
    expect(err.message).toContain("of user someone");
    expect(err.hint).toContain(`kill ${process.pid}`);
  });

  test.skipIf(!canRead)("held by a sandbox's guest: its process is ended, and the second time every process of that guest; each said", async () => {
    const port = await listen();
    const killed: number[] = [];
    const said: Record<string, unknown>[] = [];
    const exec = new FakeExec().always((a) => a[0] === "getent", { stdout: "sbx-x-a1:x:994:994::/h:/bin/bash\n" }).always((a) => a[0] === "pkill");
    // The fake kill ends nothing, so the guest keeps it: sbx gives up after its rounds, having said each.
    const err = await claimPort({ proto: "tcp", port, what: "p", sandbox: "b", bind: bindAgain(port), guestOf: async () => "a", exec, reclaimed: (d) => void said.push(d), kill: (p) => void killed.push(p), rounds: 3 }).catch((e) => e);
    expect(err.message).toContain(`cannot take back 127.0.0.1:${port}`);
    expect(killed).toEqual([process.pid, process.pid, process.pid]);
    expect(said.map((d) => [d.heldBy, d.everyProcess])).toEqual([["a", false], ["a", true], ["a", true]]);
    expect(exec.calls.filter((c) => c.argv[0] === "pkill").map((c) => c.argv.join(" "))).toEqual([`pkill -KILL -u ${process.getuid!()}`, `pkill -KILL -u ${process.getuid!()}`]);
    // Once it is free, the bind goes through on the next round.
    await new Promise((r) => servers.shift()!.close(() => r(undefined)));
    const s = await claimPort({ proto: "tcp", port, what: "p", sandbox: "b", bind: bindAgain(port), guestOf: async () => "a", exec, reclaimed: () => {} });
    expect((s.address() as { port: number }).port).toBe(port);
  });
});
