// Host → clone ref sync on a fake Mac: the host fetches into its own mirror (hardened env), then the guest update-refs refs/remotes/host/* in its clone; nothing runs as a stopped guest (golden transcripts).
import { describe, expect, test } from "bun:test";
import type { GuardContext } from "../../../../src/guards/guards";
import { silentLogger } from "../../../../src/sys/log";
import { productionComponents } from "../../../../src/daemon/main";
import { UserAccountDriver } from "../../../../src/drivers/user-account";
import { Store } from "../../../../src/store/store";
import { hostGitEnv } from "../../../../src/sync/git-argv";
import { exportHostRefs } from "../../../../src/sync/import";
import { processEnv, type Env } from "../../../../src/sys/env";
import { createEventBus } from "../../../../src/events/feed";
import { ALICE_IDENTITY, ALICE_PATHS, FakeMac } from "../../../fakes/mac";
import { golden } from "./golden";
import { selfUser } from "../../../../src/sys/host-user";

const paths = ALICE_PATHS;
const IDENTITY = ALICE_IDENTITY;
const WS = "/Users/sbx_alice_0a1b2c3d4e5f/demo";
const oid = (c: string) => c.repeat(40);

async function setup() {
  const mac = new FakeMac();
  const backend = mac.backend();
  const store = new Store(":memory:");
  const base = processEnv();
  const env: Env = { ...base, platform: "darwin", uid: 501, gid: 20, userName: "alice", vars: { ...base.vars, HOME: "/Users/alice" } };
  const comps = await productionComponents({ env, paths, exec: mac.exec, log: silentLogger, store, events: createEventBus() }, { macos: backend });
  const row = store.createSandbox({ name: "demo", repo: "/Users/alice/src/demo", backend: "macos", identity: IDENTITY });
  const spec = comps.drivers.macos!.spec(row);
  mac.mk(spec.sockets.dir, "dir", 0o700, "alice");
  mac.mk(spec.sockets.bridge, "sock", 0o600, "alice");
  await comps.drivers.macos!.ensureRunning(row, { log() {}, progress() {}, audit() {} });
  const driver = new UserAccountDriver({ exec: mac.exec, env, paths, backend, hostUser: selfUser(env) });
  const target = driver.refSyncTarget(spec, mac.exec);
  /** What ref sync's host → clone lane does once promotion is done: the mirror, then update-ref as the guest. */
  const hostToClone = async (): Promise<{ exitCode: number; stderr: string; owed?: true }> => {
    const before = await target.beforeHostRefs!();
    if (before && before.exitCode !== 0) return before;
    const git = await target.sandboxGit("write");
    if (!git) return { exitCode: 0, stderr: "", owed: true };
    try {
      await exportHostRefs(git, "demo", mac.repo.host);
      return { exitCode: 0, stderr: "" };
    } catch (e) {
      return { exitCode: 1, stderr: (e as Error).message };
    }
  };
  return { mac, backend, spec, target, hostToClone };
}

/** The transcript since `from`, with each update-ref's stdin shown under it. */
function transcriptWithStdin(mac: FakeMac, from: number): string {
  const lines = mac.transcript(from).trimEnd().split("\n");
  return lines
    .map((l, i) => {
      const stdin = mac.exec.calls[from + i]!.opts.stdin;
      return typeof stdin === "string" && l.includes("update-ref") ? `${l}\n${stdin.trimEnd().replace(/^/gm, "  < ")}` : l;
    })
    .join("\n") + "\n";
}

describe("macOS host → clone ref sync", () => {
  test("host branches appear in the running guest's clone as refs/remotes/host/*: mirror fetch as the host, update-ref as the guest", async () => {
    const { mac, hostToClone } = await setup();
    mac.repo.host.set("refs/heads/main", oid("2"));
    mac.repo.host.set("refs/heads/feature", oid("3"));
    const from = mac.exec.calls.length;
    const r = await hostToClone();
    expect(r.exitCode).toBe(0);
    golden("refsync-host-to-clone.txt", transcriptWithStdin(mac, from));
    expect(Object.fromEntries(mac.repo.clones.get(WS)!)).toEqual({ "refs/remotes/host/feature": oid("3"), "refs/remotes/host/main": oid("2") });
    // the host's git runs with the hardened env and nothing of the daemon's
    const fetch = mac.exec.calls.slice(from).find((c) => c.argv.includes("fetch"))!;
    expect(fetch.opts.env).toEqual(hostGitEnv());
    expect(fetch.opts.replaceEnv).toBe(true);
    // the host never runs git in the guest's clone: every git naming the workspace runs as the guest
    for (const c of mac.exec.calls.slice(from)) if (c.argv.includes(WS)) expect(c.argv.slice(0, 5)).toEqual(["/usr/bin/sudo", "-n", "-H", "-u", "sbx_alice_0a1b2c3d4e5f"]);

    // a branch deleted on the host goes away inside; nothing changed → no update-ref at all
    mac.repo.host.delete("refs/heads/feature");
    await hostToClone();
    expect([...mac.repo.clones.get(WS)!.keys()]).toEqual(["refs/remotes/host/main"]);
    const quiet = mac.exec.calls.length;
    await hostToClone();
    expect(mac.transcript(quiet)).not.toContain("update-ref");
  });

  test("while stopped: the mirror is still brought up to date, the guest runs nothing, and the sync is owed to the next start", async () => {
    const { mac, backend, spec, hostToClone } = await setup();
    await backend.stop(spec);
    mac.repo.host.set("refs/heads/main", oid("4"));
    const from = mac.exec.calls.length;
    const r = await hostToClone();
    expect(r).toEqual({ exitCode: 0, stderr: "", owed: true });
    golden("refsync-stopped.txt", mac.transcript(from));
    expect(mac.transcript(from)).not.toContain("sudo -n -H -u sbx_alice_0a1b2c3d4e5f");
    expect(mac.repo.mirrorObjects.has(oid("4"))).toBe(true);
  });

  test("the mirror fetch comes first: without it the guest's update-ref names an object its clone cannot reach", async () => {
    const { mac, target } = await setup();
    mac.repo.host.set("refs/heads/main", oid("5"));
    const git = (await target.sandboxGit("write"))!;
    expect(exportHostRefs(git, "demo", mac.repo.host)).rejects.toThrow("nonexistent object");
  });

  test("a failed mirror fetch is reported and the guest step is skipped", async () => {
    const { mac, hostToClone } = await setup();
    mac.files.get("/private/var/sbx/alice")!; // exists
    const mirror = [...mac.files.keys()].find((k) => k.startsWith("/private/var/sbx/alice/demo-") && k.endsWith(".git"))!;
    mac.files.get(mirror)!.owner = "root"; // not the host's any more: git cannot write its objects
    mac.repo.host.set("refs/heads/main", oid("6"));
    const from = mac.exec.calls.length;
    const r = await hostToClone();
    expect(r.exitCode).toBe(255);
    expect(mac.transcript(from)).not.toContain("update-ref");
  });
});
