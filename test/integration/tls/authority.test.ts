// ca-key-host-only: sbx's CA key is a private file in a private dir under sbx's state, made once and kept; a key anyone
// else could read is refused, never used; leaves for a host are made once and kept, and verify through the CA only.
import { afterEach, describe, expect, test } from "bun:test";
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer, connect } from "node:tls";
import { Authority, authorityFiles } from "../../../src/tls/authority";

let dir = "";
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("ca-key-host-only", () => {
  test("made once: key 0600 in a 0700 dir; opened again, the same CA", async () => {
    dir = mkdtempSync(join(tmpdir(), "sbx-ca-"));
    const a = await Authority.open(dir);
    const f = authorityFiles(dir);
    expect(statSync(f.dir).mode & 0o777).toBe(0o700);
    expect(statSync(f.key).mode & 0o777).toBe(0o600);
    expect(readFileSync(f.key, "utf8")).toContain("PRIVATE KEY");
    expect(a.certPem).not.toContain("PRIVATE");
    const b = await Authority.open(dir);
    expect(b.certPem).toBe(a.certPem);
  });

  test("a key others can read is refused with what to do, never used", async () => {
    dir = mkdtempSync(join(tmpdir(), "sbx-ca-"));
    await Authority.open(dir);
    chmodSync(authorityFiles(dir).key, 0o640);
    const err = await Authority.open(dir).catch((e: unknown) => e as Error);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toContain("is not a private file of yours");
  });

  test("a leaf per host, kept; a client trusting only the CA accepts it for that name and no other", async () => {
    dir = mkdtempSync(join(tmpdir(), "sbx-ca-"));
    const a = await Authority.open(dir);
    const c1 = a.contextFor("api.test");
    expect(a.contextFor("api.test")).toBe(c1);
    const secureContext = await c1;
    const srv = createServer({ SNICallback: (_n, cb) => cb(null, secureContext) }, (s) => s.end("hi"));
    await new Promise<void>((r) => srv.listen(0, "127.0.0.1", () => r()));
    const port = (srv.address() as { port: number }).port;
    const dial = (servername: string) =>
      new Promise<string>((resolve) => {
        const s = connect({ host: "127.0.0.1", port, servername, ca: a.certPem });
        let out = "";
        s.on("data", (d) => (out += d));
        s.on("end", () => resolve(out));
        s.on("error", (e) => resolve(`error ${(e as NodeJS.ErrnoException).code}`));
      });
    expect(await dial("api.test")).toBe("hi");
    expect(await dial("other.test")).toBe("error ERR_TLS_CERT_ALTNAME_INVALID");
    srv.close();
  });
});
