// macOS has no transparent path (pf cannot redirect a guest's name lookups, which are mDNSResponder's traffic, and its
// translation rules cannot match a user): a new sandbox says so instead of failing silently for clients that ignore
// the proxy variables, and its identity and pf anchor carry nothing of it.
import { expect, test } from "bun:test";
import { ConfigSchema } from "../../../../src/core/config";
import { UserAccountDriver } from "../../../../src/drivers/user-account";
import { renderPfAnchor } from "../../../../src/drivers/macos/render";
import { processEnv, type Env } from "../../../../src/sys/env";
import { ALICE_PATHS, FakeMac } from "../../../fakes/mac";
import { selfUser } from "../../../../src/sys/host-user";

test("a new macOS sandbox: no transparent path, and a note that says what that means; --no-transparent: no note", async () => {
  const mac = new FakeMac();
  const base = processEnv();
  const env: Env = { ...base, platform: "darwin", uid: 501, gid: 20, userName: "alice", vars: { ...base.vars, HOME: "/Users/alice", USER: "alice", SHELL: "/bin/zsh" } };
  const driver = new UserAccountDriver({ exec: mac.exec, env, paths: ALICE_PATHS, backend: mac.backend(), hostUser: selfUser(env), portFree: () => true });
  const n = { name: "demo", repo: "/Users/alice/src/demo", dir: "/Users/alice/.cache/sandbox/demo-x/demo", id: "0a1b2c3d4e5f", cwd: "/Users/alice/src/demo", config: ConfigSchema.parse({}) };
  const said: string[] = [];
  const ident = await driver.newIdentity(n, [], { log: (l: string) => void said.push(l) } as never);
  expect(ident.transparent).toBeUndefined();
  expect(said.join("\n")).toContain("on macOS only clients that honour the proxy variables get out");
  said.length = 0;
  await driver.newIdentity({ ...n, transparent: false }, [], { log: (l: string) => void said.push(l) } as never);
  expect(said).toEqual([]);
  // The anchor has no translation rule: nothing is redirected (pf could not tell one guest's from another's).
  expect(renderPfAnchor({ user: "sbx_alice_0a1b2c3d4e5f", uid: 7001, port: 17001 })).not.toMatch(/\brdr\b|\bnat\b|route-to/);
});
