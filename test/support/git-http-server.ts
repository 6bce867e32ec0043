// Test fixture: bare repos served over git smart HTTP on 127.0.0.1 (git http-backend as CGI) that demand a token.
import { mkdirSync } from "node:fs";
import { join } from "node:path";

export interface GitHttpServer {
  url: string;
  /** URL of one repo: `${url}/${name}.git`. */
  repoUrl(name: string): string;
  /** Creates an empty bare repo (receive-pack enabled); returns its path. */
  createRepo(name: string): Promise<string>;
  /** Every request seen: method, path and whether it carried the right token. */
  requests: Array<{ method: string; path: string; authorized: boolean; authorization: string | null }>;
  /** Makes the server hold the next authorized request whose path and query contain `part` this long before it answers
   * (a quiet, slow upstream). */
  holdNext(ms: number, part: string): void;
  stop(): Promise<void>;
}

async function git(args: string[], cwd?: string): Promise<void> {
  const p = Bun.spawn(["git", ...args], { cwd, stdout: "ignore", stderr: "pipe", env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: "/nonexistent", GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" } });
  const [err, code] = await Promise.all([new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`git ${args.join(" ")}: ${err}`);
}

/**
 * Serves `root/*.git`; requests need HTTP Basic auth whose password is `token`. With `tls`, over HTTPS (a private CA).
 * With `api`, requests under /api/ go to it instead (a forge's API beside its git: a GitHub double, say).
 */
export function startGitHttpServer(root: string, token: string, tls?: { cert: string; key: string }, api?: (req: Request, url: URL) => Promise<Response> | Response): GitHttpServer {
  mkdirSync(root, { recursive: true });
  const requests: GitHttpServer["requests"] = [];
  const holds: Array<{ ms: number; part: string }> = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    ...(tls ? { tls } : {}),
    // A slow upstream (holdNext) sends nothing for longer than Bun's default 10 s idle limit.
    idleTimeout: 0,
    async fetch(req) {
      const u = new URL(req.url);
      if (api && u.pathname.startsWith("/api/")) return api(req, u);
      const authorization = req.headers.get("authorization");
      let authorized = false;
      if (authorization?.startsWith("Basic ")) {
        const [, pass] = atob(authorization.slice(6)).split(/:(.*)/s);
        authorized = pass === token;
      }
      requests.push({ method: req.method, path: u.pathname + u.search, authorized, authorization });
      if (!authorized) return new Response("token required\n", { status: 401, headers: { "WWW-Authenticate": 'Basic realm="sbx-test"' } });
      const held = holds.findIndex((h) => (u.pathname + u.search).includes(h.part));
      if (held >= 0) await Bun.sleep(holds.splice(held, 1)[0]!.ms);
      const body = req.method === "POST" ? new Uint8Array(await req.arrayBuffer()) : undefined;
      const env: Record<string, string> = {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: "1",
        GIT_CONFIG_NOSYSTEM: "1",
        GIT_CONFIG_GLOBAL: "/dev/null",
        HOME: "/nonexistent",
        PATH_INFO: decodeURIComponent(u.pathname),
        QUERY_STRING: u.search.replace(/^\?/, ""),
        REQUEST_METHOD: req.method,
        REMOTE_USER: "sbx-test",
        REMOTE_ADDR: "127.0.0.1",
        CONTENT_TYPE: req.headers.get("content-type") ?? "",
        ...(body ? { CONTENT_LENGTH: String(body.length) } : {}),
        ...(req.headers.get("content-encoding") ? { HTTP_CONTENT_ENCODING: req.headers.get("content-encoding")! } : {}),
        ...(req.headers.get("git-protocol") ? { GIT_PROTOCOL: req.headers.get("git-protocol")! } : {}),
      };
      const p = Bun.spawn(["git", "http-backend"], { env, stdin: body ?? "ignore", stdout: "pipe", stderr: "pipe" });
      const [out, , code] = await Promise.all([new Response(p.stdout).arrayBuffer(), new Response(p.stderr).text(), p.exited]);
      const bytes = new Uint8Array(out);
      // CGI: headers, a blank line, the body.
      let split = -1;
      for (let i = 0; i + 1 < bytes.length; i++) {
        if (bytes[i] === 10 && bytes[i + 1] === 10) { split = i; break; }
        if (bytes[i] === 13 && bytes[i + 1] === 10 && bytes[i + 2] === 13 && bytes[i + 3] === 10) { split = i; break; }
      }
      if (split === -1) return new Response(`http-backend failed (${code})`, { status: 500 });
      const headText = new TextDecoder().decode(bytes.subarray(0, split));
      const bodyStart = bytes[split] === 13 ? split + 4 : split + 2;
      const headers = new Headers();
      let status = 200;
      for (const line of headText.split(/\r?\n/)) {
        const i = line.indexOf(":");
        if (i === -1) continue;
        const k = line.slice(0, i).trim();
        const v = line.slice(i + 1).trim();
        if (k.toLowerCase() === "status") status = Number(v.split(" ")[0]);
        else headers.append(k, v);
      }
      return new Response(bytes.subarray(bodyStart), { status, headers });
    },
  });
  const url = `${tls ? "https" : "http"}://127.0.0.1:${server.port}`;
  return {
    url,
    repoUrl: (name) => `${url}/${name}.git`,
    async createRepo(name) {
      const dir = join(root, `${name}.git`);
      await git(["init", "--bare", "--quiet", "--initial-branch=main", dir]);
      await git(["config", "http.receivepack", "true"], dir);
      return dir;
    },
    requests,
    holdNext(ms, part) {
      holds.push({ ms, part });
    },
    async stop() {
      await server.stop(true);
    },
  };
}
