// sbx list through the daemon's routes (served in this process), Docker on the in-memory engine: a sandbox whose state
// cannot be read because the engine does not answer is listed as unknown, with the reason, and the exit status is 69.
// It is never shown as absent (which would invite a user, or a script, to make it again over the running one).
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { SANDBOX_STATES } from "../../../src/core/sandbox-state";
import { dockerCliWorld, type DockerCliWorld } from "../../support/docker-cli-world";

let x: DockerCliWorld;
beforeEach(async () => {
  x = await dockerCliWorld();
});
afterEach(async () => {
  await x.close();
});
const cli = (argv: string[]) => x.cli(argv);

describe("sbx list", () => {
  test("create streams the image build's steps to the caller as they come; list shows the sandbox running, exit 0", async () => {
    const c = await cli(["create", "demo"]);
    expect(c.code).toBe(0);
    // The daemon built the image; its steps reached this CLI's stderr over the socket (a line each off a terminal).
    expect(c.stderr).toMatch(/^ {2}building the image: step 1\/1: FROM sbx-base$/m);
    expect(c.stderr).not.toContain("Successfully tagged");
    expect(c.stderr).toMatch(/^built image sbx-repo:/m);
    const r = await cli(["list", "--json"]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject([{ name: "demo", backend: "docker", state: "running" }]);
  });

  test("--help names every state word and what it means", async () => {
    const h = await cli(["list", "--help"]);
    for (const w of SANDBOX_STATES) expect(h.stdout).toMatch(new RegExp(`^  ${w} +\\S`, "m"));
  });

  test("create --json says the new sandbox's state in sbx's words and its times in ISO 8601", async () => {
    const c = await cli(["create", "demo", "--json"]);
    expect(c.code).toBe(0);
    const j = JSON.parse(c.stdout) as { name: string; state: string; createdAt: string };
    expect({ name: j.name, state: j.state }).toEqual({ name: "demo", state: "running" });
    expect(j.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  });

  test("times: ISO 8601 (UTC) in --json and off a terminal, relative at one", async () => {
    expect((await cli(["create", "demo"])).code).toBe(0);
    const iso = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;
    const [item] = JSON.parse((await cli(["list", "--json"])).stdout) as { createdAt: string; lastUsedAt: string }[];
    expect(item!.createdAt).toMatch(iso);
    expect(item!.lastUsedAt).toMatch(iso);
    const piped = (await cli(["list"])).stdout.split("\n")[1]!;
    expect(piped).toContain(item!.createdAt);
    const tty = (await x.cli(["list"], undefined, { tty: true })).stdout.split("\n")[1]!;
    expect(tty).toMatch(/ just now +just now /);
    expect(tty).not.toMatch(/\d{4}-\d\d-\d\d/);
  });

  test("the table fits the terminal's width (the repo's path keeps its end); piped, nothing is cut", async () => {
    expect((await cli(["create", "demo"])).code).toBe(0);
    const narrow = await x.cli(["list"], undefined, { tty: true, columns: 70 });
    const lines = narrow.stdout.trimEnd().split("\n");
    for (const l of lines) expect({ l, width: Bun.stringWidth(l) <= 70 }).toEqual({ l, width: true });
    expect(x.w.repo.length).toBeGreaterThan(20);
    const repoCell = /^demo +(…\S+) +running +up +default +just now +just now +- +-$/.exec(lines[1]!)?.[1];
    expect(repoCell).toBeDefined();
    expect(x.w.repo.endsWith(repoCell!.slice(1))).toBe(true);
    expect((await cli(["list"])).stdout).toContain(x.w.repo);
  });

  test("with the engine down: unknown, with the reason, exit 69; never absent", async () => {
    expect((await cli(["create", "demo"])).code).toBe(0);
    x.engine.down = true;
    const j = await cli(["list", "--json"]);
    expect(j.code).toBe(69);
    const [item] = JSON.parse(j.stdout) as { state: string; reason?: string }[];
    expect(item!.state).toBe("unknown");
    expect(item!.reason).toContain("did not answer");
    const t = await cli(["list"]);
    expect(t.code).toBe(69);
    expect(t.stdout).toContain("unknown");
    expect(t.stdout).not.toContain("absent");
    expect(t.stderr).toContain("demo: state unknown: the Docker engine did not answer");
  });

  test("with the engine down, rm refuses and keeps the sandbox (its container may still run)", async () => {
    expect((await cli(["create", "demo"])).code).toBe(0);
    x.engine.down = true;
    const r = await cli(["rm", "--force", "demo"]);
    expect(r.code).toBe(69);
    x.engine.down = false;
    expect(JSON.parse((await cli(["list", "--json"])).stdout)).toMatchObject([{ name: "demo", state: "running" }]);
  });
});
