// no-secret-inside, the image's part: a sandbox's image holds no more of the host than its clone does. A Dockerfile
// that copies the repo in (COPY . /app) is sent what the clone holds (HEAD's tree), never the host's repo dir with
// what lies beside the commits: an ignored `.env`, an untracked key, `.git` (whose config may carry a remote's
// token), caches, another worktree. Hostile: the agent inside reads /app as it likes; whatever the context held is
// there. Built through `sbx create` on the in-memory engine, which receives the context as the docker CLI sends it.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { SbxError } from "../../../../src/core/errors";
import { contextStream, planContext } from "../../../../src/drivers/docker/build-context";
import { ensureImage } from "../../../../src/drivers/docker/image";
import { secretsFile, setSecret } from "../../../../src/secrets/store";
import { tarEntries } from "../../../support/tar-read";
import { dockerCliWorld, type DockerCliWorld } from "../../../support/docker-cli-world";

/** A host secret with no known shape, in the sbx secrets file and in the repo's ignored .env. */
const HOST_SECRET = "correct-horse-battery-staple-42";
const KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----\n";
const REMOTE_TOKEN = "ghp_0123456789abcdefABCDEF0123456789abcd";
const COPY_ALL = "FROM sbx-base:bookworm\nCOPY . /app\n";

let x: DockerCliWorld;
let repo: string;
const put = (rel: string, text: string) => {
  mkdirSync(dirname(join(repo, rel)), { recursive: true });
  writeFileSync(join(repo, rel), text);
};
const commit = async (msg: string) => {
  await x.w.git(repo, "add", "-A");
  await x.w.git(repo, "commit", "-qm", msg);
};

beforeEach(async () => {
  x = await dockerCliWorld();
  repo = x.w.repo;
  setSecret(secretsFile(join(x.w.root, "config", "sbx")), "SERVICE_PASSWORD", HOST_SECRET);
  put("Dockerfile", COPY_ALL);
  put(".gitignore", ".env\n.envrc\nnode_modules/\n.worktrees/\n");
  put("README", "committed\n");
  put("src/main.ts", "export {};\n");
  await commit("copy the repo in");
  // What lies beside the commit in a working repo: none of it is the clone's.
  put(".env", `SERVICE_PASSWORD=${HOST_SECRET}\n`);
  put(".envrc", `export GH_TOKEN=${REMOTE_TOKEN}\n`);
  put("deploy-key.pem", KEY);
  put("node_modules/.cache/blob", `cached ${HOST_SECRET}\n`);
  put(".worktrees/other/notes.txt", "another worktree's work\n");
  await x.w.git(repo, "remote", "add", "origin", `https://me:${REMOTE_TOKEN}@example.invalid/r.git`);
});
afterEach(async () => {
  await x.close();
});

/** The image tag of a sandbox's container, as the engine holds it. */
function imageOf(name: string): string {
  const c = [...x.engine.containers.values()].find((k) => k.labels["sbx.name"] === name);
  if (!c) throw new Error(`no container for ${name}`);
  return c.image;
}

/** What a process inside the container reads at `path` (the engine's archive GET of it), or null. */
async function inside(name: string, path: string): Promise<string | null> {
  const c = [...x.engine.containers.values()].find((k) => k.labels["sbx.name"] === name)!;
  const tar = await x.engine.getArchive(c.name, path);
  if (tar === null) return null;
  return new TextDecoder().decode(tar.subarray(512)).replace(/\0+$/, "");
}

const builds = () => x.engine.mutations.filter((m) => m.startsWith("build ")).length;

describe("no-secret-inside: the image holds no more of the host than the clone", () => {
  test("COPY . /app: the ignored .env, the untracked key, .git, caches and another worktree are not in the image; the commit is", async () => {
    const r = await x.cli(["create", "c"]);
    expect({ code: r.code, err: r.stderr }).toMatchObject({ code: 0 });
    expect(await inside("c", "/app/.env")).toBeNull();
    expect(await inside("c", "/app/.envrc")).toBeNull();
    expect(await inside("c", "/app/deploy-key.pem")).toBeNull();
    expect(await inside("c", "/app/.git/config")).toBeNull();
    expect(await inside("c", "/app/node_modules/.cache/blob")).toBeNull();
    expect(await inside("c", "/app/.worktrees/other/notes.txt")).toBeNull();
    expect(await inside("c", "/app/README")).toBe("committed\n");
    expect(await inside("c", "/app/src/main.ts")).toBe("export {};\n");
    // Nothing of the host beyond the commit reached the engine at all, in any file.
    const sent = x.engine.builtContexts.at(-1)!;
    expect([...sent.keys()].sort()).toEqual([".gitignore", "Dockerfile", "README", "src", "src/main.ts"]);
    for (const text of sent.values()) for (const s of [HOST_SECRET, REMOTE_TOKEN, "PRIVATE KEY"]) expect(text).not.toContain(s);
  }, 30_000);

  test("create says what it left out of the build context and how to put it in", async () => {
    const r = await x.cli(["create", "c"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/build context/);
    expect(r.stderr).toContain("deploy-key.pem");
    expect(r.stderr).toMatch(/commit|--with-changes/);
    for (const s of [HOST_SECRET, REMOTE_TOKEN]) expect(r.stderr + r.stdout).not.toContain(s);
  }, 30_000);

  test("--with-changes: the working tree's changes go in after the copy-in scan; a key is left out and said; ignored files never", async () => {
    put("README", "edited, not committed\n");
    put("notes.txt", "untracked, clean\n");
    const r = await x.cli(["create", "--with-changes", "c"]);
    expect({ code: r.code, err: r.stderr }).toMatchObject({ code: 0 });
    const tag = imageOf("c");
    expect(x.engine.imageFile(tag, "/app/README")).toBe("edited, not committed\n");
    expect(x.engine.imageFile(tag, "/app/notes.txt")).toBe("untracked, clean\n");
    expect(x.engine.imageFile(tag, "/app/deploy-key.pem")).toBeNull();
    expect(x.engine.imageFile(tag, "/app/.env")).toBeNull();
    expect(x.engine.imageFile(tag, "/app/.envrc")).toBeNull();
    expect(r.stderr).toContain("deploy-key.pem");
    expect(r.stderr + r.stdout).not.toContain(HOST_SECRET);
  }, 30_000);

  test("a Dockerfile not committed is sent with the commit; .dockerignore (as committed) is honoured", async () => {
    put(".dockerignore", "docs\n");
    put("docs/internal.md", "left out by .dockerignore\n");
    await commit("dockerignore");
    put("Dockerfile", "FROM sbx-base:bookworm\nCOPY . /app\nCOPY Dockerfile /etc/built-from\n");
    const r = await x.cli(["create", "c"]);
    expect({ code: r.code, err: r.stderr }).toMatchObject({ code: 0 });
    const tag = imageOf("c");
    expect(x.engine.imageFile(tag, "/etc/built-from")).toContain("COPY Dockerfile /etc/built-from");
    expect(x.engine.imageFile(tag, "/app/docs/internal.md")).toBeNull();
    expect(x.engine.imageFile(tag, "/app/README")).toBe("committed\n");
    expect(x.engine.imageFile(tag, "/app/.env")).toBeNull();
  }, 30_000);

  test("the tag follows what is sent: untracked and ignored edits build nothing new, a commit does", async () => {
    expect((await x.cli(["create", "a"])).code).toBe(0);
    expect(builds()).toBe(1);
    put(".env", "SERVICE_PASSWORD=changed\n");
    put("deploy-key.pem", `${KEY}\n`);
    expect((await x.cli(["create", "b"])).code).toBe(0);
    expect(builds()).toBe(1);
    expect(imageOf("b")).toBe(imageOf("a"));
    put("src/main.ts", "export const x = 1;\n");
    await commit("work");
    expect((await x.cli(["create", "c"])).code).toBe(0);
    expect(builds()).toBe(2);
    expect(x.engine.imageFile(imageOf("c"), "/app/src/main.ts")).toBe("export const x = 1;\n");
  }, 30_000);

  test("devcontainer build.context: a subdir is sent as the commit has it, nothing untracked in it", async () => {
    put(".devcontainer/devcontainer.json", JSON.stringify({ build: { dockerfile: "Dockerfile", context: "../svc" } }));
    put(".devcontainer/Dockerfile", "FROM sbx-base:bookworm\nCOPY . /svc\n");
    put("svc/app.py", "print('hi')\n");
    await commit("devcontainer");
    put("svc/.env", `SERVICE_PASSWORD=${HOST_SECRET}\n`);
    put("svc/local.pem", KEY);
    const r = await x.cli(["create", "c"]);
    expect({ code: r.code, err: r.stderr }).toMatchObject({ code: 0 });
    const tag = imageOf("c");
    expect(x.engine.imageFile(tag, "/svc/app.py")).toBe("print('hi')\n");
    expect(x.engine.imageFile(tag, "/svc/.env")).toBeNull();
    expect(x.engine.imageFile(tag, "/svc/local.pem")).toBeNull();
    expect(x.engine.imageFile(tag, "/svc/README")).toBeNull(); // the subdir alone, never the repo above it
  }, 30_000);
});

describe("the build context stream: HEAD's tree as the clone has it, in a tar the engine reads", () => {
  const read = async (plan: Awaited<ReturnType<typeof planContext>>, dockerfile: string) => {
    const failed = { error: null as SbxError | null };
    const s = contextStream(x.w.exec, plan, dockerfile, failed);
    const bytes = new Uint8Array(await new Response(s.stream).arrayBuffer().catch(() => new ArrayBuffer(0)));
    await s.close();
    return { entries: tarEntries(bytes), failed };
  };

  test("links stay links, modes and bytes exact (a 512-byte file, 300 KB of binary, a path past ustar's 100 bytes), a submodule an empty dir", async () => {
    const long = `${"deep/".repeat(25)}file.txt`;
    const bin = new Uint8Array(300_000).map((_, i) => (i * 7) % 256);
    put(long, "long\n");
    put("exact", "x".repeat(512));
    writeFileSync(join(repo, "blob.bin"), bin);
    put("run.sh", "#!/bin/sh\n");
    chmodSync(join(repo, "run.sh"), 0o755);
    symlinkSync("/etc/shadow", join(repo, "link"));
    await commit("shapes");
    await x.w.git(repo, "update-index", "--add", "--cacheinfo", `160000,${await x.w.git(repo, "rev-parse", "HEAD")},vendor/sub`);
    await x.w.git(repo, "commit", "-qm", "a submodule");
    const df = "FROM sbx-base:bookworm\nCOPY . /app\n";
    const { entries, failed } = await read(await planContext(x.w.exec, realpathSync(repo), realpathSync(repo), join(repo, "Dockerfile"), df), df);
    expect(failed.error).toBeNull();
    const at = (p: string) => entries.find((e) => e.path === p);
    expect(new TextDecoder().decode(at(long)!.content)).toBe("long\n");
    expect(at("exact")!.content.length).toBe(512);
    expect(Buffer.compare(Buffer.from(at("blob.bin")!.content), Buffer.from(bin))).toBe(0);
    expect(at("link")).toMatchObject({ type: "symlink", target: "/etc/shadow" });
    expect(at("vendor/sub")).toMatchObject({ type: "dir" });
    expect(at(".env")).toBeUndefined();
    expect(new TextDecoder().decode(at("Dockerfile")!.content)).toBe(df);
  }, 30_000);

  test("3,000 files of varied sizes: every one, bytes exact, however git's answers are cut into chunks", async () => {
    const want = new Map<string, string>();
    for (let i = 0; i < 3000; i++) {
      const text = `${i}:`.repeat((i * 37) % 400);
      want.set(`many/d${i % 17}/f${i}.txt`, text);
      put(`many/d${i % 17}/f${i}.txt`, text);
    }
    await commit("many");
    const { entries, failed } = await read(await planContext(x.w.exec, realpathSync(repo), join(realpathSync(repo), "many"), join(repo, "Dockerfile"), COPY_ALL), COPY_ALL);
    expect(failed.error).toBeNull();
    const files = entries.filter((e) => e.type === "file" && !e.path.startsWith(".dockerfile.") && e.path !== ".dockerignore");
    expect(files.length).toBe(3000);
    const bad = files.filter((e) => want.get(`many/${e.path}`) !== new TextDecoder().decode(e.content)).map((e) => e.path);
    expect(bad).toEqual([]);
  }, 60_000);

  test("a Dockerfile from outside the context goes under its own name, which .dockerignore lists for the engine to drop", async () => {
    put("svc/app.py", "print(1)\n");
    const df = "FROM sbx-base:bookworm\nCOPY . /svc\n";
    put("Dockerfile.svc", df);
    await commit("svc");
    const plan = await planContext(x.w.exec, realpathSync(repo), join(realpathSync(repo), "svc"), join(repo, "Dockerfile.svc"), df);
    expect(plan.outside).toBe(true);
    const { entries } = await read(plan, df);
    expect(entries.map((e) => e.path).sort()).toEqual([".dockerignore", plan.dockerfileAt, "app.py"].sort());
    expect(new TextDecoder().decode(entries.find((e) => e.path === ".dockerignore")!.content)).toBe(`.dockerignore\n${plan.dockerfileAt}\n`);
    // Built: the Dockerfile and .dockerignore do not reach the image.
    const r = await x.cli(["create", "--dockerfile", join(repo, "Dockerfile.svc"), "--context", join(repo, "svc"), "c"]);
    expect({ code: r.code, err: r.stderr }).toMatchObject({ code: 0 });
    expect(x.engine.imageFile(imageOf("c"), "/svc/app.py")).toBe("print(1)\n");
    expect(x.engine.imageFile(imageOf("c"), `/svc/${plan.dockerfileAt}`)).toBeNull();
  }, 30_000);

  test("the hash is the tree's: the same commit the same hash, another commit or a change another; a dir outside the repo is refused", async () => {
    const df = COPY_ALL;
    const plan = () => planContext(x.w.exec, realpathSync(repo), realpathSync(repo), join(repo, "Dockerfile"), df);
    const h1 = (await plan()).hash;
    put("deploy-key.pem", "changed beside the commit\n");
    expect((await plan()).hash).toBe(h1);
    const withChange = await planContext(x.w.exec, realpathSync(repo), realpathSync(repo), join(repo, "Dockerfile"), df, { present: [{ path: "notes.txt", type: "file", mode: 0o644, uid: 0, gid: 0, content: new TextEncoder().encode("n") }] as never, gone: [] });
    expect(withChange.hash).not.toBe(h1);
    put("README", "next\n");
    await commit("next");
    expect((await plan()).hash).not.toBe(h1);
    await expect(planContext(x.w.exec, realpathSync(repo), x.w.root, join(repo, "Dockerfile"), df)).rejects.toThrow(/outside the repo/);
  }, 30_000);

  test("a blob git cannot read fails the build with git's error, never a quiet partial image", async () => {
    const oid = await x.w.git(repo, "rev-parse", "HEAD:README");
    const plan = await planContext(x.w.exec, realpathSync(repo), realpathSync(repo), join(repo, "Dockerfile"), COPY_ALL);
    rmSync(join(repo, ".git", "objects", oid.slice(0, 2), oid.slice(2)));
    const { failed } = await read(plan, COPY_ALL);
    expect(failed.error?.message).toMatch(/build context/);
    // Through the build (the clone of such a repo fails too, so the image is built alone here).
    const e = (await ensureImage(x.engine, x.w.exec, realpathSync(repo), x.w.host).catch((err: unknown) => err)) as SbxError;
    expect(e.message).toMatch(/^the build context could not be read from git: README \(object [0-9a-f]+\) is missing/);
    expect(x.engine.mutations.filter((m) => m.startsWith("build "))).toEqual([]);
  }, 30_000);

  test("host git runs config- and hook-free: the repo's core.fsmonitor and its hooks never run", async () => {
    const marker = join(x.w.root, "ran");
    const script = join(x.w.root, "hook.sh");
    writeFileSync(script, `#!/bin/sh\ntouch ${marker}\n`);
    chmodSync(script, 0o755);
    await x.w.git(repo, "config", "core.fsmonitor", script);
    mkdirSync(join(repo, ".git", "hooks"), { recursive: true });
    writeFileSync(join(repo, ".git", "hooks", "post-index-change"), `#!/bin/sh\ntouch ${marker}\n`);
    chmodSync(join(repo, ".git", "hooks", "post-index-change"), 0o755);
    const r = await x.cli(["create", "--with-changes", "c"]);
    expect({ code: r.code, err: r.stderr }).toMatchObject({ code: 0 });
    expect(existsSync(marker)).toBe(false);
  }, 30_000);
});
