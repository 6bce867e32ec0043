// Golden tests of the Docker backend's rendered argv: hardening flags, labels, mounts, overlay options, seed entries.
import { describe, expect, test } from "bun:test";
import type { DockerOptions, SandboxSpec } from "../../../../src/core/spec";
import {
  containerCommand,
  createRequestFromArgs,
  parseMountValue,
  dockerCreateArgs,
  dockerExecArgs,
  ENGINE_DETACH_KEYS,
  escapeOverlayPath,
  mountValue,
  overlayPlan,
  overlayVolumeCreateArgs,
  overlayVolumeCreateBody,
  seedEntries,
  mountTargets,
  rootLabel,
  RUNTIME_MOUNT,
} from "../../../../src/drivers/docker/args";
import { startLine } from "../../../../src/drivers/docker/start-line";

const dockerOpts: DockerOptions = { driver: "docker", claudeAuth: "overlay", image: "sbx-app:1234" };
const spec: SandboxSpec = {
  id: "abc123def456",
  name: "demo",
  repo: "/home/ann/src/app",
  dir: "/home/ann/.cache/sandbox/app-ff/demo",
  hostUser: { name: "ann", uid: 1000, gid: 1000, home: "/home/ann", shell: "/usr/bin/fish" },
  sockets: { dir: "/run/user/1000/sbx/sb/abc123def456", proxy: "/p", bridge: "/b" },
  env: { TERM: "xterm-256color", SANDBOX: "demo", LANG: "C.UTF-8" },
  overlays: ["/home/ann/.claude", "/home/ann/.config/fish"],
  options: dockerOpts,
};

describe("dockerCreateArgs", () => {
  const overlays = [overlayPlan(spec, "/home/ann/.claude"), overlayPlan(spec, "/home/ann/.config/fish")];
  const runtime = { bun: "/usr/lib/bun/bun", shims: "/opt/src/sbx/shims", agents: "/home/ann/.cache/sbx/agents" };
  const argv = dockerCreateArgs(spec, { image: "sbx-app:1234", overlays, command: containerCommand(spec), runtime, root: rootLabel("/home/ann/.cache/sandbox") });

  test("the Engine API request says what the argv says: name, hardening, labels, env, every mount, image, command", () => {
    const { name, body } = createRequestFromArgs(argv);
    expect(name).toBe("sbx-abc123def456");
    expect(body).toEqual({
      Hostname: "demo",
      User: "1000:1000",
      WorkingDir: "/home/ann/src/app",
      Labels: {
        "sbx.sandbox": "abc123def456",
        "sbx.name": "demo",
        "sbx.repo": "/home/ann/src/app",
        "sbx.dir": "/home/ann/.cache/sandbox/app-ff/demo",
        "sbx.role": "sandbox",
        "sbx.root": rootLabel("/home/ann/.cache/sandbox"),
      },
      Env: ["HOME=/home/ann", "LANG=C.UTF-8", "SANDBOX=demo", "TERM=xterm-256color"],
      Image: "sbx-app:1234",
      Entrypoint: ["/bin/sh"],
      Cmd: ["-c", 'export BUN_JSC_useConcurrentJIT=0 BUN_JSC_useConcurrentGC=0 BUN_JSC_numberOfGCMarkers=1; unset PWD; exec "$@"', "sbx-main", "/opt/sbx/bin/bun", "/opt/sbx/shims/sandbox-main.ts", "--port", "3128"],
      HostConfig: {
        Init: true,
        NetworkMode: "none",
        CapDrop: ["ALL"],
        ExtraHosts: ["demo:127.0.0.1"],
        SecurityOpt: ["no-new-privileges"],
        Mounts: [
          { Type: "bind", Source: "/home/ann/.cache/sandbox/app-ff/demo/clone", Target: "/home/ann/src/app" },
          { Type: "bind", Source: "/home/ann/src/app/.git/objects", Target: "/home/ann/.cache/sandbox/app-ff/demo/repo/.git/objects", ReadOnly: true },
          { Type: "bind", Source: "/home/ann/.cache/sandbox/app-ff/demo/etc/alternates.masked", Target: "/home/ann/.cache/sandbox/app-ff/demo/repo/.git/objects/info/alternates", ReadOnly: true },
          { Type: "bind", Source: "/run/user/1000/sbx/sb/abc123def456", Target: "/run/sbx" },
          { Type: "bind", Source: "/usr/lib/bun/bun", Target: "/opt/sbx/bin/bun", ReadOnly: true },
          { Type: "bind", Source: "/opt/src/sbx/shims", Target: "/opt/sbx/shims", ReadOnly: true },
          { Type: "bind", Source: "/home/ann/.cache/sbx/agents", Target: "/opt/sbx/agents", ReadOnly: true },
          { Type: "bind", Source: "/home/ann/.cache/sandbox/app-ff/demo/etc/sbx-shims.sh", Target: "/etc/profile.d/zz-sbx-shims.sh", ReadOnly: true },
          { Type: "bind", Source: "/home/ann/.cache/sandbox/app-ff/demo/etc/sbx-shims.fish", Target: "/etc/fish/conf.d/sbx-shims.fish", ReadOnly: true },
          { Type: "volume", Source: overlays[0]!.volume, Target: "/home/ann/.claude", VolumeOptions: { NoCopy: true, DriverConfig: {} } },
          { Type: "volume", Source: overlays[1]!.volume, Target: "/home/ann/.config/fish", VolumeOptions: { NoCopy: true, DriverConfig: {} } },
        ],
      },
    });
  });

  test("a flag or mount field the API translation does not know is an error, never silently dropped", () => {
    expect(() => createRequestFromArgs([...argv.slice(0, 2), "--privileged", ...argv.slice(2)])).toThrow(/unmapped docker create flag --privileged/);
    expect(() => createRequestFromArgs(["docker", "create", "--name", "x", "--mount", "type=bind,src=/a,dst=/b,bind-propagation=shared", "img"])).toThrow(/unmapped mount field/);
    expect(() => createRequestFromArgs(["docker", "create", "--hostname", "x", "img"])).toThrow(/without a name/);
  });

  test("limits become --memory (with no swap beyond it), --cpus and --pids-limit, and the same HostConfig fields in the API request", () => {
    const limited = dockerCreateArgs({ ...spec, limits: { memory: 512 * 1024 ** 2, cpus: 1.5, pids: 128 } }, { image: "sbx-app:1234", overlays, command: containerCommand(spec), runtime, root: "r" });
    const at = limited.indexOf("--memory");
    expect(limited.slice(at, at + 8)).toEqual(["--memory", "536870912", "--memory-swap", "536870912", "--cpus", "1.5", "--pids-limit", "128"]);
    const hc = (createRequestFromArgs(limited).body as { HostConfig: Record<string, unknown> }).HostConfig;
    expect({ m: hc.Memory, s: hc.MemorySwap, c: hc.NanoCpus, p: hc.PidsLimit }).toEqual({ m: 536870912, s: 536870912, c: 1.5e9, p: 128 });
    // A limit set to none is left out; a sandbox made before limits has none of these flags.
    const open = dockerCreateArgs({ ...spec, limits: { memory: null, cpus: null, pids: 64 } }, { image: "i", overlays, command: [], runtime, root: "r" });
    expect(open.filter((a) => a.startsWith("--memory") || a === "--cpus")).toEqual([]);
    expect(argv.some((a) => a === "--pids-limit" || a === "--memory")).toBe(false);
  });

  test("mount values with commas and quotes come apart as mountValue put them together", () => {
    const fields: [string, string][] = [["type", "bind"], ["src", '/we,ird "dir"'], ["dst", "/x"]];
    expect(parseMountValue(mountValue([...fields, "readonly"]))).toEqual(['type=bind', 'src=/we,ird "dir"', "dst=/x", "readonly"]);
  });

  test("matches the golden argv", () => {
    expect(argv).toEqual([
      "docker", "create",
      "--name", "sbx-abc123def456",
      "--hostname", "demo",
      "--add-host", "demo:127.0.0.1",
      "--init",
      "--user", "1000:1000",
      "--network", "none",
      "--cap-drop", "ALL",
      "--security-opt", "no-new-privileges",
      "--workdir", "/home/ann/src/app",
      "--label", "sbx.sandbox=abc123def456",
      "--label", "sbx.name=demo",
      "--label", "sbx.repo=/home/ann/src/app",
      "--label", "sbx.dir=/home/ann/.cache/sandbox/app-ff/demo",
      "--label", "sbx.role=sandbox",
      "--label", `sbx.root=${rootLabel("/home/ann/.cache/sandbox")}`,
      "--env", "HOME=/home/ann",
      "--env", "LANG=C.UTF-8",
      "--env", "SANDBOX=demo",
      "--env", "TERM=xterm-256color",
      "--mount", "type=bind,src=/home/ann/.cache/sandbox/app-ff/demo/clone,dst=/home/ann/src/app",
      "--mount", "type=bind,src=/home/ann/src/app/.git/objects,dst=/home/ann/.cache/sandbox/app-ff/demo/repo/.git/objects,readonly",
      "--mount", "type=bind,src=/home/ann/.cache/sandbox/app-ff/demo/etc/alternates.masked,dst=/home/ann/.cache/sandbox/app-ff/demo/repo/.git/objects/info/alternates,readonly",
      "--mount", "type=bind,src=/run/user/1000/sbx/sb/abc123def456,dst=/run/sbx",
      "--mount", "type=bind,src=/usr/lib/bun/bun,dst=/opt/sbx/bin/bun,readonly",
      "--mount", "type=bind,src=/opt/src/sbx/shims,dst=/opt/sbx/shims,readonly",
      "--mount", "type=bind,src=/home/ann/.cache/sbx/agents,dst=/opt/sbx/agents,readonly",
      "--mount", "type=bind,src=/home/ann/.cache/sandbox/app-ff/demo/etc/sbx-shims.sh,dst=/etc/profile.d/zz-sbx-shims.sh,readonly",
      "--mount", "type=bind,src=/home/ann/.cache/sandbox/app-ff/demo/etc/sbx-shims.fish,dst=/etc/fish/conf.d/sbx-shims.fish,readonly",
      "--mount", `type=volume,src=${overlays[0]!.volume},dst=/home/ann/.claude,volume-nocopy`,
      "--mount", `type=volume,src=${overlays[1]!.volume},dst=/home/ann/.config/fish,volume-nocopy`,
      "--entrypoint", "/bin/sh",
      "sbx-app:1234",
      "-c", 'export BUN_JSC_useConcurrentJIT=0 BUN_JSC_useConcurrentGC=0 BUN_JSC_numberOfGCMarkers=1; unset PWD; exec "$@"', "sbx-main", "/opt/sbx/bin/bun", "/opt/sbx/shims/sandbox-main.ts", "--port", "3128",
    ]);
  });

  test("the long-lived process is the forwarder on the host's Bun, mounted read-only with the shims", () => {
    expect(containerCommand(spec)[3]).toBe(RUNTIME_MOUNT.bun);
    expect(containerCommand({ ...spec, options: { ...dockerOpts, proxyPort: 4000 } }).slice(-2)).toEqual(["--port", "4000"]);
    const mounts = argv.filter((_, i) => argv[i - 1] === "--mount");
    expect(mounts.filter((m) => m.includes("/opt/sbx/")).every((m) => m.endsWith(",readonly"))).toBe(true);
  });

  test("a built sandbox-main is run from its own dir, mounted read-only", () => {
    const built = dockerCreateArgs(spec, { image: "sbx-app:1234", overlays, command: containerCommand(spec, true), runtime: { ...runtime, main: "/home/ann/.cache/sbx/main" }, root: "r" });
    expect(built).toContain("type=bind,src=/home/ann/.cache/sbx/main,dst=/opt/sbx/main,readonly");
    expect(containerCommand(spec, true)[4]).toBe("/opt/sbx/main/sandbox-main.js");
  });

  test("the transparent path: resolv.conf names the stub, the namespaced sysctl opens 53..1023 to the user, no capability is added", () => {
    const tspec = { ...spec, options: { ...dockerOpts, transparent: true } };
    const t = dockerCreateArgs(tspec, { image: "sbx-app:1234", overlays, command: containerCommand(tspec), runtime, root: "r" });
    const at = t.indexOf("--dns");
    expect(t.slice(at, at + 4)).toEqual(["--dns", "127.77.0.1", "--sysctl", "net.ipv4.ip_unprivileged_port_start=53"]);
    expect(containerCommand(tspec).slice(-4)).toEqual(["--dns-stub", "127.77.0.1", "--transparent-ports", "80,443"]);
    const hc = (createRequestFromArgs(t).body as { HostConfig: Record<string, unknown> }).HostConfig;
    expect({ dns: hc.Dns, sysctls: hc.Sysctls, capAdd: hc.CapAdd, caps: hc.CapDrop, net: hc.NetworkMode }).toEqual({
      dns: ["127.77.0.1"],
      sysctls: { "net.ipv4.ip_unprivileged_port_start": "53" },
      capAdd: undefined,
      caps: ["ALL"],
      net: "none",
    });
    // Off (--no-transparent, or a sandbox made before it): none of it.
    expect(argv.some((a) => a === "--dns" || a === "--sysctl")).toBe(false);
    expect(containerCommand(spec)).not.toContain("--dns-stub");
  });

  test("the root label is a hash of the state root: two roots never share one", () => {
    expect(rootLabel("/home/ann/.cache/sandbox")).toMatch(/^[0-9a-f]{64}$/);
    expect(rootLabel("/home/ann/.cache/sandbox")).not.toBe(rootLabel("/home/bob/.cache/sandbox"));
  });

  test("never gives the sandbox a network, the docker socket or the SSH agent", () => {
    const s = argv.join(" ");
    expect(s).not.toContain("--internal");
    expect(s).not.toContain("docker.sock");
    expect(s).not.toContain("SSH_AUTH_SOCK");
    expect(s).not.toContain("--privileged");
    expect(argv[argv.indexOf("--network") + 1]).toBe("none");
  });
});

describe("overlays", () => {
  test("escapes ',' ':' and '\\' for overlayfs options", () => {
    expect(escapeOverlayPath("/a,b:c\\d")).toBe("/a\\,b\\:c\\\\d");
    expect(escapeOverlayPath("/plain/path")).toBe("/plain/path");
  });

  test("the lower dir is the view sbx builds in the sandbox dir, never the host's dir (present or not)", () => {
    for (const t of ["/home/ann/.config/fish", "/home/ann/.claude"]) {
      const p = overlayPlan(spec, t);
      expect(p.lower.startsWith(spec.dir + "/overlay/")).toBe(true);
      expect(p.lower.endsWith("/view")).toBe(true);
      expect(p.upper.startsWith(spec.dir + "/overlay/")).toBe(true);
      expect(p.work.startsWith(spec.dir + "/overlay/")).toBe(true);
    }
  });

  test("volume create argv carries type=overlay, escaped options and the labels", () => {
    const s2 = { ...spec, dir: "/x/we,ird:dir" };
    const p = overlayPlan(s2, "/home/ann/.claude");
    const argv = overlayVolumeCreateArgs(s2, p, rootLabel("/x"));
    expect(argv.slice(0, 5)).toEqual(["docker", "volume", "create", "--driver", "local"]);
    expect(argv).toContain("type=overlay");
    expect(argv).toContain("device=overlay");
    const o = argv.find((a) => a.startsWith("o="))!;
    expect(o).toBe(
      `o=lowerdir=${escapeOverlayPath(p.lower)},upperdir=${escapeOverlayPath(p.upper)},workdir=${escapeOverlayPath(p.work)}`,
    );
    expect(o).toContain("/x/we\\,ird\\:dir/overlay/");
    expect(argv).toContain("sbx.sandbox=abc123def456");
    expect(argv).toContain(`sbx.root=${rootLabel("/x")}`);
    expect(argv.at(-1)).toBe(p.volume);
  });

  test("the API body of a volume create says what the CLI argv says: driver, the three options, every label, the name", () => {
    const s2 = { ...spec, dir: "/x/we,ird:dir" };
    const p = overlayPlan(s2, "/home/ann/.claude");
    const argv = overlayVolumeCreateArgs(s2, p, rootLabel("/x"));
    const body = overlayVolumeCreateBody(s2, p, rootLabel("/x")) as { Name: string; Driver: string; DriverOpts: Record<string, string>; Labels: Record<string, string> };
    const flag = (f: string) => argv.flatMap((a, i) => (argv[i - 1] === f ? [a] : []));
    expect(body.Name).toBe(argv.at(-1)!);
    expect(body.Driver).toBe(flag("--driver")[0]!);
    expect(Object.entries(body.DriverOpts).map(([k, v]) => `${k}=${v}`)).toEqual(flag("--opt"));
    expect(Object.entries(body.Labels).map(([k, v]) => `${k}=${v}`)).toEqual(flag("--label"));
  });

  test("volume names differ per target and per sandbox", () => {
    const a = overlayPlan(spec, "/home/ann/.claude").volume;
    expect(overlayPlan(spec, "/home/ann/.config/fish").volume).not.toBe(a);
    expect(overlayPlan({ ...spec, id: "other0000000" }, "/home/ann/.claude").volume).not.toBe(a);
  });
});

test("mount values with commas or quotes are CSV-quoted", () => {
  expect(mountValue([["type", "bind"], ["src", "/a,b"], ["dst", '/c"d'], "readonly"])).toBe(
    'type=bind,"src=/a,b","dst=/c""d",readonly',
  );
});

describe("seedEntries", () => {
  test("makes every dir from $HOME down to each mount point under it, owned by the host user", () => {
    const overlays = [overlayPlan(spec, "/home/ann/.claude")];
    const entries = seedEntries(spec, mountTargets(spec, overlays), null);
    const paths = entries.map((e) => e.path);
    expect(paths).toContain("home/ann");
    expect(paths).toContain("home/ann/src");
    expect(paths).toContain("home/ann/.cache/sandbox/app-ff/demo/repo");
    // mount points themselves are left out: docker cp would write through the mount
    expect(paths).not.toContain("home/ann/src/app");
    expect(paths).toContain("home/ann/.cache/sandbox/app-ff/demo/repo/.git");
    expect(paths).not.toContain("home/ann/.cache/sandbox/app-ff/demo/repo/.git/objects");
    expect(paths).not.toContain("home/ann/.claude");
    expect(paths).not.toContain("home");
    expect(entries.every((e) => e.uid === 1000 && e.gid === 1000 && e.type === "dir")).toBe(true);
    // parents come before children
    expect(paths.indexOf("home/ann/.cache")).toBeLessThan(paths.indexOf("home/ann/.cache/sandbox"));
  });

  test("copies ~/.claude.json in as a file (a single file cannot be an overlay)", () => {
    const entries = seedEntries(spec, [], new TextEncoder().encode("{}"));
    const f = entries.find((e) => e.type === "file")!;
    expect(f.path).toBe("home/ann/.claude.json");
    expect(f.mode).toBe(0o600);
  });

  test("mount points outside $HOME get nothing", () => {
    const entries = seedEntries({ ...spec, repo: "/srv/app" }, ["/srv/app"], null);
    expect(entries.map((e) => e.path)).toEqual(["home/ann"]);
  });
});

describe("dockerExecArgs", () => {
  test("interactive: a tty (the engine's detach sequence one no one types: detaching is sbx's), the user's shell as a login shell, in the mapped cwd", () => {
    expect(dockerExecArgs(spec, { argv: [], cwd: "/home/ann/src/app/lib", tty: true, env: { TERM: "xterm" } }, "/usr/bin/fish")).toEqual([
      "docker", "exec", "--interactive", "--tty", "--detach-keys", ENGINE_DETACH_KEYS, "--user", "1000:1000", "--workdir", "/home/ann/src/app/lib",
      "--env", "TERM=xterm", "sbx-abc123def456", "/bin/sh", "-c", startLine(spec.name, { tty: true }), "sbx", "/usr/bin/fish", "-l",
    ]);
  });

  test("non-interactive: no tty, no stdin unless asked, the command as given", () => {
    expect(dockerExecArgs(spec, { argv: ["true"], cwd: "/home/ann/src/app", tty: false, env: {} }, "/bin/bash")).toEqual([
      "docker", "exec", "--user", "1000:1000", "--workdir", "/home/ann/src/app", "sbx-abc123def456", "/bin/sh", "-c", startLine(spec.name), "sbx", "true",
    ]);
    expect(dockerExecArgs(spec, { argv: ["cat"], cwd: "/", tty: false, env: {}, stdin: true }, "/bin/bash")).toContain("--interactive");
  });

  test("a daemon session: its id in the process's environment, and a start line that records the pid under it (the hang-up's handle)", () => {
    const argv = dockerExecArgs(spec, { argv: ["claude"], cwd: "/home/ann/src/app", tty: true, env: {}, session: "app-0a1b2c" }, "/bin/bash");
    expect(argv.slice(argv.indexOf("--env"), argv.indexOf("sbx-abc123def456"))).toEqual(["--env", "SBX_SESSION=app-0a1b2c"]);
    expect(argv).toContain(startLine(spec.name, { tty: true, session: "app-0a1b2c" }));
    expect(startLine(spec.name, { tty: true, session: "app-0a1b2c" })).toContain("echo $$ > /tmp/.sbx-sessions/'app-0a1b2c'");
  });
});

describe("--claude-auth in the create argv", () => {
  const overlays = [overlayPlan(spec, "/home/ann/.claude")];
  const plan = { image: "i", overlays, command: ["c"], runtime: { bun: "/b", shims: "/s" }, root: "r" };
  const mask = "type=bind,src=/home/ann/.cache/sandbox/app-ff/demo/etc/claude-credentials.masked,dst=/home/ann/.claude/.credentials.json,readonly";

  test("inject: an empty read-only file over ~/.claude/.credentials.json, after the ~/.claude overlay", () => {
    const argv = dockerCreateArgs({ ...spec, options: { ...dockerOpts, claudeAuth: "inject" } }, plan);
    const at = argv.indexOf(mask);
    expect(at).toBeGreaterThan(0);
    expect(argv[at - 1]).toBe("--mount");
    expect(at).toBeGreaterThan(argv.findIndex((a) => a.includes("dst=/home/ann/.claude,")));
  });

  test("overlay, or no ~/.claude overlay: no mask", () => {
    expect(dockerCreateArgs({ ...spec, options: { ...dockerOpts, claudeAuth: "overlay" } }, plan)).not.toContain(mask);
    expect(dockerCreateArgs({ ...spec, overlays: [], options: { ...dockerOpts, claudeAuth: "inject" } }, { ...plan, overlays: [] }).join(" ")).not.toContain("credentials");
  });
});
