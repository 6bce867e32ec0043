// package-mirrors, cargo's part in a Docker sandbox: cargo reads a mirror of crates.io from a config file only, so a new
// container's home gets the host's (mirror keys only) at ~/.cargo/config.toml in the seed, through the same door as the
// rest of the seed; an image that has its own keeps it (said). The identity's mirrors become the spec's home file.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { mirrorDelivery, type Mirrors } from "../../../../src/core/mirrors";
import type { SandboxSpec } from "../../../../src/core/spec";
import { rootLabel } from "../../../../src/drivers/docker/args";
import { DockerBackend } from "../../../../src/drivers/docker/docker";
import { tarArchive } from "../../../../src/core/tar";
import { sandboxLayout } from "../../../../src/workspace/layout";
import { FakeExec } from "../../../fakes/exec";

const tmp = mkdtempSync(join(tmpdir(), "sbx-cargo-seed-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const ROOT = join(tmp, "cache", "sandbox");

const MIRRORS: Mirrors = {
  settings: [
    { tool: "cargo", key: "source.corp.registry", value: "sparse+https://cargo.corp.example/index/", from: "~/.cargo/config.toml", via: "cargo", hosts: ["cargo.corp.example"], replaces: true },
    { tool: "cargo", key: "source.crates-io.replace-with", value: "corp", from: "~/.cargo/config.toml", via: "cargo", hosts: [], replaces: false },
  ],
};
const TOML = mirrorDelivery(MIRRORS).cargoToml!;

let n = 0;
function sandbox(): SandboxSpec {
  const dir = join(ROOT, "app-ff", `demo${n++}`);
  mkdirSync(sandboxLayout(dir).clone, { recursive: true });
  return {
    id: "abc123def456",
    name: "demo",
    repo: "/home/ann/src/app",
    dir,
    hostUser: { name: "ann", uid: 1000, gid: 1000, home: "/home/ann", shell: "/bin/bash" },
    sockets: { dir: join(tmp, "rt", `sb${n}`), proxy: "/p", bridge: "/b" },
    env: {},
    overlays: [],
    options: { driver: "docker", claudeAuth: "overlay", image: "sbx-app:1", homeFiles: [{ path: ".cargo/config.toml", text: TOML }] },
  };
}

const backend = (exec: FakeExec) => new DockerBackend(exec, { sandboxRoot: ROOT, runtime: { bun: "/usr/bin/bun", shims: "/opt/sbx/shims" }, readyTimeoutMs: 2000 });
const isInspect = (a: readonly string[]) => a[1] === "inspect" && a.at(-1) === "sbx-abc123def456";
const isCreate = (a: readonly string[]) => a[0] === "docker" && a[1] === "create";
const isSeed = (a: readonly string[]) => a.join(" ") === "docker cp - sbx-abc123def456:/";
const isRead = (what: RegExp) => (a: readonly string[]) => a[1] === "cp" && what.test(a[2] ?? "") && a[3] === "-";
const oneFile = (name: string, text: string) => ({ stdout: new TextDecoder().decode(tarArchive([{ path: name, type: "file", mode: 0o644, uid: 0, gid: 0, content: new TextEncoder().encode(text) }])) });
const imageEtc = (a: readonly string[]) => oneFile(a[2]!.split("/").pop()!, a[2]!.endsWith("passwd") ? "root:x:0:0:root:/root:/bin/bash\n" : "root:x:0:\n");
const missing = { exitCode: 1, stderr: "Error: Could not find the file /home/ann/.cargo/config.toml in container sbx-abc123def456\n" };

describe("package-mirrors: cargo's mirror in a new container's home", () => {
  test("an image without ~/.cargo/config.toml: the seed writes it, owned by the user, the mirror keys alone", async () => {
    const spec = sandbox();
    const exec = new FakeExec()
      .expect(isInspect, { exitCode: 1, stderr: "Error: No such container: sbx-abc123def456\n" })
      .expect(isCreate)
      .expect(isRead(/:\/etc\/(passwd|group)$/), imageEtc, 2)
      .expect(isRead(/:\/home\/ann\/\.cargo\/config\.toml$/), missing)
      .expect(isSeed);
    await backend(exec).prepare(spec);
    exec.assertDone();
    const tar = new TextDecoder().decode(exec.calls.find((c) => isSeed(c.argv))!.opts.stdin as Uint8Array);
    expect(tar).toContain("home/ann/.cargo/config.toml");
    expect(tar).toContain('[source.crates-io]\nreplace-with = "corp"');
    expect(tar).toContain('registry = "sparse+https://cargo.corp.example/index/"');
  });

  test("an image with its own ~/.cargo/config.toml keeps it; the note says the mirror was not written", async () => {
    const spec = sandbox();
    const exec = new FakeExec()
      .expect(isInspect, { exitCode: 1, stderr: "Error: No such container: sbx-abc123def456\n" })
      .expect(isCreate)
      .expect(isRead(/:\/etc\/(passwd|group)$/), imageEtc, 2)
      .expect(isRead(/:\/home\/ann\/\.cargo\/config\.toml$/), oneFile("config.toml", "[net]\ngit-fetch-with-cli = true\n"))
      .expect(isSeed);
    const b = backend(exec);
    await b.prepare(spec);
    exec.assertDone();
    const tar = new TextDecoder().decode(exec.calls.find((c) => isSeed(c.argv))!.opts.stdin as Uint8Array);
    expect(tar).not.toContain(".cargo/config.toml");
    expect(b.takeNotes(spec.id).join("\n")).toContain("the image has its own ~/.cargo/config.toml: the host's package mirror setting for it was not written");
  });

  test("what the seed carries goes through the door: a host secret in the file keeps the whole file out", async () => {
    const spec = sandbox();
    const SECRET = "corp-mirror-key-9f8e7d6c5b";
    const leaky = { ...spec, options: { ...spec.options, homeFiles: [{ path: ".cargo/config.toml", text: `${TOML}# ${SECRET}\n` }] } } as SandboxSpec;
    const exec = new FakeExec()
      .expect(isInspect, { exitCode: 1, stderr: "Error: No such container: sbx-abc123def456\n" })
      .expect(isCreate)
      .expect(isRead(/:\/etc\/(passwd|group)$/), imageEtc, 2)
      .expect(isRead(/:\/home\/ann\/\.cargo\/config\.toml$/), missing)
      .expect(isSeed);
    const b = new DockerBackend(exec, { sandboxRoot: ROOT, runtime: { bun: "/usr/bin/bun", shims: "/opt/sbx/shims" }, hostSecrets: () => ({ CORP_KEY: SECRET }) });
    await b.prepare(leaky);
    const tar = new TextDecoder().decode(exec.calls.find((c) => isSeed(c.argv))!.opts.stdin as Uint8Array);
    expect(tar).not.toContain(SECRET);
    expect(tar).not.toContain("replace-with");
  });
});

// The row's mirrors reach the spec as the home file: the driver's spec of a stored identity.
test("package-mirrors: a Docker sandbox's stored mirrors become its spec's ~/.cargo/config.toml", async () => {
  const { DockerDriver } = await import("../../../../src/drivers/docker/driver");
  const { readEnv } = await import("../../../../src/sys/env");
  const { pathsFor } = await import("../../../../src/sys/paths");
  const env = readEnv({ vars: { HOME: join(tmp, "home"), XDG_RUNTIME_DIR: join(tmp, "rt"), USER: "ann" }, uid: 1000, gid: 1000, platform: "linux" });
  const d = new DockerDriver({ exec: new FakeExec(), env, paths: pathsFor(env), checkEngine: async () => {} });
  const row = { id: 1, name: "demo", repo: "/r", backend: "docker", state: "active", identity: { id: "abc", dir: "/d", mirrors: MIRRORS } } as never;
  expect((d.spec(row).options as { homeFiles?: unknown }).homeFiles).toEqual([{ path: ".cargo/config.toml", text: TOML }]);
});
