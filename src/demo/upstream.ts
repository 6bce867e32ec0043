// The demo's "upstream": bare repos served over git smart HTTP on 127.0.0.1 (git http-backend as CGI), only to requests carrying the token.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Exec } from "../sys/exec";

export interface Upstream {
  url: string;
  repoUrl(name: string): string;
  /** `GIT_TOKEN_127_0_0_1_<port>`: the host secret the bridge uses for this upstream. */
  secretName: string;
  /** Requests seen, and whether each carried the token. */
  requests: Array<{ method: string; path: string; authorized: boolean }>;
  createRepo(name: string): Promise<string>;
  stop(): Promise<void>;
}

/** git must read no config of the person running the demo (no helpers, no hooks): an empty, fixed environment. */
export function cleanGitEnv(path: string): Record<string, string> {
  return { PATH: path, HOME: "/nonexistent", GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null", LANG: "C" };
}

/** Pure: the CGI environment git http-backend needs for one request. */
export function cgiEnv(root: string, path: string, req: { method: string; pathname: string; search: string; headers: Headers; length?: number }): Record<string, string> {
  const h = req.headers;
  return {
    ...cleanGitEnv(path),
    GIT_PROJECT_ROOT: root,
    GIT_HTTP_EXPORT_ALL: "1",
    PATH_INFO: decodeURIComponent(req.pathname),
    QUERY_STRING: req.search.replace(/^\?/, ""),
    REQUEST_METHOD: req.method,
    REMOTE_USER: "sbx-demo",
    REMOTE_ADDR: "127.0.0.1",
    CONTENT_TYPE: h.get("content-type") ?? "",
    ...(req.length !== undefined ? { CONTENT_LENGTH: String(req.length) } : {}),
    ...(h.get("content-encoding") ? { HTTP_CONTENT_ENCODING: h.get("content-encoding")! } : {}),
    ...(h.get("git-protocol") ? { GIT_PROTOCOL: h.get("git-protocol")! } : {}),
  };
}

/** Splits a CGI reply (headers, blank line, body) into an HTTP response. */
export function cgiResponse(bytes: Uint8Array): Response {
  let end = -1;
  let skip = 0;
  for (let i = 0; i + 1 < bytes.length; i++) {
    if (bytes[i] === 10 && bytes[i + 1] === 10) {
      end = i;
      skip = 2;
      break;
    }
    if (bytes[i] === 13 && bytes[i + 1] === 10 && bytes[i + 2] === 13 && bytes[i + 3] === 10) {
      end = i;
      skip = 4;
      break;
    }
  }
  if (end < 0) return new Response("git http-backend gave no headers\n", { status: 502 });
  const headers = new Headers();
  let status = 200;
  for (const line of new TextDecoder().decode(bytes.subarray(0, end)).split(/\r?\n/)) {
    const i = line.indexOf(":");
    if (i < 0) continue;
    const k = line.slice(0, i).trim();
    const v = line.slice(i + 1).trim();
    if (k.toLowerCase() === "status") status = Number.parseInt(v, 10) || 500;
    else headers.append(k, v);
  }
  return new Response(bytes.subarray(end + skip), { status, headers });
}

/**
 * Starts the upstream on 127.0.0.1 (any port); a request without HTTP Basic auth whose password is `token` gets 401.
 * runs: git http-backend (per request). It is spawned here rather than through Exec because its replies are binary
 * (packs) and Exec.run decodes stdout as text.
 */
export function startUpstream(exec: Exec, root: string, token: string, path: string): Upstream {
  mkdirSync(root, { recursive: true, mode: 0o700 });
  const requests: Upstream["requests"] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const u = new URL(req.url);
      const auth = req.headers.get("authorization") ?? "";
      let authorized = false;
      if (auth.startsWith("Basic ")) {
        const decoded = atob(auth.slice(6));
        authorized = decoded.slice(decoded.indexOf(":") + 1) === token;
      }
      requests.push({ method: req.method, path: u.pathname, authorized });
      if (!authorized) return new Response("this upstream needs a token\n", { status: 401, headers: { "WWW-Authenticate": 'Basic realm="sbx-demo"' } });
      const body = req.method === "POST" ? new Uint8Array(await req.arrayBuffer()) : undefined;
      const env = cgiEnv(root, path, { method: req.method, pathname: u.pathname, search: u.search, headers: req.headers, ...(body ? { length: body.length } : {}) });
      const p = Bun.spawn(["git", "http-backend"], { env, stdin: body ?? "ignore", stdout: "pipe", stderr: "ignore" });
      const [out] = await Promise.all([new Response(p.stdout).arrayBuffer(), p.exited]);
      return cgiResponse(new Uint8Array(out));
    },
  });
  const url = `http://127.0.0.1:${server.port}`;
  return {
    url,
    repoUrl: (name) => `${url}/${name}.git`,
    secretName: `GIT_TOKEN_127_0_0_1_${server.port}`,
    requests,
    /** runs: git init --bare --initial-branch=main <root>/<name>.git; git config http.receivepack true */
    async createRepo(name) {
      const dir = join(root, `${name}.git`);
      const env = cleanGitEnv(path);
      await exec.run(["git", "init", "--quiet", "--bare", "--initial-branch=main", dir], { env, replaceEnv: true });
      await exec.run(["git", "--git-dir", dir, "config", "http.receivepack", "true"], { env, replaceEnv: true });
      return dir;
    },
    stop: () => server.stop(true),
  };
}
