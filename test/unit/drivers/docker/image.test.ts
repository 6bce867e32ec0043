// Image tags: a content hash of the Dockerfile, the build args and (with COPY/ADD) the context; missing Dockerfile names `sbx init`.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DockerEngine } from "../../../../src/drivers/docker/engine-client";
import { buildArgsFor, buildEnv, dockerBuildArgs, ensureImage, imageRepoName, imageTag, planImage, usesContext } from "../../../../src/drivers/docker/image";
import { createExec } from "../../../../src/sys/exec";
import { FakeExec } from "../../../fakes/exec";
import { FakeDockerEngine } from "../../../fakes/docker-engine";
import { SbxError } from "../../../../src/core/errors";

const user = { name: "ann", uid: 1000, gid: 1000, home: "/home/ann", shell: "/bin/bash" };
const args = buildArgsFor(user);
const tmp = mkdtempSync(join(tmpdir(), "sbx-image-test-"));
/** Host git for the plans (a repo here without commits: its context is the empty tree). */
const git = createExec(process.env as Record<string, string>);
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("imageTag", () => {
  test("is sbx-<repo-dir>:<64 hex> and stable", () => {
    const t = imageTag("/src/My App", "FROM x\n", args);
    expect(t).toMatch(/^sbx-my-app:[0-9a-f]{64}$/);
    expect(imageTag("/src/My App", "FROM x\n", args)).toBe(t);
  });

  test("changes with the Dockerfile, any build arg, and the context hash", () => {
    const t = imageTag("/r", "FROM x\n", args);
    expect(imageTag("/r", "FROM y\n", args)).not.toBe(t);
    expect(imageTag("/r", "FROM x\n", { ...args, USER_UID: "1001" })).not.toBe(t);
    expect(imageTag("/r", "FROM x\n", { ...args, USER_HOME: "/home/bob" })).not.toBe(t);
    expect(imageTag("/r", "FROM x\n", args, "c1")).not.toBe(imageTag("/r", "FROM x\n", args, "c2"));
  });

  test("build arg order does not matter", () => {
    const rev = Object.fromEntries(Object.entries(args).reverse());
    expect(imageTag("/r", "FROM x", rev)).toBe(imageTag("/r", "FROM x", args));
  });

  test("repo names are made valid for docker", () => {
    expect(imageRepoName("/x/Foo_Bar.baz")).toBe("sbx-foo_bar.baz");
    expect(imageRepoName("/x/--")).toBe("sbx-repo");
    expect(imageRepoName("/x/a  b")).toBe("sbx-a-b");
  });
});

describe("usesContext", () => {
  test.each([
    ["FROM x\nRUN true\n", false],
    ["FROM x\nCOPY . /src\n", true],
    ["FROM x\n  add foo.tar /\n", true],
    ["FROM x AS b\nFROM y\nCOPY --from=b /a /a\n", false],
    ["FROM x\nCOPY \\\n  a /a\n", true],
    ["FROM x\n# COPY is mentioned in a comment\n", false],
  ])("%j → %p", (df, want) => expect(usesContext(df)).toBe(want));
});

test("a repo without a Dockerfile gets a config error that names sbx init", async () => {
  const d = join(tmp, "nodf");
  mkdirSync(d, { recursive: true });
  const err = (await planImage(git, d, user).catch((e: unknown) => e)) as { code: string; hint: string; exitCode: number } | undefined;
  expect(err?.code).toBe("config");
  expect(err?.exitCode).toBe(78);
  expect(err?.hint).toContain("sbx init");
});

test("an existing tag is not rebuilt", async () => {
  const d = join(tmp, "hasdf");
  mkdirSync(d, { recursive: true });
  writeFileSync(join(d, "Dockerfile"), "FROM sbx-base:bookworm\n");
  const plan = await planImage(git, d, user);
  expect(plan.context).toBeNull();
  const exec = new FakeExec().expect(["docker", "image", "inspect", "--format", "{{.Id}}", plan.tag], { stdout: "sha256:1" });
  expect(await ensureImage(new DockerEngine(exec, undefined), exec, d, user)).toEqual({ tag: plan.tag, built: false, notes: [] });
  exec.assertDone();
});

test("docker build argv passes the four build args and the tag; the context is the tar on stdin, the Dockerfile in it", () => {
  const argv = dockerBuildArgs({ tag: "sbx-r:1", dockerfile: "", dockerfilePath: "/r/Dockerfile", buildArgs: args, context: null }, "docker/Dockerfile");
  expect(argv).toEqual([
    "docker", "build", "--force-rm", "--tag", "sbx-r:1",
    "--build-arg", "USER_GID=1000", "--build-arg", "USER_HOME=/home/ann", "--build-arg", "USER_NAME=ann", "--build-arg", "USER_UID=1000",
    "--label", "sbx.image=1", "--file", "docker/Dockerfile", "-",
  ]);
});

describe("a build that fails", () => {
  test("says which step, shows its last 40 lines, and names the whole log (written as it came)", async () => {
    const d = join(tmp, "failing");
    mkdirSync(d, { recursive: true });
    writeFileSync(join(d, "Dockerfile"), "FROM sbx-base:bookworm\nRUN make\n");
    const engine = new FakeDockerEngine(["sbx-base:bookworm"]);
    const noise = Array.from({ length: 60 }, (_, i) => `compiler line ${i}`).join("\n");
    engine.failBuild = { code: 1, output: `Step 1/2 : FROM sbx-base:bookworm\n ---> abc\nStep 2/2 : RUN make\n${noise}\nmake: *** [all] Error 2\n` };
    const logFile = join(tmp, "logs", "builds", "failing.log");
    const seen: string[] = [];
    const e = (await ensureImage(engine, git, d, user, { logFile, onProgress: (s) => seen.push(s) }).catch((x: unknown) => x)) as SbxError;
    expect(e).toBeInstanceOf(SbxError);
    const [first, ...rest] = e.message.split("\n");
    expect(first).toMatch(/^docker build of sbx-failing:[0-9a-f]{64} failed \(exit 1\) at step 2\/2 \(RUN make\); its last 40 lines:$/);
    expect(rest).toHaveLength(40);
    expect(rest.at(-1)).toBe("  make: *** [all] Error 2");
    expect(rest[0]).toBe("  compiler line 21");
    expect(e.hint).toBe(`Fix the Dockerfile, then run the command again. The whole log: ${logFile}`);
    expect(e.data).toMatchObject({ step: { n: 2, of: 2, text: "RUN make" }, exitCode: 1, log: logFile });
    expect(readFileSync(logFile, "utf8")).toBe(engine.failBuild.output);
    expect(seen.join("")).toBe(engine.failBuild.output);
  });
});

describe("a build whose context is the repo waits for the create's own writes into .git", () => {
  test("the engine is asked to build only once beforeBuild settled; a build with no context does not wait", async () => {
    const withCopy = join(tmp, "copying");
    mkdirSync(withCopy, { recursive: true });
    writeFileSync(join(withCopy, "Dockerfile"), "FROM sbx-base:bookworm\nCOPY . /src\n");
    const engine = new FakeDockerEngine(["sbx-base:bookworm"]);
    const order: string[] = [];
    let release!: () => void;
    const quiet = new Promise<void>((r) => (release = r));
    const building = ensureImage(engine, git, withCopy, user, { beforeBuild: () => (order.push("waiting"), quiet.then(() => order.push("quiet"))) });
    await Bun.sleep(20);
    expect(engine.mutations.filter((m) => m.startsWith("build"))).toEqual([]); // not yet: the store is still being made
    release();
    await building;
    expect(order).toEqual(["waiting", "quiet"]);
    expect(engine.mutations.filter((m) => m.startsWith("build"))).toHaveLength(1);

    const plain = join(tmp, "plain-nocopy");
    mkdirSync(plain, { recursive: true });
    writeFileSync(join(plain, "Dockerfile"), "FROM sbx-base:bookworm\nRUN true\n");
    let waited = false;
    await ensureImage(engine, git, plain, user, { beforeBuild: () => ((waited = true), new Promise(() => {})) });
    expect(waited).toBe(false); // its context is the Dockerfile alone: nothing of the repo is read
  });
});

test("build-proxy: the parent proxy's predefined args follow the plan's, never override them, and leave the tag alone", () => {
  const plan = { tag: "sbx-r:1", dockerfile: "", dockerfilePath: "/r/Dockerfile", buildArgs: { ...args, HTTPS_PROXY: "http://repo.own:1" }, context: null };
  const proxy = { HTTPS_PROXY: "http://sbx:pw@172.17.0.1:4000", https_proxy: "http://sbx:pw@172.17.0.1:4000", NO_PROXY: ".corp" };
  const argv = dockerBuildArgs(plan, "Dockerfile", proxy);
  // Named without their values: the CLI takes each from its environment, so a relay password is in no argv (`ps`).
  expect(argv.filter((a, i) => argv[i - 1] === "--build-arg")).toEqual([
    "HTTPS_PROXY=http://repo.own:1", "USER_GID=1000", "USER_HOME=/home/ann", "USER_NAME=ann", "USER_UID=1000",
    "NO_PROXY", "https_proxy",
  ]);
  expect(argv.join(" ")).not.toContain("sbx:pw");
  expect(buildEnv(plan, proxy)).toEqual({ https_proxy: "http://sbx:pw@172.17.0.1:4000", NO_PROXY: ".corp" });
});

describe("parent-proxy-scope: an image build's proxy lease", () => {
  const lease = (log: string[], args: Record<string, string>) => async () => {
    log.push("lease");
    return { args, notes: ["a note"], release: async () => void log.push("release") };
  };
  const repoWith = (name: string, dockerfile: string) => {
    const r = join(tmp, name);
    mkdirSync(r, { recursive: true });
    writeFileSync(join(r, "Dockerfile"), dockerfile);
    return r;
  };

  test("taken just for the build: its values in the CLI's environment, never its argv; released after; its notes said", async () => {
    const engine = new FakeDockerEngine();
    engine.images.set("sbx-base:bookworm", {});
    const log: string[] = [];
    const argvs: string[][] = [];
    const build = engine.build.bind(engine);
    engine.build = (argv, out, ctx, env) => (argvs.push(argv), log.push("build"), build(argv, out, ctx, env));
    const r = repoWith("lease-ok", "FROM sbx-base:bookworm\nRUN true\n");
    const img = await ensureImage(engine, git, r, user, { proxy: lease(log, { HTTPS_PROXY: "http://sbx:one-build-pw@172.17.0.1:4000" }) });
    expect(log).toEqual(["lease", "build", "release"]);
    expect(engine.builtEnvs.at(-1)).toEqual({ HTTPS_PROXY: "http://sbx:one-build-pw@172.17.0.1:4000" });
    expect(argvs.at(-1)!.join(" ")).not.toContain("one-build-pw");
    expect(img.notes).toContain("a note");
    // The image is there now: no build, no lease.
    await ensureImage(engine, git, r, user, { proxy: lease(log, {}) });
    expect(log).toEqual(["lease", "build", "release"]);
  });

  test("released when the build fails, and when the engine throws", async () => {
    const engine = new FakeDockerEngine();
    engine.images.set("sbx-base:bookworm", {});
    engine.failBuild = { code: 1, output: "Step 2/2 : RUN false\n" };
    const log: string[] = [];
    const r = repoWith("lease-fail", "FROM sbx-base:bookworm\nRUN false\n");
    await expect(ensureImage(engine, git, r, user, { proxy: lease(log, {}) })).rejects.toThrow(/docker build/);
    expect(log).toEqual(["lease", "release"]);
    engine.failBuild = null;
    engine.build = () => Promise.reject(new Error("engine gone"));
    await expect(ensureImage(engine, git, r, user, { proxy: lease(log, {}) })).rejects.toThrow(/engine gone/);
    expect(log).toEqual(["lease", "release", "lease", "release"]);
  });
});
