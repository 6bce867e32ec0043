// service-confinement (Docker, real engine): a sandbox's `--service` runs in the sandbox's network namespace and has
// nothing more. Probed from INSIDE the service (docker exec into it): no interface but lo, no route to the metadata
// address, the host's bridge gateway or a container the test made on a network of its own (which a control container
// on that network does reach); no repo, no sbx socket, no Docker socket, no capability, no variable of the sandbox's.
// The sandbox reaches it on 127.0.0.1; `sbx stop` stops it, the next start brings it back, `sbx rm` removes its
// container and volume; a service that cannot run fails the create with its log and leaves nothing.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { acquireFixture, BASE_IMAGE, canRun, releaseFixture, skipReason, type Fixture } from "./fixture";

const PROBE_IMAGE = "sbxt-svc-probe:1";
const BROKEN_IMAGE = "sbxt-svc-broken:1";
const NET = "sbxt-svc-elsewhere";
const TARGET = "sbxt-svc-target";

const PROBE_DOCKERFILE = `FROM ${BASE_IMAGE}
RUN install -d -o 65534 -g 65534 /data && echo svc-data-ok > /data/hello && chown 65534:65534 /data/hello
USER 65534:65534
VOLUME /data
HEALTHCHECK --interval=1s --retries=30 CMD ["python3", "-c", "import socket; socket.create_connection(('127.0.0.1', 7000), 1)"]
CMD ["python3", "-m", "http.server", "7000", "--bind", "127.0.0.1", "--directory", "/data"]
`;
const BROKEN_DOCKERFILE = `FROM ${BASE_IMAGE}\nUSER 65534:65534\nCMD ["sh", "-c", "echo svc-broken-marker; exit 3"]\n`;

/** A TCP connect from python: "open", or the error and how long it took. */
const CONNECT = `
import socket, sys, time
t = time.time()
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), 3).close(); r = "open"
except Exception as e:
    r = "refused:" + type(e).__name__ + ":" + str(e)
print(r, round(time.time() - t, 2))
`;
/** An HTTP GET over a raw socket (no proxy variable can divert it). */
const GET = `
import socket, sys
s = socket.create_connection(("127.0.0.1", 7000), 3)
s.sendall(b"GET /hello HTTP/1.0\\r\\nHost: x\\r\\n\\r\\n")
data = b""
while True:
    chunk = s.recv(4096)
    if not chunk: break
    data += chunk
print(data.decode().split("\\r\\n\\r\\n", 1)[-1].strip())
`;

function build(f: Fixture, tag: string, dockerfile: string): void {
  if (f.docker(["image", "inspect", tag]).code === 0) return;
  const dir = mkdtempSync(join(tmpdir(), "sbxt-svc-"));
  try {
    writeFileSync(join(dir, "Dockerfile"), dockerfile);
    const r = f.docker(["build", "-q", "-t", tag, dir]);
    if (r.code !== 0) throw new Error(`docker build ${tag}: ${r.stderr}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe.skipIf(!canRun)(`service-confinement (Docker)${canRun ? "" : ` — skipped: ${skipReason}`}`, () => {
  let f: Fixture;
  let svc = "";
  let sandboxId = "";
  beforeAll(() => {
    f = acquireFixture();
    build(f, PROBE_IMAGE, PROBE_DOCKERFILE);
    build(f, BROKEN_IMAGE, BROKEN_DOCKERFILE);
    f.docker(["rm", "--force", TARGET]);
    f.docker(["network", "rm", NET]);
    expect(f.docker(["network", "create", NET]).code).toBe(0);
    expect(f.docker(["run", "-d", "--name", TARGET, "--network", NET, BASE_IMAGE, "python3", "-m", "http.server", "8000"]).code).toBe(0);
    const r = f.sbx(["create", "svc", "--service", `probe=${PROBE_IMAGE}`]);
    if (r.code !== 0) throw new Error(`sbx create svc: ${r.stderr}`);
    const names = f.docker(["ps", "--all", "--filter", `label=sbx.repo=${f.repo}`, "--filter", "label=sbx.role=service", "--filter", "label=sbx.name=svc", "--format", "{{.Names}}"]).stdout.trim().split("\n").filter(Boolean);
    expect(names.length).toBe(1);
    svc = names[0]!;
    sandboxId = f.docker(["inspect", "--format", '{{index .Config.Labels "sbx.sandbox"}}', svc]).stdout.trim();
  }, 240_000);
  afterAll(() => {
    f?.sbx(["rm", "--force", "svc"]);
    f?.sbx(["rm", "--force", "broken"]);
    f?.docker(["rm", "--force", TARGET]);
    f?.docker(["network", "rm", NET]);
    releaseFixture();
  }, 60_000);

  const inService = (argv: string[]) => f.docker(["exec", svc, ...argv]);
  const connect = (host: string, port: number) => inService(["python3", "-c", CONNECT, host, String(port)]).stdout.trim();

  test("the sandbox reaches the service on 127.0.0.1 (one network namespace), and sbx services says it is healthy", () => {
    const r = f.sbx(["exec", "svc", "--", "python3", "-c", GET]);
    expect(r.stdout.trim()).toBe("svc-data-ok");
    const list = f.sbx(["services", "svc", "--json"]);
    expect(list.code).toBe(0);
    expect(JSON.parse(list.stdout)).toEqual([{ name: "probe", image: PROBE_IMAGE, state: "running", health: "healthy", exitCode: 0 }]);
    expect(f.docker(["inspect", "--format", "{{.HostConfig.NetworkMode}}", svc]).stdout.trim()).toBe(`container:${f.docker(["inspect", "--format", "{{.Id}}", `sbx-${sandboxId}`]).stdout.trim()}`);
  }, 60_000);

  test("inside the service: only lo, and no route to the metadata address, the host's bridge gateway or another network's container", () => {
    expect(inService(["ls", "/sys/class/net"]).stdout.trim().split(/\s+/)).toEqual(["lo"]);
    // The bridge's own address on the host (dockerd may record only the subnet, no gateway, for the default bridge).
    const bridge = f.docker(["network", "inspect", "bridge", "--format", '{{index .Options "com.docker.network.bridge.name"}}']).stdout.trim() || "docker0";
    const gateway = /inet ([0-9.]+)\//.exec(Bun.spawnSync(["ip", "-4", "-o", "addr", "show", "dev", bridge]).stdout.toString())?.[1] ?? "";
    expect(gateway).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    const target = f.docker(["inspect", "--format", `{{(index .NetworkSettings.Networks "${NET}").IPAddress}}`, TARGET]).stdout.trim();
    expect(target).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    // The probe can succeed where there is a route: a control container on the target's network connects.
    expect(f.docker(["run", "--rm", "--network", NET, BASE_IMAGE, "python3", "-c", CONNECT, target, "8000"]).stdout.trim()).toMatch(/^open /);
    for (const [host, port] of [["169.254.169.254", 80], [gateway, 2375], [gateway, 22], [target, 8000]] as const) {
      const out = connect(host, port);
      expect({ host, out }).toEqual({ host, out: expect.stringMatching(/^refused:OSError:.*unreachable/i) });
      expect(Number(out.split(" ").at(-1))).toBeLessThan(1); // at once: no route, nothing waited for
    }
  }, 120_000);

  test("inside the service: 127.0.0.1 is the sandbox's loopback, not the host's (a port the host listens on there is not reached)", async () => {
    const host = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    try {
      // The probe reaches a listener on that loopback when there is one: the service's own port.
      expect(connect("127.0.0.1", 7000)).toMatch(/^open /);
      expect(connect("127.0.0.1", host.port)).toMatch(/^refused:ConnectionRefusedError/);
    } finally {
      host.stop(true);
    }
  }, 60_000);

  test("inside the service: no repo, no sbx socket, no Docker socket, no host mount", () => {
    expect(inService(["test", "-e", f.repo]).code).not.toBe(0);
    for (const p of ["/run/sbx", "/var/run/docker.sock", "/run/docker.sock", "/opt/sbx"]) expect({ p, code: inService(["test", "-e", p]).code }).toEqual({ p, code: 1 });
    const mounts = inService(["cat", "/proc/self/mountinfo"]).stdout;
    expect(mounts).not.toContain(f.user.home);
    expect(mounts).not.toContain("docker.sock");
    expect(mounts).toContain(" /data ");
  }, 60_000);

  test("inside the service: no capability, no-new-privileges, its image's user, and no variable of the sandbox's", () => {
    const status = inService(["cat", "/proc/1/status"]).stdout;
    for (const k of ["CapPrm", "CapEff", "CapBnd", "CapAmb"]) expect(status).toMatch(new RegExp(`${k}:\\s+0000000000000000`));
    expect(status).toMatch(/NoNewPrivs:\s+1/);
    expect(inService(["id", "-u"]).stdout.trim()).toBe("65534");
    const env = inService(["sh", "-c", "tr '\\0' '\\n' < /proc/1/environ"]).stdout;
    expect(env).not.toMatch(/PROXY|ANTHROPIC|SANDBOX|SBX|TOKEN|HOME=\/home/i);
  }, 60_000);

  test("sbx stop stops the service; the next command starts it again, its data kept; logs and restart work", () => {
    inService(["sh", "-c", "echo kept > /data/more"]);
    expect(f.sbx(["stop", "svc"]).code).toBe(0);
    expect(f.docker(["inspect", "--format", "{{.State.Running}}", svc]).stdout.trim()).toBe("false");
    expect(f.sbx(["exec", "svc", "--", "true"]).code).toBe(0);
    expect(f.docker(["inspect", "--format", "{{.State.Running}}", svc]).stdout.trim()).toBe("true");
    expect(inService(["cat", "/data/more"]).stdout.trim()).toBe("kept");
    expect(f.sbx(["services", "svc", "restart", "probe"]).code).toBe(0);
    expect(f.sbx(["services", "svc", "logs", "probe"]).code).toBe(0);
    expect(f.sbx(["services", "svc", "logs", "nope"]).stderr).toMatch(/no service 'nope'.*|Its services: probe/s);
  }, 120_000);

  test("a sandbox container made anew (removed by hand) gets its service back in the new namespace, its data kept", () => {
    expect(f.docker(["rm", "--force", `sbx-${sandboxId}`]).code).toBe(0);
    expect(f.sbx(["exec", "svc", "--", "python3", "-c", GET]).stdout.trim()).toBe("svc-data-ok");
    const now = f.docker(["inspect", "--format", "{{.Id}}", `sbx-${sandboxId}`]).stdout.trim();
    expect(f.docker(["inspect", "--format", "{{.HostConfig.NetworkMode}}", svc]).stdout.trim()).toBe(`container:${now}`);
    expect(inService(["cat", "/data/more"]).stdout.trim()).toBe("kept");
  }, 120_000);

  test("a service that exits at create fails the create with its log lines, and leaves no container or volume", () => {
    const r = f.sbx(["create", "broken", "--service", `bad=${BROKEN_IMAGE}`]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("svc-broken-marker");
    expect(r.stderr).toMatch(/service bad of sandbox broken .*exited \(code 3\)/);
    expect(f.docker(["ps", "--all", "--quiet", "--filter", `label=sbx.repo=${f.repo}`, "--filter", "label=sbx.name=broken"]).stdout.trim()).toBe("");
    expect(f.docker(["volume", "ls", "--quiet", "--filter", `label=sbx.repo=${f.repo}`, "--filter", "label=sbx.name=broken"]).stdout.trim()).toBe("");
  }, 120_000);

  test("an image the engine lacks, a flag-shaped image, and a user-account backend are refused before anything is made", () => {
    expect(f.sbx(["create", "noimg", "--service", "db=sbxt-no-such-image:0"]).stderr).toMatch(/no local image sbxt-no-such-image:0/);
    expect(f.sbx(["create", "flag", "--service", "db=--privileged"]).stderr).toMatch(/not a local image reference/);
    expect(f.sbx(["create", "usr", "--backend", "user", "--service", `db=${PROBE_IMAGE}`]).stderr).toMatch(/--service applies to Docker sandboxes/);
    expect(f.docker(["ps", "--all", "--quiet", "--filter", `label=sbx.repo=${f.repo}`, "--filter", "label=sbx.name=noimg"]).stdout.trim()).toBe("");
  }, 60_000);

  test("sbx rm removes the service's container and its volume", () => {
    const vols = f.docker(["volume", "ls", "--quiet", "--filter", `label=sbx.sandbox=${sandboxId}`, "--filter", "label=sbx.role=service"]).stdout.trim();
    expect(vols).not.toBe("");
    expect(f.sbx(["rm", "--force", "svc"]).code).toBe(0);
    expect(f.docker(["ps", "--all", "--quiet", "--filter", `label=sbx.sandbox=${sandboxId}`]).stdout.trim()).toBe("");
    expect(f.docker(["volume", "ls", "--quiet", "--filter", `label=sbx.sandbox=${sandboxId}`]).stdout.trim()).toBe("");
  }, 60_000);
});
