// The WebCrypto certificate (used when openssl is missing) is one a TLS client accepts for its IP, and only when told to trust it.
import { describe, expect, test } from "bun:test";
import { webCryptoCert } from "../../../src/demo/x509";

describe("webCryptoCert", () => {
  test("a loopback HTTPS server with it is trusted through the certificate itself, and refused without it", async () => {
    const c = await webCryptoCert(["127.0.0.1"]);
    expect(c.certPem).toStartWith("-----BEGIN CERTIFICATE-----\n");
    expect(c.keyPem).toStartWith("-----BEGIN PRIVATE KEY-----\n");
    const server = Bun.serve({ hostname: "127.0.0.1", port: 0, tls: { cert: c.certPem, key: c.keyPem }, fetch: () => new Response("ok") });
    try {
      const url = `https://127.0.0.1:${server.port}/`;
      const r = await fetch(url, { tls: { ca: c.certPem } } as RequestInit);
      expect(await r.text()).toBe("ok");
      await expect(fetch(url)).rejects.toThrow();
      // Another run's certificate does not vouch for this one.
      const other = await webCryptoCert(["127.0.0.1"]);
      await expect(fetch(url, { tls: { ca: other.certPem } } as RequestInit)).rejects.toThrow();
    } finally {
      await server.stop(true);
    }
  });

  test("it names only the addresses it was made for", async () => {
    const c = await webCryptoCert(["127.0.0.2"]);
    const server = Bun.serve({ hostname: "127.0.0.1", port: 0, tls: { cert: c.certPem, key: c.keyPem }, fetch: () => new Response("ok") });
    try {
      await expect(fetch(`https://127.0.0.1:${server.port}/`, { tls: { ca: c.certPem } } as RequestInit)).rejects.toThrow();
    } finally {
      await server.stop(true);
    }
  });
});
