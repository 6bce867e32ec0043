// service-confinement (rendered): a service container's `docker create` gives it the sandbox's network namespace and
// nothing of the host: no capability, no bind mount, no socket, no variable, the sandbox's limits.
import { describe, expect, test } from "bun:test";
import type { SandboxSpec } from "../../../../src/core/spec";
import { rootLabel } from "../../../../src/drivers/docker/args";
import { serviceContainerName, serviceCreateArgs, serviceVolumeArgs, serviceVolumeName, sharedVolumeName } from "../../../../src/drivers/docker/services";

const spec: SandboxSpec = {
  id: "abc123def456",
  name: "demo",
  repo: "/home/ann/src/app",
  dir: "/home/ann/.cache/sandbox/app-ff/demo",
  hostUser: { name: "ann", uid: 1000, gid: 1000, home: "/home/ann", shell: "/bin/bash" },
  sockets: { dir: "/run/user/1000/sbx/sb/abc123def456", proxy: "/p", bridge: "/b" },
  env: { TERM: "xterm", SANDBOX: "demo", HTTPS_PROXY: "http://127.0.0.1:3128", ANTHROPIC_BASE_URL: "http://x", GITHUB_TOKEN: "sbx-placeholder" },
  overlays: ["/home/ann/.claude"],
  options: { driver: "docker", claudeAuth: "inject", image: "sbx-app:1" },
  limits: { memory: 1 << 30, cpus: 2, pids: 512 },
};
const root = rootLabel("/home/ann/.cache/sandbox");
const argv = serviceCreateArgs(spec, { name: "db", image: "pg-test:16" }, root, ["/var/lib/postgresql"]);
const flag = (f: string) => argv.flatMap((a, i) => (a === f ? [argv[i + 1]!] : []));

describe("service-confinement: what a service container is given", () => {
  test("the sandbox's network namespace, and no other network", () => {
    expect(flag("--network")).toEqual(["container:sbx-abc123def456"]);
    expect(argv.some((a) => /^--(net|network)=|^--(dns|add-host|publish|expose)$|^-p$/.test(a))).toBe(false);
  });

  test("every capability dropped, none added, no-new-privileges, not privileged, no host namespaces", () => {
    expect(flag("--cap-drop")).toEqual(["ALL"]);
    expect(flag("--cap-add")).toEqual([]);
    expect(flag("--security-opt")).toEqual(["no-new-privileges"]);
    expect(argv.some((a) => /^--privileged|^--(pid|ipc|uts|userns|device|cgroupns)(=|$)/.test(a))).toBe(false);
  });

  test("the sandbox's limits", () => {
    expect(flag("--memory")).toEqual([String(1 << 30)]);
    expect(flag("--memory-swap")).toEqual([String(1 << 30)]);
    expect(flag("--cpus")).toEqual(["2"]);
    expect(flag("--pids-limit")).toEqual(["512"]);
  });

  test("no environment of the sandbox's (proxy, LLM, placeholders) and nothing of the host mounted: only its own named volume", () => {
    expect(flag("--env")).toEqual([]);
    // Labels name the sandbox's paths (they are data for sbx, not mounts): everything else is looked at.
    const unlabelled = argv.filter((a, i) => a !== "--label" && argv[i - 1] !== "--label");
    expect(unlabelled.join(" ")).not.toMatch(/PROXY|ANTHROPIC|GITHUB|placeholder|\/run\/sbx|docker\.sock|\/home\/ann|type=bind/);
    expect(flag("--mount")).toEqual([`type=volume,src=${serviceVolumeName(spec.id, "db", "/var/lib/postgresql")},dst=/var/lib/postgresql`]);
  });

  test("labelled as the sandbox's (root, sandbox id) with role service, so rm, stop and prune find it; named apart from the sandbox", () => {
    const labels = flag("--label");
    expect(labels).toContain(`sbx.root=${root}`);
    expect(labels).toContain("sbx.sandbox=abc123def456");
    expect(labels).toContain("sbx.role=service");
    expect(labels).toContain("sbx.service=db");
    expect(flag("--name")).toEqual([serviceContainerName(spec.id, "db")]);
    expect(serviceContainerName(spec.id, "db")).not.toBe("sbx-abc123def456");
    expect(argv.at(-1)).toBe("pg-test:16");
    const vol = serviceVolumeArgs(spec, { name: "db" }, root, { name: serviceVolumeName(spec.id, "db", "/var/lib/postgresql") });
    expect(vol).toContain("sbx.sandbox=abc123def456");
    expect(vol).toContain(`sbx.root=${root}`);
  });

  test("the image is the last word and nothing follows it: the image's own command runs", () => {
    expect(argv.indexOf("pg-test:16")).toBe(argv.length - 1);
    expect(argv).not.toContain("--entrypoint");
    expect(argv).not.toContain("--user");
  });

  test("what the person wrote for it, and only that: its variables (never the sandbox's or the host's), command, entrypoint, user, healthcheck, named volumes", () => {
    const svc = {
      name: "db",
      image: "pg-test:16",
      env: { POSTGRES_DB: "app", A: "x y" },
      command: ["postgres", "-c", "listen_addresses=127.0.0.1"],
      entrypoint: ["/usr/bin/env", "--"],
      user: "postgres",
      healthcheck: { cmd: "pg_isready -h 127.0.0.1", interval: "1s", retries: 30 },
      volumes: [{ key: "pgdata", path: "/var/lib/postgresql" }, { key: "shared", path: "/srv", readOnly: true }],
    };
    const a = serviceCreateArgs(spec, svc, root, ["/var/lib/postgresql", "/other"]);
    const f = (x: string) => a.flatMap((v, i) => (v === x ? [a[i + 1]!] : []));
    expect(f("--env")).toEqual(["A=x y", "POSTGRES_DB=app"]);
    expect(f("--user")).toEqual(["postgres"]);
    expect(f("--health-cmd")).toEqual(["pg_isready -h 127.0.0.1"]);
    expect(f("--health-interval")).toEqual(["1s"]);
    expect(f("--health-retries")).toEqual(["30"]);
    // The named volume covers the image's VOLUME at the same path; the image's other path gets its own.
    expect(f("--mount")).toEqual([
      `type=volume,src=${sharedVolumeName(spec.id, "pgdata")},dst=/var/lib/postgresql`,
      `type=volume,src=${sharedVolumeName(spec.id, "shared")},dst=/srv,readonly`,
      `type=volume,src=${serviceVolumeName(spec.id, "db", "/other")},dst=/other`,
    ]);
    expect(f("--entrypoint")).toEqual(["/usr/bin/env"]);
    expect(a.slice(a.indexOf("pg-test:16"))).toEqual(["pg-test:16", "--", "postgres", "-c", "listen_addresses=127.0.0.1"]);
    const unlabelled = a.filter((x, i) => x !== "--label" && a[i - 1] !== "--label");
    expect(unlabelled.join(" ")).not.toMatch(/PROXY|ANTHROPIC|GITHUB|placeholder|SANDBOX=|\/run\/sbx|type=bind/);
    expect(serviceCreateArgs(spec, { name: "db", image: "x", healthcheck: { none: true }, entrypoint: [] }, root, [])).toEqual(expect.arrayContaining(["--no-healthcheck", "--entrypoint", ""]));
  });

  test("a value that looks like a flag stays one argv word, after its flag: it cannot become an option of docker", () => {
    const a = serviceCreateArgs(spec, { name: "db", image: "x", env: { A: "--privileged" }, command: ["--network=host"], healthcheck: { cmd: "--privileged" } }, root, []);
    expect(a[a.indexOf("A=--privileged") - 1]).toBe("--env");
    expect(a[a.indexOf("--privileged") - 1]).toBe("--health-cmd");
    expect(a.indexOf("--network=host")).toBeGreaterThan(a.indexOf("x"));
  });

  test("a named volume is the sandbox's, one per key, shared by the services that name it; labelled with its key", () => {
    expect(sharedVolumeName(spec.id, "pgdata")).toMatch(/^sbx-abc123def456-vol-[0-9a-f]{10}$/);
    expect(sharedVolumeName(spec.id, "pgdata")).not.toBe(sharedVolumeName("otherid00000", "pgdata"));
    const v = serviceVolumeArgs(spec, { name: "db" }, root, { name: sharedVolumeName(spec.id, "pgdata"), key: "pgdata" });
    expect(v).toContain("sbx.volume=pgdata");
    expect(v).toContain("sbx.sandbox=abc123def456");
  });
});
