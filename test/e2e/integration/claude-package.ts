// Test-only: the real Claude Code package the e2e tests run, from sbx's test cache (scripts/test-claude.sh puts it
// there; its VERSION line is the one place the version is said), served to `sbx run claude` by a loopback npm mirror
// (SBX_NPM_REGISTRY, as a host with an npm mirror has it): these tests download nothing.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

const SCRIPT = join(import.meta.dir, "../../../scripts/test-claude.sh");
export const CLAUDE_VERSION = /^VERSION=(\S+)$/m.exec(readFileSync(SCRIPT, "utf8"))?.[1] ?? "?";
const ARCH = process.arch === "arm64" ? "arm64" : "x64";
export const CLAUDE_PKG = `@anthropic-ai/claude-code-linux-${ARCH}`;
export const CLAUDE_TGZ = join(process.env.SBX_IMAGE_CACHE ?? "/var/cache/sbx", "test-tools", `anthropic-ai-claude-code-linux-${ARCH}-${CLAUDE_VERSION}.tgz`);
export const haveClaude = existsSync(CLAUDE_TGZ);
export const noClaudeReason = `Claude Code ${CLAUDE_VERSION} is not in ${CLAUDE_TGZ} (scripts/test-claude.sh, which install.sh runs as root, puts it there; this test downloads nothing)`;

/** A loopback npm mirror of the one package `sbx run claude` asks for, from the test cache (the real bytes); `asked` gets each path. */
export function startClaudeMirror(asked: string[] = []): ReturnType<typeof Bun.serve> {
  const integrity = `sha512-${new Bun.CryptoHasher("sha512").update(readFileSync(CLAUDE_TGZ)).digest("base64")}`;
  let origin = "";
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(r): Response {
      const path = decodeURIComponent(new URL(r.url).pathname);
      asked.push(path);
      const doc = { version: CLAUDE_VERSION, dist: { tarball: `${origin}/claude.tgz`, integrity } };
      if (path === "/@anthropic-ai/claude-code/latest" || path === `/${CLAUDE_PKG}/${CLAUDE_VERSION}`) return Response.json(doc);
      if (path === "/claude.tgz") return new Response(Bun.file(CLAUDE_TGZ), { headers: { "content-type": "application/octet-stream" } });
      return new Response("not in this mirror", { status: 404 });
    },
  });
  origin = server.url.origin;
  return server;
}
