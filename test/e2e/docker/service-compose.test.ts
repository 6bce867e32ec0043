// devcontainer compose end to end (Docker): a repo whose .devcontainer/devcontainer.json names a compose file with the
// sandbox's own service and two more: Debian's PostgreSQL (scripts/test-postgres.sh's image, with a healthcheck) and a
// small web service built from the repo's own Dockerfile, which depends on the database being healthy. The sandbox
// reaches both on 127.0.0.1; the web service got only the variables the file wrote; the keys sbx does not honour were
// listed; a service that crashes is said by `sbx status` and `sbx logs`; one that fails its healthcheck at create fails
// the create with its last log lines and leaves nothing (containers, volumes, rows, no image piling up); a compose file
// asking for a privilege is refused before anything is made; `sbx rm` removes it all.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chownSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { acquireFixture, BASE_IMAGE, canRun, ownRepo, releaseFixture, skipReason, type Fixture } from "./fixture";

const SERVER = "sbxt-postgres:15";
const CLIENT_BASE = "sbxt-pgbase:15";
const present = (tag: string) => Bun.spawnSync(["docker", "image", "inspect", tag], { stdout: "ignore", stderr: "ignore" }).exitCode === 0;
const why = skipReason ?? (canRun && !(present(SERVER) && present(CLIENT_BASE)) ? `images ${SERVER} and ${CLIENT_BASE} missing: build them with scripts/test-postgres.sh` : undefined);
const PSQL = ["/usr/lib/postgresql/15/bin/psql", "-X", "-h", "127.0.0.1", "-p", "5432", "-U", "postgres", "-v", "ON_ERROR_STOP=1", "-At"];

/** The web service: refuses to start unless the database already answers (so depends_on's wait is what let it run), then serves its variable. */
const WEB = `import os, socket, http.server
try:
    socket.create_connection(("127.0.0.1", 5432), 2).close()
except OSError as e:
    print("web: the database is not up yet:", e, flush=True); raise SystemExit(7)
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = (os.environ.get("GREETING", "") + "|" + ",".join(sorted(k for k in os.environ if any(w in k for w in ("PROXY", "SBX", "SANDBOX", "ANTHROPIC", "TOKEN"))))).encode()
        self.send_response(200); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
print("web: serving", flush=True)
http.server.HTTPServer(("127.0.0.1", 7000), H).serve_forever()
`;

const COMPOSE = `name: app
services:
  app:
    build: { context: .., dockerfile: Dockerfile }
    volumes: ["..:/workspaces/app:cached"]
    command: sleep infinity
    network_mode: service:db
  db:
    image: ${SERVER}
    volumes: [pgdata:/var/lib/postgresql/data]
    healthcheck:
      test: ["CMD", "/usr/lib/postgresql/15/bin/pg_isready", "-q", "-h", "127.0.0.1", "-U", "postgres"]
      interval: 1s
      retries: 60
    restart: unless-stopped
    ports: ["5432:5432"]
  web:
    build: { context: ., dockerfile: web.Dockerfile }
    environment:
      GREETING: hello-from-compose
      FROM_HOST: \${SBXT_HOST_ONLY}
    depends_on:
      db: { condition: service_healthy }
    healthcheck:
      test: ["CMD", "python3", "-c", "import socket; socket.create_connection(('127.0.0.1', 7000), 1)"]
      interval: 1s
      retries: 30
volumes:
  pgdata: {}
`;

const SICK = `services:
  app: { image: ${CLIENT_BASE} }
  sick:
    build: { context: ., dockerfile: web.Dockerfile }
    command: ["sh", "-c", "echo sick-service-marker; exec sleep 600"]
    healthcheck: { test: ["CMD", "false"], interval: 1s, retries: 2 }
`;

function write(f: Fixture, repo: string, files: Record<string, string>): void {
  for (const [p, c] of Object.entries(files)) {
    mkdirSync(join(repo, p, ".."), { recursive: true });
    writeFileSync(join(repo, p), c);
  }
  Bun.spawnSync(["chown", "-R", `${f.user.uid}:${f.user.gid}`, repo]);
  const add = f.git(["add", "-A"], repo);
  const commit = f.git(["commit", "-qm", "devcontainer"], repo);
  if (add.code !== 0 || commit.code !== 0) throw new Error(`git: ${add.stderr}${commit.stderr}`);
}

describe.skipIf(why !== undefined)(`devcontainer compose with two services and a healthcheck (Docker)${why ? ` — skipped: ${why}` : ""}`, () => {
  let f: Fixture;
  let repo = "";
  let sick = "";
  let id = "";
  let created = { code: -1, stdout: "", stderr: "" };
  beforeAll(() => {
    f = acquireFixture();
    repo = ownRepo(f.user, `compose-${process.pid}`, `FROM ${CLIENT_BASE}\n`);
    write(f, repo, {
      ".devcontainer/devcontainer.json": JSON.stringify({ name: "app", dockerComposeFile: "compose.yml", service: "app", runServices: ["web"], workspaceFolder: "/workspaces/app" }),
      ".devcontainer/compose.yml": COMPOSE,
      ".devcontainer/web.Dockerfile": `FROM ${BASE_IMAGE}\nCOPY web.py /srv/web.py\nUSER 65534:65534\nCMD ["python3", "/srv/web.py"]\n`,
      ".devcontainer/web.py": WEB,
    });
    const t0 = performance.now();
    created = f.sbx(["create", "cmp"], { cwd: repo, env: { SBXT_HOST_ONLY: "host-value-never-inside" } });
    console.log(`create with a devcontainer compose of two services: ${Math.round(performance.now() - t0)} ms`);
    if (created.code !== 0) throw new Error(`sbx create cmp: ${created.stderr}`);
    id = f.docker(["ps", "--filter", `label=sbx.repo=${repo}`, "--filter", "label=sbx.service=db", "--format", '{{.Label "sbx.sandbox"}}']).stdout.trim();
    sick = ownRepo(f.user, `sick-${process.pid}`, `FROM ${CLIENT_BASE}\n`);
    write(f, sick, { ".devcontainer/devcontainer.json": JSON.stringify({ dockerComposeFile: "compose.yml", service: "app" }), ".devcontainer/compose.yml": SICK, ".devcontainer/web.Dockerfile": `FROM ${BASE_IMAGE}\nUSER 65534:65534\n` });
  }, 600_000);
  afterAll(() => {
    f?.sbx(["rm", "--force", "cmp"], { cwd: repo });
    for (const r of [repo, sick]) if (r) rmSync(r, { recursive: true, force: true });
    releaseFixture();
  }, 120_000);

  const inSandbox = (argv: string[]) => f.sbx(["exec", "cmp", "--", ...argv], { cwd: repo });

  test("the sandbox is the compose file's app (built from the repo's Dockerfile); db and web run beside it, healthy; what sbx does not honour was listed", () => {
    expect(created.stderr).toMatch(/services\.db: ignored restart, ports/);
    expect(created.stderr).toMatch(/services\.app \(the sandbox itself\): ignored volumes, command, network_mode/);
    expect(created.stderr).toMatch(/FROM_HOST.*\$\{SBXT_HOST_ONLY\} is empty/);
    const list = JSON.parse(f.sbx(["services", "cmp", "--json"], { cwd: repo }).stdout);
    expect(list).toEqual([
      { name: "db", image: SERVER, state: "running", health: "healthy", exitCode: 0 },
      { name: "web", image: expect.stringMatching(/^sbx-compose-\d+-svc:[0-9a-f]{64}$/), state: "running", health: "healthy", exitCode: 0 },
    ]);
  }, 60_000);

  test("the sandbox reaches both on 127.0.0.1: psql makes a table and reads it back; web answers with the variable the file wrote, and nothing of the host's or the sandbox's", () => {
    const made = inSandbox([...PSQL, "-c", "CREATE TABLE t (x int); INSERT INTO t VALUES (40), (2);"]);
    expect({ code: made.code, err: made.stderr }).toEqual({ code: 0, err: "" });
    expect(inSandbox([...PSQL, "-c", "SELECT sum(x) FROM t"]).stdout.trim()).toBe("42");
    const got = inSandbox(["python3", "-c", "import urllib.request as u; print(u.build_opener(u.ProxyHandler({})).open('http://127.0.0.1:7000/').read().decode())"]);
    expect(got.stdout.trim()).toBe("hello-from-compose|");
    const web = `sbx-${id}-svc-web`;
    const env = f.docker(["inspect", "--format", "{{json .Config.Env}}", web]).stdout;
    expect(env).toContain("GREETING=hello-from-compose");
    expect(env).toContain("FROM_HOST=");
    expect(env).not.toContain("host-value-never-inside");
    // Nothing of the host mounted, whatever the file asked for the sandbox's own service.
    expect(f.docker(["inspect", "--format", "{{json .Mounts}}", web]).stdout).not.toContain('"Type":"bind"');
    expect(f.docker(["inspect", "--format", "{{.HostConfig.NetworkMode}}", `sbx-${id}-svc-db`]).stdout.trim()).toMatch(/^container:/);
  }, 120_000);

  test("web started only once the database was healthy (depends_on: service_healthy)", () => {
    const logs = f.sbx(["services", "cmp", "logs", "web"], { cwd: repo }).stdout;
    expect(logs).toContain("web: serving");
    expect(logs).not.toContain("not up yet");
  }, 30_000);

  test("a service that crashes (its process killed, not by sbx) is said by sbx status and sbx logs", async () => {
    expect(f.docker(["kill", "--signal", "KILL", `sbx-${id}-svc-web`]).code).toBe(0);
    let logs = "";
    for (let i = 0; i < 50 && !/service\.exited/.test(logs); i++) {
      await Bun.sleep(200);
      logs = f.sbx(["logs", "--sandbox", "cmp"], { cwd: repo }).stdout;
    }
    expect(logs).toMatch(/cmp\s+service\s+service\.exited\s+name=cmp service=web exitCode=137/);
    expect(f.sbx(["status"], { cwd: repo }).stdout).toContain("service web of cmp exited (code 137): sbx services cmp logs web");
    // The next command into the sandbox starts it again (after what it depends on).
    expect(inSandbox(["true"]).code).toBe(0);
    expect(JSON.parse(f.sbx(["services", "cmp", "--json"], { cwd: repo }).stdout).map((s: { state: string }) => s.state)).toEqual(["running", "running"]);
  }, 60_000);

  test("a service that fails its healthcheck at create fails the create with its last log lines and leaves nothing: no container, volume, row or new image", () => {
    const images = () => f.docker(["image", "ls", "--quiet", "--filter", "label=sbx.service-image=1"]).stdout.trim().split("\n").sort().join(",");
    const leftover = () => ({
      containers: f.docker(["ps", "--all", "--quiet", "--filter", `label=sbx.repo=${sick}`]).stdout.trim(),
      volumes: f.docker(["volume", "ls", "--quiet", "--filter", `label=sbx.repo=${sick}`]).stdout.trim(),
      rows: (JSON.parse(f.sbx(["list", "--json", "--all"], { cwd: sick }).stdout || "[]") as { name: string }[]).filter((s) => s.name === "ill"),
      imagesOfIt: f.docker(["image", "ls", "--quiet", "--filter", `label=sbx.repo=${sick}`]).stdout.trim(),
    });
    const first = f.sbx(["create", "ill"], { cwd: sick });
    expect(first.code).not.toBe(0);
    expect(first.stderr).toMatch(/service sick of sandbox ill \(sbx-sick-\d+-svc:[0-9a-f]+\) failed its healthcheck; its last log lines:/);
    expect(first.stderr).toContain("sick-service-marker");
    expect(leftover()).toEqual({ containers: "", volumes: "", rows: [], imagesOfIt: "" });
    // Built once, kept as the content-addressed cache sandbox images are: a second failure adds nothing.
    const after = images();
    expect(f.sbx(["create", "ill"], { cwd: sick }).code).not.toBe(0);
    expect(images()).toBe(after);
    expect(leftover()).toEqual({ containers: "", volumes: "", rows: [], imagesOfIt: "" });
  }, 240_000);

  test("a compose file that asks for a privilege is refused with its reason before anything is made", () => {
    const bad = ownRepo(f.user, `priv-${process.pid}`, `FROM ${CLIENT_BASE}\n`);
    try {
      write(f, bad, {
        ".devcontainer/devcontainer.json": JSON.stringify({ dockerComposeFile: "compose.yml", service: "app" }),
        ".devcontainer/compose.yml": `services:\n  app: { image: ${CLIENT_BASE} }\n  db:\n    image: ${SERVER}\n    privileged: true\n    volumes: ["/var/run/docker.sock:/var/run/docker.sock"]\n`,
      });
      const r = f.sbx(["create", "priv"], { cwd: bad });
      expect(r.code).toBe(78);
      expect(r.stderr).toMatch(/services\.db\.privileged: privileged: every capability and every device of the host/);
      expect(f.docker(["ps", "--all", "--quiet", "--filter", `label=sbx.repo=${bad}`]).stdout.trim()).toBe("");
    } finally {
      rmSync(bad, { recursive: true, force: true });
    }
  }, 60_000);

  test("sbx rm removes the services' containers and volumes (the named one too)", () => {
    expect(f.docker(["volume", "ls", "--quiet", "--filter", `label=sbx.sandbox=${id}`, "--filter", "label=sbx.volume=pgdata"]).stdout.trim()).not.toBe("");
    expect(f.sbx(["rm", "--force", "cmp"], { cwd: repo }).code).toBe(0);
    expect(f.docker(["ps", "--all", "--quiet", "--filter", `label=sbx.sandbox=${id}`]).stdout.trim()).toBe("");
    expect(f.docker(["volume", "ls", "--quiet", "--filter", `label=sbx.sandbox=${id}`]).stdout.trim()).toBe("");
  }, 60_000);
});

describe.skipIf(!canRun)(`a service built from the repo's Dockerfile, with --service-env (Docker)${canRun ? "" : ` — skipped: ${skipReason}`}`, () => {
  let f: Fixture;
  let repo = "";
  beforeAll(() => {
    f = acquireFixture();
    repo = ownRepo(f.user, `flagsvc-${process.pid}`);
    write(f, repo, {
      "docker/echo.Dockerfile": `FROM ${BASE_IMAGE}\nCOPY docker/echo.py /srv/echo.py\nUSER 65534:65534\nCMD ["python3", "/srv/echo.py"]\n`,
      "docker/echo.py": `import os, http.server\nclass H(http.server.BaseHTTPRequestHandler):\n    def do_GET(self):\n        self.send_response(200); self.end_headers(); self.wfile.write(os.environ.get("WORD", "none").encode())\n    def log_message(self, *a): pass\nhttp.server.HTTPServer(("127.0.0.1", 7100), H).serve_forever()\n`,
      "docker/remote.Dockerfile": "FROM sbxt-no-such-base:1\n",
    });
  }, 120_000);
  afterAll(() => {
    f?.sbx(["rm", "--force", "fl"], { cwd: repo });
    if (repo) rmSync(repo, { recursive: true, force: true });
    releaseFixture();
  }, 120_000);

  test("--service echo=./docker/echo.Dockerfile is built from the repo's last commit (labelled a service image) and gets --service-env's variable", async () => {
    const r = f.sbx(["create", "fl", "--service", "echo=./docker/echo.Dockerfile", "--service-env", "echo:WORD=from-flag"], { cwd: repo, env: { WORD: "host-word" } });
    expect({ code: r.code, err: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, err: "" });
    let got = "";
    for (let i = 0; i < 30 && got !== "from-flag"; i++) {
      got = f.sbx(["exec", "fl", "--", "python3", "-c", "import urllib.request as u; print(u.build_opener(u.ProxyHandler({})).open('http://127.0.0.1:7100/').read().decode())"], { cwd: repo }).stdout.trim();
      if (got !== "from-flag") await Bun.sleep(300);
    }
    expect(got).toBe("from-flag");
    const image = JSON.parse(f.sbx(["services", "fl", "--json"], { cwd: repo }).stdout)[0].image as string;
    expect(image).toMatch(/^sbx-flagsvc-\d+-svc:[0-9a-f]{64}$/);
    expect(f.docker(["image", "inspect", "--format", '{{index .Config.Labels "sbx.service-image"}}', image]).stdout.trim()).toBe("1");
  }, 240_000);

  test("a Dockerfile whose base is not on this machine is refused before the build, naming --pull; nothing is made", () => {
    const r = f.sbx(["create", "rem", "--service", "x=./docker/remote.Dockerfile"], { cwd: repo });
    expect(r.code).toBe(78);
    expect(r.stderr).toMatch(/sbxt-no-such-base:1 is not on this machine \(sbx builds services from local images only\)/);
    expect(r.stderr).toMatch(/--pull/);
    expect(f.docker(["ps", "--all", "--quiet", "--filter", `label=sbx.repo=${repo}`, "--filter", "label=sbx.name=rem"]).stdout.trim()).toBe("");
  }, 120_000);
});
