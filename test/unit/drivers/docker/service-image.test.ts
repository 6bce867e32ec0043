// service-image-local: a service built from a Dockerfile is built from local images only, as a sandbox's named image is
// used: a base the engine lacks (which the builder would fetch from a registry) is refused before the build, unless
// --pull; its image runs as its own user (no USER_* build args), tagged and labelled apart from sandbox images.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { dockerfileBases } from "../../../../src/core/dockerfile-bases";
import { SbxError } from "../../../../src/core/errors";
import { ensureImage } from "../../../../src/drivers/docker/image";
import { serviceImage } from "../../../../src/drivers/docker/service-images";
import { createExec } from "../../../../src/sys/exec";
import { FakeDockerEngine } from "../../../fakes/docker-engine";

const tmp = realpathSync(mkdtempSync(join(tmpdir(), "sbx-svcimg-")));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const user = { name: "ann", uid: 1000, gid: 1000, home: "/home/ann", shell: "/bin/bash" };
const git = createExec(process.env as Record<string, string>);
let n = 0;

function repoWith(dockerfile: string): { repo: string; file: string } {
  const repo = join(tmp, `r${n++}`);
  mkdirSync(join(repo, "docker"), { recursive: true });
  writeFileSync(join(repo, "docker", "redis.Dockerfile"), dockerfile);
  return { repo, file: join(repo, "docker", "redis.Dockerfile") };
}

const build = (engine: FakeDockerEngine, r: { repo: string; file: string }, pull = false) =>
  ensureImage(engine, git, r.repo, user, { purpose: "service", pull, source: { kind: "dockerfile", dockerfile: r.file, context: r.repo, from: "flags" } });

describe("service-image-local: a service's Dockerfile builds from local images only", () => {
  test("a base the engine lacks is refused before the build (the builder would have fetched it), naming it and --pull", async () => {
    const engine = new FakeDockerEngine(["sbx-base:bookworm"]);
    const e = (await build(engine, repoWith("FROM redis:7-alpine\nRUN true\n")).catch((x: unknown) => x)) as SbxError;
    expect(e).toBeInstanceOf(SbxError);
    expect(e.message).toMatch(/redis:7-alpine is not on this machine \(sbx builds services from local images only\)/);
    expect(e.hint).toMatch(/--pull/);
    expect(engine.mutations).toEqual([]); // nothing built, nothing fetched
  });

  test("every way a Dockerfile names a base is seen: ARG defaults, build args, stages, COPY --from, RUN --mount from=, --platform", () => {
    const text = `# syntax=docker/dockerfile:1
ARG BASE=debian:bookworm
ARG TAG
FROM --platform=$BUILDPLATFORM \${BASE} AS build
FROM build AS second
COPY --from=build /a /b
COPY --from=busybox:1 /bin/sh /sh
RUN --mount=type=cache,from=golang:1.22,target=/x true
FROM scratch
COPY --from=0 /a /a
FROM alpine:\${TAG}
`;
    expect(dockerfileBases(text)).toEqual({ images: ["debian:bookworm", "busybox:1", "golang:1.22"], unresolved: ["FROM alpine:${TAG}"] });
    expect(dockerfileBases(text, { TAG: "3.20", BASE: "mine:1" }).images).toEqual(["mine:1", "busybox:1", "golang:1.22", "alpine:3.20"]);
    // A continued line and the backtick escape directive.
    expect(dockerfileBases("FROM \\\n  pg:16\n").images).toEqual(["pg:16"]);
    expect(dockerfileBases("# escape=`\nFROM `\n  pg:16\n").images).toEqual(["pg:16"]);
  });

  test("a FROM whose image cannot be known before the build (an ARG with no value) is refused too", async () => {
    const engine = new FakeDockerEngine(["sbx-base:bookworm"]);
    const e = (await build(engine, repoWith("ARG IMG\nFROM $IMG\n")).catch((x: unknown) => x)) as SbxError;
    expect(e.message).toMatch(/FROM \$IMG names a build arg with no value/);
    expect(engine.mutations).toEqual([]);
  });

  test("local bases: built, tagged sbx-<repo>-svc, labelled as a service image, no USER_* build args, no --pull", async () => {
    const engine = new FakeDockerEngine(["sbx-base:bookworm"]);
    const r = repoWith("FROM sbx-base:bookworm\nUSER 65534\n");
    const img = await build(engine, r);
    expect(img.tag).toMatch(/^sbx-r\d+-svc:[0-9a-f]{64}$/);
    expect(engine.mutations).toEqual([`build ${img.tag}`]);
    expect(engine.images.get(img.tag)).toEqual({ "sbx.service-image": "1" });
    // A second create finds it and builds nothing.
    expect((await build(engine, r)).built).toBe(false);
  });

  test("--pull: the build may fetch its bases (and is asked to), and only then", async () => {
    const engine = new FakeDockerEngine([]);
    const img = await build(engine, repoWith("FROM redis:7-alpine\n"), true);
    expect(engine.mutations).toEqual(["pull redis:7-alpine", `build ${img.tag}`]);
  });
});

describe("parent-proxy-scope: a service's build gets the parent proxy as a sandbox's does", () => {
  test("one lease per build, taken when it runs: its values in the CLI's environment (never the argv), released after", async () => {
    const engine = new FakeDockerEngine(["sbx-base:bookworm"]);
    const r = repoWith("FROM sbx-base:bookworm\nRUN apt-get install -y redis\n");
    const log: string[] = [];
    const argvs: string[][] = [];
    const inner = engine.build.bind(engine);
    engine.build = (argv, out, ctx, env) => (argvs.push(argv), inner(argv, out, ctx, env));
    const proxy = async () => {
      log.push("lease");
      return { args: { HTTP_PROXY: "http://sbx:svc-build-pw@172.17.0.1:4001", http_proxy: "http://sbx:svc-build-pw@172.17.0.1:4001" }, notes: [], release: async () => void log.push("release") };
    };
    const svc = { name: "cache", build: { dockerfile: r.file, context: r.repo } };
    const tag = await serviceImage({ engine, exec: git, user }, r.repo, svc, { onProgress: () => undefined, logFile: join(tmp, "b.log"), proxy });
    expect(log).toEqual(["lease", "release"]);
    expect(engine.builtEnvs.at(-1)).toEqual({ HTTP_PROXY: "http://sbx:svc-build-pw@172.17.0.1:4001", http_proxy: "http://sbx:svc-build-pw@172.17.0.1:4001" });
    expect(argvs.at(-1)!.join(" ")).not.toContain("svc-build-pw");
    // Built already: found, not built, no lease.
    expect(await serviceImage({ engine, exec: git, user }, r.repo, { ...svc, image: tag }, { onProgress: () => undefined, logFile: join(tmp, "b.log"), proxy })).toBe(tag);
    expect(log).toEqual(["lease", "release"]);
  });
});
