// The demo's private npm registry: one package, its metadata and tarball given only to a request carrying the token
// (`Authorization: Bearer <token>`), over plain HTTP on the host's 127.0.0.1, as a developer's Verdaccio would be. The
// sandbox reaches it as host.sbx.internal once it is published; the token is bound to that name on the host.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Exec } from "../sys/exec";

export const PACKAGE = "sbx-demo-private";
/** What the package's main module exports: the sandbox prints it once installed. */
export const GREETING = "installed from the demo's private registry";

export interface Registry {
  url: string;
  port: number;
  /** `127.0.0.1:port`: what the demo publishes to the sandbox. */
  pattern: string;
  /** Requests seen: path, and whether each carried the token (`real`), the sandbox's placeholder, or nothing. */
  requests: Array<{ path: string; auth: "token" | "other" | "none" }>;
  stop(): Promise<void>;
}

/** runs: tar -czf <dir>/package.tgz -C <dir> package (npm's tarball layout: a `package/` dir). */
async function packTarball(exec: Exec, dir: string): Promise<Uint8Array> {
  const pkg = join(dir, "package");
  mkdirSync(pkg, { recursive: true });
  writeFileSync(join(pkg, "package.json"), JSON.stringify({ name: PACKAGE, version: "1.0.0", main: "index.js" }));
  writeFileSync(join(pkg, "index.js"), `module.exports = ${JSON.stringify(GREETING)};\n`);
  await exec.run(["tar", "-czf", join(dir, "package.tgz"), "-C", dir, "package"]);
  return readFileSync(join(dir, "package.tgz"));
}

/** Starts the registry on 127.0.0.1 (any port); without the token every request gets 401. */
export async function startRegistry(exec: Exec, dir: string, token: string): Promise<Registry> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const tarball = await packTarball(exec, dir);
  const integrity = `sha512-${new Bun.CryptoHasher("sha512").update(tarball).digest("base64")}`;
  const requests: Registry["requests"] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      const u = new URL(req.url);
      const auth = req.headers.get("authorization");
      const ok = auth === `Bearer ${token}`;
      requests.push({ path: u.pathname, auth: ok ? "token" : auth ? "other" : "none" });
      if (!ok) return Response.json({ error: "this registry needs a token" }, { status: 401, headers: { "WWW-Authenticate": 'Bearer realm="sbx-demo"' } });
      // The tarball's URL names the registry as the client did (host.sbx.internal:PORT inside the sandbox).
      const base = `http://${req.headers.get("host") ?? u.host}`;
      if (u.pathname === `/${PACKAGE}`) {
        return Response.json({ name: PACKAGE, "dist-tags": { latest: "1.0.0" }, versions: { "1.0.0": { name: PACKAGE, version: "1.0.0", main: "index.js", dist: { tarball: `${base}/${PACKAGE}/-/${PACKAGE}-1.0.0.tgz`, integrity } } } });
      }
      if (u.pathname === `/${PACKAGE}/-/${PACKAGE}-1.0.0.tgz`) return new Response(tarball, { headers: { "content-type": "application/octet-stream" } });
      return Response.json({ error: "not found" }, { status: 404 });
    },
  });
  const port = server.port ?? 0;
  return { url: `http://127.0.0.1:${port}`, port, pattern: `127.0.0.1:${port}`, requests, stop: () => server.stop(true) };
}
