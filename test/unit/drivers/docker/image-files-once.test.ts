// same-identity: every new container's /etc/passwd and /etc/group know the host user, made from its image's own files.
// Those are read once per image id (a hash of the image's content): the engine's archive read of a created container
// mounts its whole file system. An image whose files differ is another id, and is read again.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SandboxSpec } from "../../../../src/core/spec";
import { defaultRuntime, DockerBackend } from "../../../../src/drivers/docker/docker";
import { sandboxId } from "../../../../src/drivers/identity";
import { tarText } from "../../../support/tar-read";
import { sandboxSockets, type Paths } from "../../../../src/sys/paths";
import { FakeExec } from "../../../fakes/exec";
import { FakeDockerEngine } from "../../../fakes/docker-engine";

const IMAGE = "sbx-base:bookworm";
const root = mkdtempSync(join(tmpdir(), "sbx-image-files-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const engine = new FakeDockerEngine([IMAGE]);
const backend = new DockerBackend(new FakeExec(), { sandboxRoot: join(root, "sandboxes"), engine, runtime: defaultRuntime() });
const home = join(root, "home");
mkdirSync(home, { recursive: true });

function spec(name: string): SandboxSpec {
  const id = sandboxId(join(root, "sandboxes"), "/repo", name);
  const dir = join(root, "sandboxes", name);
  mkdirSync(join(dir, "clone"), { recursive: true });
  return {
    id,
    name,
    repo: join(root, "repo"),
    dir,
    hostUser: { name: "ann", uid: 1234, gid: 1234, home, shell: "/bin/bash" },
    sockets: sandboxSockets({ runtimeDir: join(root, "rt") } as Paths, id),
    env: {},
    overlays: [],
    options: { driver: "docker", claudeAuth: "overlay", image: IMAGE },
  };
}

/** The /etc/passwd the seed of sandbox `s` wrote into its container. */
function seededPasswd(s: SandboxSpec): string {
  return tarText(engine.containers.get(`sbx-${s.id}`)!.archives[0]!, "etc/passwd") ?? "";
}

describe("same-identity: the image's passwd and group, read once per image", () => {
  test("two sandboxes of one image: read once; each seed knows the host user on top of the image's own lines", async () => {
    engine.imageFiles.set("/etc/passwd", "root:x:0:0:root:/root:/bin/bash\nimageuser:x:900:900::/home/i:/bin/sh\n");
    await backend.apply(spec("one"));
    await backend.apply(spec("two"));
    expect(engine.archiveReads.filter((p) => p === "/etc/passwd")).toHaveLength(1);
    expect(engine.archiveReads.filter((p) => p === "/etc/group")).toHaveLength(1);
    for (const n of ["one", "two"]) {
      const p = seededPasswd(spec(n));
      expect(p).toContain("imageuser:x:900:900");
      expect(p).toMatch(/^ann:x:1234:1234:/m);
    }
  });

  test("an image whose passwd differs (a rebuilt one: another id) is read again, and its own lines are kept", async () => {
    engine.imageFiles.set("/etc/passwd", "root:x:0:0:root:/root:/bin/bash\nrebuilt:x:901:901::/home/r:/bin/sh\n");
    await backend.apply(spec("three"));
    expect(engine.archiveReads.filter((p) => p === "/etc/passwd")).toHaveLength(2);
    const p = seededPasswd(spec("three"));
    expect(p).toContain("rebuilt:x:901:901");
    expect(p).not.toContain("imageuser");
    expect(p).toMatch(/^ann:x:1234:1234:/m);
  });
});
