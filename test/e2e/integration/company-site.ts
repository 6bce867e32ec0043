// The company's intranet host, as company-network-docker.test.ts runs it in a container (`bun -e` of this file's text):
// HTTPS on 443 with a certificate from the company's CA, serving what a company keeps there: a page (/hello), git over
// smart HTTP (/git/…, git http-backend as CGI), an npm registry (/npm/…) and a pip index (/pypi/…), both static files
// from /site. It says who asked for what ("SAW <host> <method> <path>"), and who it is (SITE_NAME) in every answer.
import { existsSync, readFileSync, statSync } from "node:fs";
import { join, normalize } from "node:path";

const NAME = process.env.SITE_NAME ?? "intranet";
const ROOT = "/site";

/** git http-backend for one request: CGI in, headers and body out. */
async function git(req: Request, u: URL): Promise<Response> {
  const body = req.method === "POST" ? new Uint8Array(await req.arrayBuffer()) : undefined;
  const env: Record<string, string> = {
    PATH: "/usr/bin:/bin",
    GIT_PROJECT_ROOT: join(ROOT, "git"),
    GIT_HTTP_EXPORT_ALL: "1",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    HOME: "/nonexistent",
    PATH_INFO: decodeURIComponent(u.pathname.slice("/git".length)),
    QUERY_STRING: u.search.replace(/^\?/, ""),
    REQUEST_METHOD: req.method,
    REMOTE_ADDR: "0.0.0.0",
    CONTENT_TYPE: req.headers.get("content-type") ?? "",
    ...(body ? { CONTENT_LENGTH: String(body.length) } : {}),
    ...(req.headers.get("content-encoding") ? { HTTP_CONTENT_ENCODING: req.headers.get("content-encoding")! } : {}),
    ...(req.headers.get("git-protocol") ? { GIT_PROTOCOL: req.headers.get("git-protocol")! } : {}),
  };
  const p = Bun.spawn(["git", "http-backend"], { env, stdin: body ?? "ignore", stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).arrayBuffer(), new Response(p.stderr).text(), p.exited]);
  const bytes = new Uint8Array(out);
  let split = -1;
  let gap = 0;
  for (let i = 0; i + 1 < bytes.length; i++) {
    if (bytes[i] === 10 && bytes[i + 1] === 10) [split, gap] = [i, 2];
    else if (bytes[i] === 13 && bytes[i + 1] === 10 && bytes[i + 2] === 13 && bytes[i + 3] === 10) [split, gap] = [i, 4];
    if (split >= 0) break;
  }
  if (split < 0) return new Response(`http-backend failed (${code}): ${err}`, { status: 500 });
  const headers = new Headers();
  let status = 200;
  for (const line of new TextDecoder().decode(bytes.subarray(0, split)).split(/\r?\n/)) {
    const i = line.indexOf(":");
    if (i < 0) continue;
    const [k, v] = [line.slice(0, i).trim(), line.slice(i + 1).trim()];
    if (k.toLowerCase() === "status") status = Number.parseInt(v, 10);
    else headers.append(k, v);
  }
  return new Response(bytes.subarray(split + gap), { status, headers });
}

/** A static file under /site (npm's packuments are files named as the package, pip's index pages index.html). */
function file(path: string): Response {
  const p = normalize(join(ROOT, decodeURIComponent(path)));
  if (!p.startsWith(`${ROOT}/`)) return new Response("no\n", { status: 400 });
  // A directory is its index: index.json (an npm packument: /npm/NAME, beside /npm/NAME/-/NAME-1.0.0.tgz), else index.html.
  const f = existsSync(p) && statSync(p).isDirectory() ? (existsSync(join(p, "index.json")) ? join(p, "index.json") : join(p, "index.html")) : p;
  if (!existsSync(f)) return new Response("not here\n", { status: 404 });
  const type = f.endsWith(".html") ? "text/html" : f.endsWith(".json") ? "application/json" : "application/octet-stream";
  return new Response(readFileSync(f), { headers: { "content-type": type } });
}

Bun.serve({
  hostname: "0.0.0.0",
  port: 443,
  tls: { cert: Bun.file("/certs/c.pem"), key: Bun.file("/certs/k.pem") },
  idleTimeout: 0,
  async fetch(req) {
    const u = new URL(req.url);
    console.log(`SAW ${req.headers.get("host")} ${req.method} ${u.pathname}`);
    if (u.pathname === "/hello") return new Response(`${NAME} hello\n`);
    if (u.pathname.startsWith("/git/")) return git(req, u);
    if (u.pathname.startsWith("/npm/") || u.pathname.startsWith("/pypi/")) return file(u.pathname);
    return new Response("not here\n", { status: 404 });
  },
});
console.log("site ready");
