// no-direct-egress (container level): the sandbox has only `lo`, no routes, and name resolution fails.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { acquireFixture, canRun, mustCreate, releaseFixture, skipReason, type Fixture } from "./fixture";

describe.skipIf(!canRun)(`no-direct-egress (Docker)${canRun ? "" : ` — skipped: ${skipReason}`}`, () => {
  let f: Fixture;
  beforeAll(() => {
    f = acquireFixture();
    mustCreate(f, "noegress");
  }, 60_000);
  afterAll(() => {
    f?.sbx(["rm", "--force", "noegress"]);
    releaseFixture();
  }, 60_000);

  test("the only interface is lo", () => {
    const r = f.sbx(["shell", "noegress", "--", "ls", "/sys/class/net"]);
    expect(r.stdout.trim().split(/\s+/)).toEqual(["lo"]);
  }, 60_000);

  test("there is no route anywhere (IPv4 or IPv6) but loopback", () => {
    const r = f.sbx(["shell", "noegress", "--", "sh", "-c", "tail -n +2 /proc/net/route | wc -l; grep -v ' lo$' /proc/net/ipv6_route | wc -l"]);
    expect(r.stdout.trim().split("\n")).toEqual(["0", "0"]);
  }, 60_000);

  test("DNS resolution of a name that cannot exist fails (only sbx's stub answers, and .invalid never resolves)", () => {
    // A reserved name: even if something were reachable, nothing real is asked. Other names get a sandbox-local
    // address from the stub and go nowhere but the proxy (test/e2e/integration/transparent-docker.test.ts).
    const r = f.sbx(["shell", "noegress", "--", "getent", "hosts", "sbx-egress-probe.invalid"]);
    expect(r.code).not.toBe(0);
    expect(r.stdout).toBe("");
  }, 60_000);

  test("loopback inside still works (the forwarder will listen there)", () => {
    const r = f.sbx(["shell", "noegress", "--", "bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/1 2>/dev/null && echo open || echo refused"]);
    expect(r.stdout.trim()).toBe("refused");
    const mount = f.sbx(["shell", "noegress", "--", "test", "-d", "/run/sbx"]);
    expect(mount.code).toBe(0);
  }, 60_000);
});
