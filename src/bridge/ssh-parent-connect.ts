// ssh's ProxyCommand for the bridge's git behind a parent proxy (bridge/gate-ssh.ts builds the command line): asks the
// daemon's relay (sys/parent-relay.ts, on the host's loopback) for `CONNECT host:port`, then carries ssh's stdin and
// stdout over the tunnel. Host and port are argv (sbx fixed them; not secret); the relay's address and its one-call
// password come in the environment (SBX_PARENT_RELAY, SBX_PARENT_RELAY_PASSWORD), never argv, which other users can
// read. The parent's own credentials never reach this process: the relay holds them.
// usage: bun ssh-parent-connect.ts <host> <port>
import { connect, type Socket } from "node:net";
import { connectHead } from "../core/parent-proxy";

/** How long the relay (and the parent behind it) has to open the tunnel. */
const OPEN_TIMEOUT_MS = 30_000;

function fail(why: string): never {
  process.stderr.write(`sbx: ssh through the parent proxy: ${why}\n`);
  process.exit(1);
}

function main(): void {
  const [host, portText] = process.argv.slice(2);
  const relay = /^127\.0\.0\.1:([0-9]{1,5})$/.exec(process.env.SBX_PARENT_RELAY ?? "");
  const password = process.env.SBX_PARENT_RELAY_PASSWORD ?? "";
  // What the gate fixed: a host name or address and a port (the relay checks them again against its lease).
  if (host === undefined || !/^[A-Za-z0-9.:_-]+$/.test(host) || !/^[0-9]{1,5}$/.test(portText ?? "")) fail("usage: ssh-parent-connect <host> <port>");
  if (relay === null || !/^[A-Za-z0-9_-]+$/.test(password)) fail("no relay in the environment (SBX_PARENT_RELAY, SBX_PARENT_RELAY_PASSWORD)");
  const up: Socket = connect({ host: "127.0.0.1", port: Number(relay[1]), allowHalfOpen: true, noDelay: true });
  const timer = setTimeout(() => fail(`the relay did not open a tunnel to ${host}:${portText} within ${OPEN_TIMEOUT_MS / 1000} s`), OPEN_TIMEOUT_MS);
  up.on("error", (e) => fail(`the relay: ${e.message}`));
  up.once("connect", () => up.write(connectHead(host, Number(portText), `Basic ${Buffer.from(`sbx:${password}`).toString("base64")}`), "latin1"));
  let buf: Buffer = Buffer.alloc(0);
  const onData = (d: Buffer) => {
    buf = buf.length === 0 ? d : Buffer.concat([buf, d]);
    const end = buf.indexOf("\r\n\r\n");
    if (end < 0) {
      if (buf.length > 16 * 1024) fail("the relay's answer has no end");
      return;
    }
    up.off("data", onData);
    clearTimeout(timer);
    const head = buf.subarray(0, end).toString("latin1");
    if (!/^HTTP\/1\.[01] 200 /.test(head)) {
      // The relay's refusal as it said it (its status line and its one-line reason: never a credential), once it ends.
      const nl = head.indexOf("\r\n");
      const status = (nl < 0 ? head : head.slice(0, nl)).replace(/[^\x20-\x7e]/g, "?");
      let body = buf.subarray(end + 4);
      up.on("data", (d: Buffer) => (body = Buffer.concat([body, d]).subarray(0, 4096)));
      up.once("end", () => {
        const why = body.toString("utf8").replace(/[^\x20-\x7e]+/g, " ").trim();
        fail(`${status}${why ? `: ${why}` : ""}`);
      });
      return;
    }
    const rest = buf.subarray(end + 4);
    if (rest.length > 0) process.stdout.write(rest);
    // ssh closes our stdin when it is done sending (then the relay hears our end); the server's end ends our stdout.
    up.pipe(process.stdout);
    process.stdin.pipe(up);
    process.stdout.once("finish", () => process.exit(0));
    up.once("close", (hadError) => {
      if (hadError) process.exit(1);
    });
  };
  up.on("data", onData);
}

if (import.meta.main) main();
