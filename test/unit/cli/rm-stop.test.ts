// sbx rm and sbx stop of several sandboxes, or of every sandbox of this repo: each refused the same way it would be
// alone (unsynced work keeps its sandbox), the rest still done, and the exit status that of the first refusal.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { dockerCliWorld, type DockerCliWorld } from "../../support/docker-cli-world";

let x: DockerCliWorld;
beforeEach(async () => {
  x = await dockerCliWorld();
});
afterEach(async () => {
  await x.close();
});

const names = async (cwd?: string) => (JSON.parse((await x.cli(["list", "--json"], cwd)).stdout) as { name: string }[]).map((s) => s.name).sort();

describe("several at once", () => {
  test("rm a b c removes each; one holding unsynced work is kept, the others go, and the exit is 65", async () => {
    for (const n of ["a", "b", "c"]) expect((await x.cli(["create", n])).code).toBe(0);
    // Work made inside b that exists nowhere else on the host.
    const row = x.daemon.store.findSandbox(x.w.repo, "b")!;
    await x.w.git(join(String(row.identity.dir), "clone"), "commit", "-q", "--allow-empty", "-m", "precious");
    const r = await x.cli(["rm", "a", "b", "c"]);
    expect(r.code).toBe(65);
    expect(r.stdout).toContain("removed a");
    expect(r.stdout).toContain("removed c");
    expect(r.stderr).toContain("precious");
    expect(await names()).toEqual(["b"]);
  });

  test("rm --all removes every sandbox of this repo and none of another's; stop --all stops them", async () => {
    const other = join(x.w.root, "other");
    mkdirSync(other);
    await x.w.git(other, "init", "-q", "-b", "main");
    writeFileSync(join(other, "Dockerfile"), "FROM sbx-base:bookworm\n");
    await x.w.git(other, "add", "Dockerfile");
    await x.w.git(other, "commit", "-q", "-m", "o");
    for (const n of ["a", "b"]) expect((await x.cli(["create", n])).code).toBe(0);
    expect((await x.cli(["create", "keep"], other)).code).toBe(0);
    const s = await x.cli(["stop", "--all"]);
    expect(s.code).toBe(0);
    expect(s.stdout).toContain("stopped a");
    expect(s.stdout).toContain("stopped b");
    expect((await x.cli(["rm", "--all"])).code).toBe(0);
    // list shows every repo's sandboxes: only the other repo's is left.
    expect(await names()).toEqual(["keep"]);
  });

  test("neither names nor --all, or both, is a usage error that changes nothing", async () => {
    expect((await x.cli(["create", "a"])).code).toBe(0);
    for (const argv of [["rm"], ["rm", "--all", "a"], ["stop"], ["stop", "--all", "a"]]) expect((await x.cli(argv)).code).toBe(64);
    expect(await names()).toEqual(["a"]);
  });
});

describe("a container made by an older sbx", () => {
  test("its start warns that it still sees the repo's whole .git, and says how to close that", async () => {
    expect((await x.cli(["create", "old"])).code).toBe(0);
    const row = x.daemon.store.findSandbox(x.w.repo, "old")!;
    expect((await x.cli(["run", "old"])).stderr).not.toContain("older sbx"); // control: a container of this sbx
    expect((await x.cli(["stop", "old"])).code).toBe(0);
    // What a sandbox dir of an older sbx lacks: the mask of the host objects' alternates list.
    rmSync(join(String(row.identity.dir), "etc", "alternates.masked"));
    const r = await x.cli(["run", "old"]);
    expect(r.stderr).toContain("was made by an older sbx and sees your repo's whole .git");
    expect(r.stderr).toContain("sbx rm old && sbx create old");
  });
});
