// Invariants no-direct-egress, allowlist-exact, sandboxes-apart and fail-closed, end to end: real sandboxes, the real daemon, a target container on a network the test made.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, realpathSync } from "node:fs";
import type { Fixture } from "../docker/fixture";
import {
  acquireFixture,
  BASE_IMAGE,
  canRun,
  containerOf,
  daemonPid,
  dexec,
  docker,
  makeRepo,
  must,
  releaseFixture,
  removeRepoImages,
  skipReason,
} from "./harness";

const tag = Math.random().toString(36).slice(2, 8);
const NET = `sbxt-egress-${tag}`;
const TARGET = `sbxt-target-${tag}`;
const BUN = realpathSync(process.execPath);

// The test host: HTTP on 8080 and a UDP listener on 5353 that logs every datagram, on the host's Bun, in a container
// on a network this test creates. The sandbox must reach it only through the proxy, and only when allowlisted.
const TARGET_SCRIPT = `
Bun.serve({ hostname: "0.0.0.0", port: 8080, fetch: () => new Response("hello from the target\\n") });
await Bun.udpSocket({ hostname: "0.0.0.0", port: 5353, socket: { data(_s, buf) { console.log("UDP " + buf.length); } } });
console.log("target ready");
`;

let f: Fixture;
let repo: string;
let ip = "";
let ctrA = "";

function sbx(args: string[], stdin?: string) {
  return f.sbx(args, { cwd: repo, ...(stdin !== undefined ? { stdin } : {}) });
}

/** curl through the sandbox's own proxy variables (what any client inside does). */
function curlInside(name: string, extra: string[] = []) {
  return sbx(["run", name, "--", "curl", "-sS", "-i", "-m", "10", ...extra, `http://${ip}:8080/`]);
}

/** Whether `sbx status` reports a's proxy accepting on the forwarder's listener (waits out the forwarder's retry). */
async function listenerHeld(name: string): Promise<boolean> {
  for (let i = 0; i < 40; i++) {
    const st = JSON.parse(must(sbx(["status", "--json"]), "sbx status --json").stdout) as { sandboxes: { name: string; guards: { name: string; detail: string }[] }[] };
    const proxy = st.sandboxes.find((x) => x.name === name)?.guards.find((g) => g.name === "proxy");
    if (proxy?.detail.includes("accepting on the handed-over listener")) return true;
    await Bun.sleep(100);
  }
  return false;
}

/** The host pid of the container's long-lived process (sandbox-main, built: main-bundle.ts): the only child of its --init. */
function forwarderPid(ctr: string): number {
  const init = docker(["inspect", "--format", "{{.State.Pid}}", ctr]).stdout.trim();
  const kids = readFileSync(`/proc/${init}/task/${init}/children`, "utf8").trim().split(/\s+/).filter(Boolean);
  expect(kids.length).toBe(1);
  expect(readFileSync(`/proc/${kids[0]}/cmdline`, "utf8")).toContain("/opt/sbx/main/sandbox-main.js");
  return Number(kids[0]);
}

describe.skipIf(!canRun)(`egress end to end on Docker${skipReason ? ` (skipped: ${skipReason})` : ""}`, () => {
  beforeAll(async () => {
    f = acquireFixture();
    repo = makeRepo(f, `egress-${tag}`);
    must(docker(["network", "create", "--label", "sbx.test=1", NET]), "docker network create");
    must(
      docker([
        "run", "-d", "--name", TARGET, "--label", "sbx.test=1", "--network", NET,
        "--mount", `type=bind,src=${BUN},dst=/opt/bun,readonly`,
        "--entrypoint", "/opt/bun", BASE_IMAGE, "-e", TARGET_SCRIPT,
      ]),
      "docker run target",
    );
    for (let i = 0; i < 100 && !docker(["logs", TARGET]).stdout.includes("target ready"); i++) await Bun.sleep(50);
    ip = docker(["inspect", "--format", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", TARGET]).stdout.trim();
    expect(ip).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    must(sbx(["create", "a"]), "sbx create a");
    must(sbx(["create", "b"]), "sbx create b");
    ctrA = containerOf(realpathSync(repo), "a");
  }, 180_000);

  afterAll(async () => {
    if (repo) {
      sbx(["rm", "--force", "a"]);
      sbx(["rm", "--force", "b"]);
      const left = docker(["ps", "--all", "--quiet", "--filter", `label=sbx.repo=${realpathSync(repo)}`]).stdout.split("\n").filter(Boolean);
      if (left.length) docker(["rm", "--force", ...left]);
      removeRepoImages(repo);
    }
    docker(["rm", "--force", TARGET]);
    docker(["network", "rm", NET]);
    if (f) releaseFixture();
  }, 60_000);

  test("the host reaches the target directly (control: the blocks below are the sandbox's, not a dead target)", async () => {
    const r = await fetch(`http://${ip}:8080/`);
    expect(await r.text()).toBe("hello from the target\n");
  });

  test("not allowlisted: 403 with X-Sbx-Blocked and a body that names `sbx allow`; a pending approval appears", () => {
    const r = curlInside("a");
    expect(r.stdout).toMatch(/^HTTP\/1\.[01] 403/);
    expect(r.stdout.toLowerCase()).toContain("x-sbx-blocked:");
    expect(r.stdout).toContain("sbx allow");
    expect(r.stdout).not.toContain("hello from the target");
    const ap = must(sbx(["approvals", "--json"]), "sbx approvals --json");
    const pending = JSON.parse(ap.stdout) as Array<{ sandbox: string; host: string; port: number }>;
    expect(pending.some((p) => p.sandbox === "a" && p.host === ip && p.port === 8080)).toBe(true);
    // A process inside can ask why (the reason phrase and sbx-egress), and ask the person for it.
    const verbose = sbx(["run", "a", "--", "curl", "-sS", "-v", "-m", "10", "-o", "/dev/null", `https://${ip}:8080/`]);
    expect(verbose.stderr).toContain(`403 sbx: ${ip}:8080 is not allowed (sbx allow ${ip}:8080 --sandbox a)`);
    const why = sbx(["run", "a", "--", "sbx-egress"]);
    expect(why.code).toBe(0);
    expect(why.stdout).toContain(`${ip}:8080 — ip-literal`);
    const ask = sbx(["run", "a", "--", "sbx-egress", "ask", `${ip}:8081`, "--why", "the tests' second server"]);
    expect({ code: ask.code, out: ask.stdout.trim() }).toEqual({ code: 0, out: "waiting" });
    const again = JSON.parse(must(sbx(["approvals", "--json"]), "sbx approvals --json").stdout) as Array<{ sandbox: string; host: string; port: number; reason: string }>;
    expect(again.find((p) => p.sandbox === "a" && p.port === 8081)?.reason).toBe("asked: the tests' second server");
  }, 60_000);

  test("`sbx allow <ip>:8080 --sandbox a`: the next request passes, with no restart", () => {
    const before = docker(["inspect", "--format", "{{.State.StartedAt}}", ctrA]).stdout;
    must(sbx(["allow", `${ip}:8080`, "--sandbox", "a"]), "sbx allow");
    const r = curlInside("a");
    expect(r.stdout).toMatch(/^HTTP\/1\.[01] 200/);
    expect(r.stdout).toContain("hello from the target");
    expect(docker(["inspect", "--format", "{{.State.StartedAt}}", ctrA]).stdout).toBe(before);
  }, 60_000);

  test("one relay: the proxy accepts on the forwarder's own listener, so a frozen forwarder (SIGSTOP) does not stop traffic", async () => {
    expect(await listenerHeld("a")).toBe(true);
    const fw = forwarderPid(ctrA);
    process.kill(fw, "SIGSTOP");
    try {
      // docker exec, not `sbx run`: the exec agent lives in the frozen process too.
      const r = dexec(f, ctrA, ["curl", "-sS", "-m", "10", `http://${ip}:8080/`]);
      expect(r.stdout).toContain("hello from the target");
    } finally {
      process.kill(fw, "SIGCONT");
    }
  }, 60_000);

  test("allowlist-exact: the same host on another port is still refused", () => {
    const r = sbx(["run", "a", "--", "curl", "-sS", "-i", "-m", "10", `http://${ip}:8081/`]);
    expect(r.stdout).toMatch(/^HTTP\/1\.[01] 403/);
  }, 60_000);

  test("a refused client shows the fix: Debian's Python urllib and pip (with -vv) print the reason phrase with the command", () => {
    const url = `https://${ip}:8081/simple/`;
    const fix = `403 sbx: ${ip}:8081 is not allowed (sbx allow ${ip}:8081 --sandbox a)`;
    const py = sbx(["run", "a", "--", "python3", "-c", `import urllib.request; urllib.request.urlopen("${url}", timeout=10)`]);
    expect(py.code).not.toBe(0);
    expect(py.stderr).toContain(`Tunnel connection failed: ${fix}`);
    // pip says only "No matching distribution" unless asked for more; with -vv the phrase is in its log.
    const pipArgs = ["download", "--no-cache-dir", "--retries", "0", "--timeout", "10", "--index-url", url, "-d", "/tmp/pip-probe", "requests"];
    const quiet = sbx(["run", "a", "--", "pip", ...pipArgs]);
    expect(quiet.code).not.toBe(0);
    expect(quiet.stderr).toContain("No matching distribution found for requests");
    const verbose = sbx(["run", "a", "--", "pip", "-vv", ...pipArgs]);
    expect(verbose.stdout + verbose.stderr).toContain(fix);
  }, 60_000);

  test("no-direct-egress: direct TCP to the allowlisted target fails; DNS and UDP fail; the only interface is loopback", () => {
    const direct = sbx(["run", "a", "--", "curl", "-sS", "-m", "5", "--noproxy", "*", `http://${ip}:8080/`]);
    expect(direct.code).not.toBe(0);
    expect(direct.stdout).not.toContain("hello from the target");
    const tcp = sbx(["run", "a", "--", "bash", "-c", `exec 3<>/dev/tcp/${ip}/8080 && echo connected`]);
    expect(tcp.code).not.toBe(0);
    expect(tcp.stdout).not.toContain("connected");
    const dns = sbx(["run", "a", "--", "getent", "hosts", "sbx-dns-probe.invalid"]);
    expect(dns.code).not.toBe(0);
    // A name that could exist gets the stub's sandbox-local address (the transparent path), never a real one.
    expect(sbx(["run", "a", "--", "getent", "hosts", "sbx-dns-probe.example.org"]).stdout).toMatch(/^127\.77\./);
    const udp = sbx(["run", "a", "--", "bash", "-c", `echo probe > /dev/udp/${ip}/5353 && echo sent`]);
    expect(udp.stdout).not.toContain("sent");
    expect(docker(["logs", TARGET]).stdout).not.toContain("UDP ");
    const ifs = sbx(["run", "a", "--", "cat", "/proc/net/dev"]);
    const names = ifs.stdout.split("\n").slice(2).map((l) => l.split(":")[0]!.trim()).filter(Boolean);
    expect(names).toEqual(["lo"]);
  }, 60_000);

  test("sandboxes-apart: sandbox b cannot use a's allowlist entry", () => {
    const r = curlInside("b");
    expect(r.stdout).toMatch(/^HTTP\/1\.[01] 403/);
    expect(r.stdout).not.toContain("hello from the target");
  }, 60_000);

  test("fail-closed: with the daemon killed (-9) nothing gets out; after a restart the allowlisted request works again", async () => {
    const pid = daemonPid(f.user);
    expect(pid).not.toBeNull();
    process.kill(pid!, "SIGKILL");
    for (let i = 0; i < 100; i++) {
      try {
        process.kill(pid!, 0);
        await Bun.sleep(20);
      } catch {
        break;
      }
    }
    // Straight into the running container, as its user, with its own env: nothing of sbx answers on the proxy socket.
    const via = dexec(f, ctrA, ["curl", "-sS", "-m", "5", `http://${ip}:8080/`]);
    expect(via.code).not.toBe(0);
    expect(via.stdout).not.toContain("hello from the target");
    const direct = dexec(f, ctrA, ["curl", "-sS", "-m", "5", "--noproxy", "*", `http://${ip}:8080/`]);
    expect(direct.code).not.toBe(0);
    expect(docker(["inspect", "--format", "{{.State.Running}}", ctrA]).stdout.trim()).toBe("true");

    // Any sbx verb starts the daemon again; its reconcile brings the proxy back before answering.
    must(sbx(["list", "--json"]), "sbx list");
    expect(daemonPid(f.user)).not.toBe(pid);
    const again = dexec(f, ctrA, ["curl", "-sS", "-m", "10", `http://${ip}:8080/`]);
    expect(again.stdout).toContain("hello from the target");
    // The forwarder, relaying while the daemon was away, hands its listener to the new daemon's proxy.
    expect(await listenerHeld("a")).toBe(true);
  }, 90_000);
});
