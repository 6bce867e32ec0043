// secret-bound: the files a session's variables name (sbx's CA, the bundle, the npm config) are written for a guest of
// another uid to read (a user-account sandbox), whatever the daemon's umask: its launchd job and systemd units run it
// under 077, which made them 0600 and unreadable to the guest (its socket dir alone keeps other guests out).
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SandboxSpec } from "../../../src/core/spec";
import { CA_BUNDLE_FILE, CA_FILE, NPMRC_FILE, secretSessionEnv } from "../../../src/sandboxes/secret-env";

const CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
let dir = "";
let old: number | undefined;

afterEach(() => {
  if (old !== undefined) process.umask(old);
  old = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function spec(d: string): SandboxSpec {
  return { sockets: { dir: d, proxy: join(d, "proxy.sock"), bridge: join(d, "bridge.sock") }, env: {} } as unknown as SandboxSpec;
}

describe("secret-bound: a session's trust files are readable by its guest whatever the daemon's umask", () => {
  for (const umask of [0o077, 0o177, 0o022]) {
    test(`umask ${umask.toString(8).padStart(3, "0")}: ca.pem, ca-bundle.pem and npmrc are 0644`, () => {
      dir = mkdtempSync(join(tmpdir(), "sbx-trust-"));
      old = process.umask(umask);
      const env = secretSessionEnv(spec(dir), { env: { API_TOKEN: "sk_live_x" }, caPem: CA, extraCas: "", npmrc: [{ host: "registry.test", placeholder: "npm_y" }], notes: [] });
      process.umask(old);
      old = undefined;
      expect(env.NODE_EXTRA_CA_CERTS).toBe(join(dir, CA_FILE));
      for (const f of [CA_FILE, CA_BUNDLE_FILE, NPMRC_FILE]) expect({ f, mode: (statSync(join(dir, f)).mode & 0o777).toString(8) }).toEqual({ f, mode: "644" });
    });
  }
});
