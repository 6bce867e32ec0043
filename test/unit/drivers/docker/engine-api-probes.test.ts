// The Engine-API shortcuts (GET /info, GET /images/<tag>/json) against a fake engine socket: the same answers as the CLI, and a fall back to the CLI when the API gives no usable answer.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { rootLabel } from "../../../../src/drivers/docker/args";
import { DockerBackend } from "../../../../src/drivers/docker/docker";
import { foundFromApi } from "../../../../src/drivers/docker/engine-client";
import { probeEngineApi, probeEngineFast } from "../../../../src/drivers/docker/engine";
import { imageExists } from "../../../../src/drivers/docker/engine-client";
import { FakeExec } from "../../../fakes/exec";

let dir = "";
let server: ReturnType<typeof Bun.serve> | null = null;
afterEach(() => {
  server?.stop(true);
  server = null;
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function engine(routes: Record<string, () => Response>): string {
  dir = mkdtempSync(join(tmpdir(), "sbx-api-"));
  const socket = join(dir, "engine.sock");
  server = Bun.serve({ unix: socket, fetch: (req) => (routes[decodeURIComponent(new URL(req.url).pathname)] ?? (() => new Response("{}", { status: 404 })))() });
  return socket;
}

describe("engine probe over the API", () => {
  test("GET /info classifies like `docker info`: a rootless engine is refused", async () => {
    const s = engine({ "/info": () => Response.json({ ServerVersion: "20.10", OperatingSystem: "Debian", SecurityOptions: ["name=seccomp", "name=rootless"] }) });
    const p = await probeEngineApi(s);
    expect(p?.ok).toBe(true);
    expect(p?.ok && p.class.kind).toBe("rootless");
  });

  test("no usable answer (HTTP 500, or no socket) → the CLI probe runs instead", async () => {
    const s = engine({ "/info": () => new Response("boom", { status: 500 }) });
    expect(await probeEngineApi(s)).toBeUndefined();
    const exec = new FakeExec().expect(["docker", "info", "--format", "{{json .}}"], { stdout: JSON.stringify({ OperatingSystem: "Debian", SecurityOptions: [] }) });
    const p = await probeEngineFast(exec, s);
    expect(p.ok && p.class.kind).toBe("rootful");
    exec.assertDone();
    expect(await probeEngineApi(join(dir, "missing.sock"))).toBeUndefined();
  });
});

describe("imageExists over the API", () => {
  test("200 → exists, 404 → missing, with no docker CLI process", async () => {
    const s = engine({ "/images/sbx-app:1/json": () => Response.json({ Id: "sha256:1" }) });
    const exec = new FakeExec();
    expect(await imageExists(exec, "sbx-app:1", s)).toBe(true);
    expect(await imageExists(exec, "sbx-app:2", s)).toBe(false);
    expect(exec.calls).toHaveLength(0);
  });
});

describe("found() over the API (create's orphan prune, list, reconcile)", () => {
  const ROOT = "/home/ann/.cache/sandbox";
  const labels = (extra: Record<string, string>) => ({ "sbx.sandbox": "abc123def456", "sbx.dir": "/d/demo", "sbx.repo": "/r", "sbx.name": "demo", "sbx.root": rootLabel(ROOT), ...extra });

  test("containers and volumes of this root come back as the CLI's parse would give them (cleanup helpers left out); no docker process", async () => {
    const s = engine({
      "/containers/json": () => Response.json([
        { Names: ["/sbx-abc123def456"], State: "running", Labels: labels({ "sbx.role": "sandbox" }) },
        { Names: ["/sbx-cleanup-1"], State: "exited", Labels: labels({ "sbx.role": "cleanup" }) },
      ]),
      "/volumes": () => Response.json({ Volumes: [{ Name: "sbx-abc123def456-ov-1", Labels: labels({}) }] }),
    });
    const exec = new FakeExec();
    const b = new DockerBackend(exec, { sandboxRoot: ROOT, apiSocket: s, runtime: { bun: "/usr/bin/bun", shims: "/opt/sbx/shims" } });
    const found = await b.found();
    expect(found).toEqual([
      { kind: "container", name: "sbx-abc123def456", sandbox: "abc123def456", dir: "/d/demo", repo: "/r", id: "demo", state: "running", role: "sandbox" },
      { kind: "volume", name: "sbx-abc123def456-ov-1", sandbox: "abc123def456", dir: "/d/demo", repo: "/r", id: "demo", state: "" },
    ]);
    expect(exec.calls).toHaveLength(0);
  });

  test("an answer of the wrong shape, or an engine error, falls back to the CLI", async () => {
    expect(foundFromApi({ nope: 1 }, { Volumes: [] })).toBeUndefined();
    expect(foundFromApi([{ Names: "x", State: "running" }], { Volumes: [] })).toBeUndefined();
    expect(foundFromApi([], { Volumes: null })).toEqual([]);
    const s = engine({ "/containers/json": () => new Response("boom", { status: 500 }), "/volumes": () => Response.json({ Volumes: [] }) });
    const exec = new FakeExec()
      .expect((a) => a[1] === "ps", { stdout: "" })
      .expect((a) => a[1] === "volume" && a[2] === "ls", { stdout: "" });
    const b = new DockerBackend(exec, { sandboxRoot: ROOT, apiSocket: s, runtime: { bun: "/usr/bin/bun", shims: "/opt/sbx/shims" } });
    expect(await b.found()).toEqual([]);
    exec.assertDone();
  });
});
