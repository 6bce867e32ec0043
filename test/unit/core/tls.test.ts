// The name a TLS client asks for, read from real clients' first bytes (Bun's TLS, openssl s_client, curl), and never
// misread from a sandbox's crafted ones.
import { describe, expect, test } from "bun:test";
import { createServer } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { readClientHello } from "../../../src/core/tls";

/** The first bytes a client sends to a listener, whatever it is (the listener answers nothing). */
async function firstFlight(start: (port: number) => () => void): Promise<Uint8Array> {
  let stop = () => {};
  const got = new Promise<Uint8Array>((resolve) => {
    const chunks: Buffer[] = [];
    const srv = createServer((s) => {
      s.on("data", (c: Buffer) => {
        chunks.push(c);
        const all = Buffer.concat(chunks);
        if (readClientHello(all).kind !== "more" || all.length > 70_000) {
          resolve(new Uint8Array(all));
          s.destroy();
          srv.close();
        }
      });
      s.on("error", () => {});
    });
    srv.listen(0, "127.0.0.1", () => {
      stop = start((srv.address() as { port: number }).port);
    });
  });
  const b = await got;
  stop();
  return b;
}

describe("tls: the server name of real clients' ClientHellos", () => {
  test("Bun's own TLS client (what node and Bun programs send)", async () => {
    const b = await firstFlight((port) => {
      const c = tlsConnect({ host: "127.0.0.1", port, servername: "Registry.NPMJS.org" });
      c.on("error", () => {});
      return () => c.destroy();
    });
    expect(readClientHello(b)).toEqual({ kind: "hello", serverName: "registry.npmjs.org" });
  });

  test("openssl s_client, with and without a name", async () => {
    for (const [args, want] of [[["-servername", "example.com"], "example.com"], [["-noservername"], null]] as const) {
      const b = await firstFlight((port) => {
        const p = Bun.spawn(["openssl", "s_client", "-connect", `127.0.0.1:${port}`, ...args], { stdin: "pipe", stdout: "ignore", stderr: "ignore" });
        return () => p.kill();
      });
      expect(readClientHello(b)).toEqual({ kind: "hello", serverName: want });
    }
  });

  test("curl (OpenSSL, its own extensions)", async () => {
    const b = await firstFlight((port) => {
      const p = Bun.spawn(["curl", "-sk", "--max-time", "5", "--resolve", `api.example.org:${port}:127.0.0.1`, `https://api.example.org:${port}/`], { stdout: "ignore", stderr: "ignore" });
      return () => p.kill();
    });
    expect(readClientHello(b)).toEqual({ kind: "hello", serverName: "api.example.org" });
  });

  test("a ClientHello cut anywhere asks for more; split across two records it is still read", async () => {
    const b = await firstFlight((port) => {
      const c = tlsConnect({ host: "127.0.0.1", port, servername: "split.example" });
      c.on("error", () => {});
      return () => c.destroy();
    });
    for (const cut of [1, 3, 5, 9, 40, b.length - 1]) expect(readClientHello(b.slice(0, cut)).kind).toBe("more");
    // The same handshake in two records (a client may fragment it).
    const body = b.slice(5);
    const half = Math.floor(body.length / 2);
    const rec = (x: Uint8Array) => [0x16, 0x03, 0x01, x.length >> 8, x.length & 0xff, ...x];
    expect(readClientHello(Uint8Array.from([...rec(body.slice(0, half)), ...rec(body.slice(half))]))).toEqual({ kind: "hello", serverName: "split.example" });
  });
});

describe("tls: crafted first bytes cannot pass for another name", () => {
  /** A minimal ClientHello with these extensions. */
  const hello = (exts: number[][]): Uint8Array => {
    const ext = exts.flat();
    const body = [0x03, 0x03, ...new Array(32).fill(7), 0, 0, 2, 0x13, 0x01, 1, 0, ext.length >> 8, ext.length & 0xff, ...ext];
    const hs = [1, body.length >> 16, (body.length >> 8) & 0xff, body.length & 0xff, ...body];
    return Uint8Array.from([0x16, 0x03, 0x01, hs.length >> 8, hs.length & 0xff, ...hs]);
  };
  const sni = (...names: string[]) => {
    const list = names.flatMap((n) => [0, n.length >> 8, n.length & 0xff, ...[...n].map((c) => c.charCodeAt(0))]);
    return [0, 0, (list.length + 2) >> 8, (list.length + 2) & 0xff, list.length >> 8, list.length & 0xff, ...list];
  };

  test("plain text, SSH and HTTP are not TLS (nothing to check)", () => {
    for (const s of ["GET / HTTP/1.1\r\n", "SSH-2.0-OpenSSH\r\n", "\x16\x02garbage"]) expect(readClientHello(new TextEncoder().encode(s)).kind).toBe("not-tls");
  });

  test("two server_name extensions, or two host names in one, are malformed (which would the server use?)", () => {
    expect(readClientHello(hello([sni("a.com"), sni("b.com")])).kind).toBe("malformed");
    expect(readClientHello(hello([sni("a.com", "b.com")])).kind).toBe("malformed");
  });

  test("a host name with NUL or other control bytes is malformed, never truncated to a name that passes", () => {
    expect(readClientHello(hello([sni("allowed.com\x00.evil.com")])).kind).toBe("malformed");
    expect(readClientHello(hello([sni("allowed.com\n")])).kind).toBe("malformed");
  });

  test("lengths that run past their container are malformed; another handshake type is malformed", () => {
    const h = hello([sni("a.com")]);
    const bad = Uint8Array.from(h);
    bad[bad.length - 6] = 0xff; // the list length now runs past the extension
    expect(readClientHello(bad).kind).toBe("malformed");
    const server = Uint8Array.from(h);
    server[5] = 2; // ServerHello
    expect(readClientHello(server).kind).toBe("malformed");
  });

  test("a ClientHello with no extensions, or none naming a server, names nothing", () => {
    expect(readClientHello(hello([]))).toEqual({ kind: "hello", serverName: null });
    expect(readClientHello(hello([[0, 10, 0, 2, 0, 0x17]]))).toEqual({ kind: "hello", serverName: null });
  });

  test("random bytes after a handshake header never throw", () => {
    let seed = 11;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff), seed & 0xff);
    for (let i = 0; i < 3000; i++) {
      const b = Uint8Array.from({ length: 5 + (rnd() % 300) }, rnd);
      b[0] = 0x16;
      b[1] = 3;
      expect(() => readClientHello(b)).not.toThrow();
    }
  });
});
