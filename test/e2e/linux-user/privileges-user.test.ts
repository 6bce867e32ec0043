// privilege-gain (issue 24): a user-account guest can gain no privilege. Its processes have no_new_privs and empty
// capability sets (the bounding set too), so a setuid-root binary the host has runs as the guest, in a session as in
// a command. Real root, a real second uid, a real setuid binary.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { SandboxSpec } from "../../../src/drivers/backend";
import { makeWorld, sh, whyNot, type World } from "./harness";

const skip = whyNot();

describe.skipIf(skip !== undefined)(`privilege-gain: linux-user guests${skip ? ` (skipped: ${skip})` : ""}`, () => {
  let w: World;
  let spec: SandboxSpec;
  let dir = "";
  let suid = "";
  const run = (script: string, tty = false) => sh(w.backend.shellArgv(spec, { argv: ["bash", "-c", script], cwd: w.repo, tty, env: {} }));

  beforeAll(async () => {
    w = await makeWorld();
    spec = w.spec("nopriv");
    await w.backend.apply(spec);
    // A setuid-root copy of `id` where the guest can run it (what a host's sudo, ping or passwd is).
    dir = mkdtempSync("/tmp/sbx-suid-");
    chmodSync(dir, 0o755);
    suid = join(dir, "id-suid");
    copyFileSync("/usr/bin/id", suid);
    chmodSync(suid, 0o4755);
  }, 60_000);
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await w?.teardown();
  }, 60_000);

  test("the control: the setuid binary does elevate outside the guest (as any user without no_new_privs)", () => {
    const r = Bun.spawnSync(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", suid, "-u"]);
    expect(r.stdout.toString().trim()).toBe("0");
  });

  test("NoNewPrivs 1 and every capability set empty, in a command and in a terminal session", () => {
    for (const tty of [false, true]) {
      const r = run("grep -E '^(NoNewPrivs|CapInh|CapPrm|CapEff|CapBnd|CapAmb):' /proc/self/status", tty);
      expect({ tty, code: r.code }).toEqual({ tty, code: 0 });
      const got = Object.fromEntries(r.out.trim().split("\n").map((l) => l.split(/:\s+/) as [string, string]));
      expect({ tty, got }).toEqual({ tty, got: { NoNewPrivs: "1", CapInh: "0000000000000000", CapPrm: "0000000000000000", CapEff: "0000000000000000", CapBnd: "0000000000000000", CapAmb: "0000000000000000" } });
    }
  });

  test("a setuid-root binary runs as the guest: its effective uid stays the guest's", () => {
    const guestUid = run("id -u").out.trim();
    expect(guestUid).not.toBe("0");
    expect(run(`${suid} -u`).out.trim()).toBe(guestUid);
  });
});
