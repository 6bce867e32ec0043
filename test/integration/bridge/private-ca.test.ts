// A forge behind a private CA: the bridge's git and gh use the host's CA settings (SSL_CERT_FILE), as the host's own
// git would with them; without them the same push fails certificate checks. Real bridge, real shim, HTTPS on 127.0.0.1.
import { NO_BRIDGE_SETTINGS } from "../../../src/core/bridge-settings";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startBridge, type StartedBridge } from "../../../src/bridge/server";
import { makeSiteCert } from "../../../src/demo/cert";
import { createExec } from "../../../src/sys/exec";
import { startGitHttpServer, type GitHttpServer } from "../../support/git-http-server";
import { commitOn, git, refIn, sh, SHIMS } from "./harness";

const PATH = process.env.PATH ?? "/usr/bin:/bin";
let root = "";
let server: GitHttpServer;
let certFile = "";
let repoPath = "";
const token = "tok-private-ca-0123456789";

beforeAll(async () => {
  root = realpathSync(mkdtempSync(join(tmpdir(), "sbx-ca-")));
  const cert = await makeSiteCert(createExec({ PATH }), root, ["127.0.0.1"]);
  certFile = cert.certFile;
  server = startGitHttpServer(join(root, "srv"), token, { cert: cert.certPem, key: cert.keyPem });
  repoPath = await server.createRepo("proj");
});
afterAll(async () => {
  await server.stop();
  rmSync(root, { recursive: true, force: true });
});

async function world(tlsEnv: Record<string, string> | undefined, name: string): Promise<{ bridge: StartedBridge; push: (branch: string) => Promise<{ code: number; stderr: string }>; clone: string }> {
  const host = join(root, `host-${name}`);
  mkdirSync(host);
  await git(host, "init", "-q", "-b", "main");
  await git(host, "commit", "-q", "--allow-empty", "-m", "init");
  await git(host, "remote", "add", "origin", server.repoUrl("proj"));
  const clone = join(root, `clone-${name}`);
  await git(root, "clone", "-q", "--shared", host, clone);
  // The clone carries the host's remote URLs (the bridge uses the host's own anyway).
  await git(clone, "remote", "set-url", "origin", server.repoUrl("proj"));
  const socket = join(root, `s-${name}`, "bridge.sock");
  const bridge = await startBridge({
    settings: () => ({ ...NO_BRIDGE_SETTINGS, allow: ["push-anywhere"] }), // pushes by plain branch names; the prefix has its own test
    socketPath: socket,
    sandbox: { id: `ca-${name}`, name, workspace: clone, repo: host },
    gateDir: join(root, `gate-${name}`),
    secrets: () => ({ GIT_TOKEN: token }),
    audit: () => undefined,
    exec: createExec({ PATH }),
    path: PATH,
    ...(tlsEnv ? { tlsEnv } : {}),
  });
  const env = { SBX_IN_SANDBOX: "1", SBX_BRIDGE_SOCKET: socket, SBX_BUN: process.execPath, PATH: `${SHIMS}:${PATH}` };
  return { bridge, clone, push: (branch) => sh([join(SHIMS, "git"), "push", "origin", branch], { cwd: clone, env }) };
}

describe("a forge behind a private CA", () => {
  test("with the host's SSL_CERT_FILE the push goes out; without it, the certificate is refused and nothing arrives", async () => {
    const withCa = await world({ SSL_CERT_FILE: certFile }, "with");
    const without = await world(undefined, "without");
    try {
      const sha = await commitOn(withCa.clone, "feature", { "a.txt": "a\n" });
      const r = await withCa.push("feature");
      expect(r.code).toBe(0);
      expect(await refIn(repoPath, "refs/heads/feature")).toBe(sha);
      await commitOn(without.clone, "other", { "b.txt": "b\n" });
      const bad = await without.push("other");
      expect(bad.code).not.toBe(0);
      expect(bad.stderr).toMatch(/certificate|SSL/i);
      expect(await refIn(repoPath, "refs/heads/other")).toBe("");
    } finally {
      await withCa.bridge.close();
      await without.bridge.close();
    }
  });
});
