// compose-untrusted: a devcontainer's compose file is repo content the agent may have written. Read through the real
// entry (planImageSource → compose-file.ts → core/compose.ts) on real files: each key that asks for more than sbx
// gives a service is refused with its reason, or ignored and listed; none is ever honoured; nothing outside the repo is
// read; the YAML is read within bounds; the host's environment never reaches a variable.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { planImageSource, type ImagePlan } from "../../../../src/drivers/docker/image-source";
import { serviceCreateArgs } from "../../../../src/drivers/docker/services";
import type { SandboxSpec } from "../../../../src/core/spec";

const tmp = realpathSync(mkdtempSync(join(tmpdir(), "sbx-compose-")));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let n = 0;

/** A repo with a devcontainer.json naming compose.yml (service app), these files, and a secret beside it outside the repo. */
function repo(compose: string, files: Record<string, string> = {}, dc: Record<string, unknown> = {}): string {
  const r = join(tmp, `r${n++}`, "repo");
  const all: Record<string, string> = {
    ".devcontainer/devcontainer.json": JSON.stringify({ dockerComposeFile: "compose.yml", service: "app", ...dc }),
    ".devcontainer/compose.yml": compose,
    ".devcontainer/Dockerfile": "FROM sbx-base:bookworm\n",
    ...files,
  };
  for (const [p, c] of Object.entries(all)) {
    mkdirSync(join(r, p, ".."), { recursive: true });
    writeFileSync(join(r, p), c);
  }
  // Beside the repo (what a hostile path reaches for): a key and an env file of the person's.
  writeFileSync(join(r, "..", "secret.env"), "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nHOST_ONLY=outside-value\n");
  writeFileSync(join(r, "..", "other.yml"), "services:\n  x:\n    image: pg\n");
  return r;
}

const APP = "  app:\n    build: { context: .., dockerfile: .devcontainer/Dockerfile }\n";
const plan = (r: string): ImagePlan => planImageSource(r);
const refusal = (r: string): string => {
  try {
    plan(r);
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error("planned without a refusal");
};

const spec: SandboxSpec = {
  id: "abc123def456",
  name: "demo",
  repo: "/r",
  dir: "/d",
  hostUser: { name: "ann", uid: 1000, gid: 1000, home: "/home/ann", shell: "/bin/bash" },
  sockets: { dir: "/s", proxy: "/p", bridge: "/b" },
  env: {},
  overlays: [],
  options: { driver: "docker", claudeAuth: "inject", image: "sbx-app:1" },
};

describe("compose-untrusted: the devcontainer compose case, read as sbx runs it", () => {
  test("the sandbox is the devcontainer's service (its build), the other services become the sandbox's, with image, build, environment, command, healthcheck, named volumes and depends_on", () => {
    const r = repo(
      `services:
${APP}    volumes: ["../..:/workspaces:cached"]
    network_mode: service:db
    environment: { APP_MODE: dev }
  db:
    image: sbxt-postgres:15
    environment:
      POSTGRES_DB: app
      PORT: 5432
    command: postgres -c "listen_addresses=127.0.0.1"
    healthcheck:
      test: ["CMD", "pg_isready", "-h", "127.0.0.1"]
      interval: 1s
      retries: 30
    volumes: [pgdata:/var/lib/postgresql/data]
    restart: unless-stopped
    ports: ["5432:5432"]
  cache:
    build: ./cache
    depends_on:
      db: { condition: service_healthy }
volumes:
  pgdata: {}
`,
      { ".devcontainer/cache/Dockerfile": "FROM sbx-base:bookworm\n" },
    );
    const p = plan(r);
    expect(p.source).toEqual({ kind: "dockerfile", dockerfile: join(r, ".devcontainer/Dockerfile"), context: r, from: "devcontainer" });
    expect(p.env).toEqual({ APP_MODE: "dev" });
    expect(p.services).toEqual([
      {
        name: "db",
        image: "sbxt-postgres:15",
        env: { POSTGRES_DB: "app", PORT: "5432" },
        command: ["postgres", "-c", "listen_addresses=127.0.0.1"],
        healthcheck: { cmd: "pg_isready -h 127.0.0.1", interval: "1s", retries: 30 },
        volumes: [{ key: "pgdata", path: "/var/lib/postgresql/data" }],
      },
      { name: "cache", build: { dockerfile: join(r, ".devcontainer/cache/Dockerfile"), context: join(r, ".devcontainer/cache") }, dependsOn: [{ name: "db", healthy: true }] },
    ]);
    const notes = p.notes.join("\n");
    expect(notes).toMatch(/services\.db: ignored restart, ports/);
    expect(notes).toMatch(/services\.app \(the sandbox itself\): ignored volumes, network_mode/);
  });

  test("runServices picks the services (and what they depend on); the rest are said not run", () => {
    const r = repo(`services:\n${APP}  db: { image: pg }\n  cache: { image: redis, depends_on: [db] }\n  docs: { image: docs }\n`, {}, { runServices: ["cache"] });
    const p = plan(r);
    expect(p.services.map((s) => s.name)).toEqual(["cache", "db"]);
    expect(p.notes.join("\n")).toMatch(/not run \(not in runServices, nor needed by one\): docs/);
    expect(refusal(repo(`services:\n${APP}  db: { image: pg }\n`, {}, { runServices: ["nope"] }))).toMatch(/service "nope" is not in the compose file/);
    expect(refusal(repo(`services:\n${APP}  db: { image: pg }\n`, {}, { service: "nope" }))).toMatch(/names service "nope", which the compose file does not have/);
  });

  test("hostile: each key that asks for a privilege, a host namespace or another container's is refused with its reason", () => {
    const cases: [string, RegExp][] = [
      ["privileged: true", /privileged: every capability/],
      ["network_mode: host", /network_mode: host: the host's own network/],
      ["pid: host", /pid: host: the host's own pid namespace/],
      ["ipc: host", /ipc: host/],
      ["uts: host", /uts: host/],
      ["userns_mode: host", /userns_mode: host: the host's own user namespace/],
      ["cgroup: host", /cgroup: host/],
      ["pid: 'container:sbx-other'", /another container's namespace/],
      ["cap_add: [ALL]", /cap_add ALL: sbx drops every capability/],
      ["cap_add: [NET_ADMIN, SYS_PTRACE]", /cap_add NET_ADMIN, SYS_PTRACE/],
      ["devices: ['/dev/kvm:/dev/kvm']", /devices: the host's devices/],
      ["security_opt: ['seccomp=unconfined']", /security_opt seccomp=unconfined: sbx never switches a confinement off/],
      ["security_opt: ['apparmor:unconfined']", /apparmor:unconfined/],
      ["volumes_from: [sbx-other]", /another container's volumes/],
      ["cgroup_parent: /", /a cgroup of the host's/],
      ["extends: { file: ../../other.yml, service: x }", /extends: sbx reads the compose file named/],
    ];
    for (const [line, why] of cases) {
      const msg = refusal(repo(`services:\n${APP}  db:\n    image: pg\n    ${line}\n`));
      expect({ line, msg }).toEqual({ line, msg: expect.stringMatching(why) });
    }
    expect(refusal(repo(`include: [../../other.yml]\nservices:\n${APP}  db: { image: pg }\n`))).toMatch(/include: sbx reads the compose files devcontainer.json names/);
  });

  test("hostile: the same keys on the sandbox's own service are ignored and listed (sbx runs its container its own way), never honoured", () => {
    const p = plan(repo(`services:\n  app:\n    image: dev:1\n    privileged: true\n    cap_add: [ALL]\n    pid: host\n    volumes: ["/var/run/docker.sock:/var/run/docker.sock"]\n    environment: { HTTPS_PROXY: "http://evil.example:1", GITHUB_TOKEN: x, MODE: dev }\n  db: { image: pg }\n`));
    expect(p.source).toEqual({ kind: "image", ref: "dev:1", from: "devcontainer" });
    // The sandbox's own variables are held to a sandbox's rules: sbx's own and credentials are not set.
    expect(p.env).toEqual({ MODE: "dev" });
    expect(p.notes.join("\n")).toMatch(/environment\.HTTPS_PROXY not set: is set by sbx itself/);
    expect(p.notes.join("\n")).toMatch(/services\.app \(the sandbox itself\): ignored privileged, cap_add, pid, volumes/);
  });

  test("hostile: host bind mounts in every form (relative, absolute, ~, long syntax, the engine's socket, a named volume whose driver_opts bind a host path) are never mounted, each listed", () => {
    const p = plan(
      repo(`services:
${APP}  db:
    image: pg
    volumes:
      - ./init.sql:/docker-entrypoint-initdb.d/init.sql
      - ../..:/workspace
      - /etc:/host-etc:ro
      - ~/.ssh:/root/.ssh
      - /var/run/docker.sock:/var/run/docker.sock
      - type: bind
        source: /
        target: /host
      - type: tmpfs
        target: /tmp/x
      - sneaky:/data
volumes:
  sneaky:
    driver: local
    driver_opts: { type: none, o: bind, device: /home }
`),
    );
    const db = p.services.find((s) => s.name === "db")!;
    expect(db.volumes).toEqual([{ key: "sneaky", path: "/data" }]);
    const notes = p.notes.join("\n");
    for (const src of ["./init.sql", "../..", "/etc", "~/.ssh", "/"]) expect(notes).toContain(`${src} is a path of your machine`);
    expect(notes).toMatch(/\/var\/run\/docker\.sock is the container engine's socket \(root on your machine\)/);
    expect(notes).toMatch(/type tmpfs is not one sbx gives a service/);
    expect(notes).toMatch(/volumes\.sneaky: ignored driver, driver_opts .*a driver_opts bind is a host path, never mounted/);
    // What docker is told: the sandbox's own volume for `sneaky`, no bind, nothing of the host.
    const argv = serviceCreateArgs(spec, db, "root", []).join(" ");
    expect(argv).toContain("type=volume,src=sbx-abc123def456-vol-");
    expect(argv).not.toMatch(/type=bind|docker\.sock|\/home|\/etc|device=/);
  });

  test("hostile: a build context, Dockerfile or env_file outside the repo (through .., an absolute path or a link) is refused and never read; a context that is a URL too", () => {
    const outside = (line: string, files: Record<string, string> = {}) => refusal(repo(`services:\n${APP}  db:\n    image: pg\n${line}`, files));
    expect(outside("    env_file: ../../secret.env\n")).toMatch(/env_file "..\/..\/secret.env" leads outside the repo/);
    expect(outside(`    env_file: ${join(tmp, "r0", "secret.env")}\n`)).toMatch(/leads outside the repo/);
    expect(refusal(repo(`services:\n${APP}  db:\n    build: ../..\n`))).toMatch(/build.context "..\/.." leads outside the repo/);
    expect(refusal(repo(`services:\n${APP}  db:\n    build: { context: ., dockerfile: ../../secret.env }\n`))).toMatch(/build.dockerfile .* leads outside the repo/);
    expect(refusal(repo(`services:\n${APP}  db:\n    build: https://github.com/x/y.git\n`))).toMatch(/is not a dir of the repo/);
    // A link inside the repo that points out of it.
    const r = repo(`services:\n${APP}  db:\n    image: pg\n    env_file: link.env\n`);
    symlinkSync(join(r, "..", "secret.env"), join(r, ".devcontainer", "link.env"));
    expect(refusal(r)).toMatch(/env_file "link.env" leads outside the repo/);
    // The compose file itself, through a link or ..
    expect(refusal(repo(APP, {}, { dockerComposeFile: "../../other.yml" }))).toMatch(/dockerComposeFile "..\/..\/other.yml" leads outside the repo/);
  });

  test("hostile: the host's environment never reaches a variable: ${VAR} is empty, ${VAR:-d} is d, a bare KEY is not set, ${VAR:?} refused; each said", () => {
    process.env.SBX_TEST_HOST_ONLY = "host-secret-value-123";
    try {
      const p = plan(
        repo(`services:
${APP}  db:
    image: pg
    environment:
      A: \${SBX_TEST_HOST_ONLY}
      B: \${SBX_TEST_HOST_ONLY:-fallback}
      C: $$literal
      D: pre-$SBX_TEST_HOST_ONLY-post
      SBX_TEST_HOST_ONLY:
    command: echo \${HOME}
`),
      );
      const db = p.services.find((s) => s.name === "db")!;
      expect(db.env).toEqual({ A: "", B: "fallback", C: "$literal", D: "pre--post" });
      expect(db.command).toEqual(["echo"]);
      expect(JSON.stringify(p)).not.toContain("host-secret-value-123");
      const notes = p.notes.join("\n");
      expect(notes).toMatch(/\$\{SBX_TEST_HOST_ONLY\} is empty \(sbx never reads your environment or a \.env file\)/);
      expect(notes).toMatch(/environment\.SBX_TEST_HOST_ONLY not set: it takes its value from your environment/);
      expect(refusal(repo(`services:\n${APP}  db: { image: "\${IMG:?set IMG}" }\n`))).toMatch(/requires IMG/);
    } finally {
      delete process.env.SBX_TEST_HOST_ONLY;
    }
  });

  test("hostile: an env_file inside the repo is read, but a value that looks like a secret is not set (said), and its file is never the host's", () => {
    const p = plan(repo(`services:\n${APP}  db:\n    image: pg\n    env_file: db.env\n`, { ".devcontainer/db.env": "# test db\nPOSTGRES_PASSWORD=postgres\nexport PGDATA=/data\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nGH=ghp_abcdefghijklmnopqrstuvwxyz0123456789\n" }));
    const db = p.services.find((s) => s.name === "db")!;
    expect(db.env).toEqual({ POSTGRES_PASSWORD: "postgres", PGDATA: "/data" });
    expect(p.notes.join("\n")).toMatch(/env_file\.GH not set: its value looks like a secret/);
    expect(p.notes.join("\n")).toMatch(/env_file\.AWS_SECRET_ACCESS_KEY not set: its value looks like a secret/);
  });

  test("hostile YAML: an alias bomb, deep nesting, a huge file, more than one document, a __proto__ key, a flag-shaped image or a name that cannot be a service's: refused, nothing planned", () => {
    let bomb = 'x-a: &a ["x","x","x","x","x","x","x","x","x","x"]\n';
    for (let i = 1; i < 6; i++) bomb += `x-${i}: &l${i} [${Array(10).fill(i === 1 ? "*a" : `*l${i - 1}`).join(",")}]\n`;
    expect(refusal(repo(`${bomb}services:\n${APP}  db: { image: pg }\n`))).toMatch(/more than 20000 values/);
    expect(refusal(repo(`services:\n${APP}  db: { image: pg, x-deep: ${"[".repeat(40)}${"]".repeat(40)} }\n`))).toMatch(/nested more than 32 deep/);
    expect(refusal(repo(`services:\n${APP}  db: { image: pg, x-deep: ${"[".repeat(20_000)}${"]".repeat(20_000)} }\n`))).toMatch(/not YAML sbx can read|nested more than/);
    expect(refusal(repo(`services:\n${APP}  db: { image: pg }\n# ${"x".repeat(300 * 1024)}\n`))).toMatch(/sbx reads at most 262144/);
    expect(refusal(repo(`services:\n${APP}---\nservices:\n  db: { image: pg }\n`))).toMatch(/more than one YAML document|not a mapping/);
    expect(refusal(repo(`services:\n${APP}  db:\n    image: pg\n    environment:\n      __proto__: { polluted: yes }\n`))).toMatch(/a key __proto__/);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(refusal(repo(`services:\n${APP}  db: { image: "--privileged" }\n`))).toMatch(/is not a local image reference/);
    expect(refusal(repo(`services:\n${APP}  "../db": { image: pg }\n`))).toMatch(/its name cannot be a service's/);
    expect(refusal(repo(`services:\n${APP}  db: { image: pg, command: "echo 'unclosed" }\n`))).toMatch(/unbalanced quotes/);
    // What the daemon's schema bounds, a file cannot exceed: 300 command words, a 9,000-character variable.
    expect(refusal(repo(`services:\n${APP}  db: { image: pg, command: "${"x ".repeat(300)}" }\n`))).toMatch(/services\.db: command/);
    const long = plan(repo(`services:\n${APP}  db: { image: pg, environment: { BIG: "${"y".repeat(9000)}" } }\n`));
    expect(long.services[0]!.env).toBeUndefined();
    expect(long.notes.join("\n")).toMatch(/BIG not set: its value is longer than 8192/);
  });

  test("depends_on: a circle, a one-shot condition, or a healthcheck written out of shape are refused or said", () => {
    expect(refusal(repo(`services:\n${APP}  a: { image: pg, depends_on: [b] }\n  b: { image: pg, depends_on: [a] }\n`))).toMatch(/in a circle/);
    expect(refusal(repo(`services:\n${APP}  a: { image: pg, depends_on: { b: { condition: service_completed_successfully } } }\n  b: { image: pg }\n`))).toMatch(/service_completed_successfully/);
    const p = plan(repo(`services:\n${APP}  a:\n    image: pg\n    healthcheck: { test: "pg_isready", interval: 5, timeout: 2s, start_interval: 1s }\n  b: { image: pg, healthcheck: { disable: true }, depends_on: [app] }\n`));
    expect(p.services[0]!.healthcheck).toEqual({ cmd: "pg_isready", timeout: "2s" });
    expect(p.services[1]).toEqual({ name: "b", image: "pg", healthcheck: { none: true } });
    expect(p.notes.join("\n")).toMatch(/interval ignored: 5 is not a duration/);
  });
});
