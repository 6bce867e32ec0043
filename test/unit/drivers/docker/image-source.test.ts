// Where a Docker sandbox's image comes from: --image, --dockerfile/--context, the repo's devcontainer.json, or its
// Dockerfile. devcontainer.json is the repo's (so possibly a sandbox's work): its paths stay inside the repo, it never
// carries the host's environment in, and it cannot set sbx's own variables or a credential.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describeSource, planImageSource, repoSource } from "../../../../src/drivers/docker/image-source";
import type { SbxError } from "../../../../src/core/errors";

const tmp = realpathSync(mkdtempSync(join(tmpdir(), "sbx-imgsrc-")));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let n = 0;

/** A repo dir with these files (relative path → content). */
function repo(files: Record<string, string>): string {
  const r = join(tmp, `r${n++}`);
  for (const [p, c] of Object.entries(files)) {
    mkdirSync(join(r, p, ".."), { recursive: true });
    writeFileSync(join(r, p), c);
  }
  mkdirSync(r, { recursive: true });
  return r;
}

const dc = (o: unknown) => ({ ".devcontainer/devcontainer.json": typeof o === "string" ? o : JSON.stringify(o), ".devcontainer/Dockerfile": "FROM x\n" });

describe("flags", () => {
  test("--image: used as it is", () => {
    expect(planImageSource(repo({}), { image: "team/dev:1" }).source).toEqual({ kind: "image", ref: "team/dev:1", from: "flags" });
  });

  test("--image with --dockerfile or --context, or a reference that is not one: refused (64)", () => {
    const r = repo({ Dockerfile: "FROM x\n" });
    expect(() => planImageSource(r, { image: "a", dockerfile: join(r, "Dockerfile") })).toThrow(/--image names an image/);
    for (const bad of ["-rf", "a b", "$(id)", ""]) expect(() => planImageSource(r, { image: bad })).toThrow(/is not an image reference/);
  });

  test("--dockerfile alone builds with the repo as context; --context alone uses its own Dockerfile", () => {
    const r = repo({ "docker/dev.Dockerfile": "FROM x\n", "ctx/Dockerfile": "FROM y\n" });
    expect(planImageSource(r, { dockerfile: join(r, "docker/dev.Dockerfile") }).source).toEqual({ kind: "dockerfile", dockerfile: join(r, "docker/dev.Dockerfile"), context: r, from: "flags" });
    expect(planImageSource(r, { context: join(r, "ctx") }).source).toEqual({ kind: "dockerfile", dockerfile: join(r, "ctx/Dockerfile"), context: join(r, "ctx"), from: "flags" });
    expect(() => planImageSource(r, { dockerfile: join(r, "nope") })).toThrow(/--dockerfile: .*nope is not a file/);
  });

  test("--context outside the repo is refused (78), through .. or a link: the build context is what the repo's last commit holds", () => {
    const r = repo({ Dockerfile: "FROM x\n" });
    const out = repo({ Dockerfile: "FROM y\n", ".env": "KEY=host-only\n" });
    const err = (() => {
      try {
        planImageSource(r, { context: out });
      } catch (e) {
        return e as SbxError;
      }
    })();
    expect(err?.exitCode).toBe(78);
    expect(err?.message).toMatch(/--context: .* is outside the repo/);
    expect(() => planImageSource(r, { context: join(r, "..") })).toThrow(/is outside the repo/);
    symlinkSync(out, join(r, "elsewhere"));
    expect(() => planImageSource(r, { context: join(r, "elsewhere") })).toThrow(/is outside the repo/);
    // --dockerfile may come from anywhere: it is sent as the build's instructions, not as a dir's files.
    expect(planImageSource(r, { dockerfile: join(out, "Dockerfile") }).source).toMatchObject({ context: r });
  });

  test("flags win over devcontainer.json; with neither, the repo's Dockerfile", () => {
    const r = repo({ ...dc({ image: "from-dc" }), Dockerfile: "FROM x\n" });
    expect(planImageSource(r, { image: "flag" }).source).toMatchObject({ ref: "flag", from: "flags" });
    expect(planImageSource(repo({ Dockerfile: "FROM x\n" })).source).toEqual(repoSource(join(tmp, `r${n - 1}`)));
  });
});

describe("devcontainer.json", () => {
  test("build.dockerfile and build.context from its own dir, build.args (sbx's USER_* stay sbx's), comments and trailing commas", () => {
    const r = repo(dc(`{
      // the dev image
      "build": { "dockerfile": "Dockerfile", "context": "..", "args": { "NODE": "22", "USER_UID": "0", }, },
    }`));
    const p = planImageSource(r);
    expect(p.source).toEqual({ kind: "dockerfile", dockerfile: join(r, ".devcontainer/Dockerfile"), context: r, args: { NODE: "22" }, from: "devcontainer" });
    expect(describeSource(p.source, r)).toBe("built from .devcontainer/Dockerfile (from devcontainer.json)");
  });

  test("the legacy dockerFile key, and image alone", () => {
    expect(planImageSource(repo(dc({ dockerFile: "Dockerfile" }))).source).toMatchObject({ kind: "dockerfile", from: "devcontainer" });
    expect(planImageSource(repo(dc({ image: "mcr.microsoft.com/devcontainers/base:bookworm" }))).source).toEqual({ kind: "image", ref: "mcr.microsoft.com/devcontainers/base:bookworm", from: "devcontainer" });
  });

  test("a build context or Dockerfile outside the repo is refused, through .. or through a link (it would send other files into the image)", () => {
    expect(() => planImageSource(repo(dc({ build: { dockerfile: "Dockerfile", context: "../.." } })))).toThrow(/build.context "..\/.." leads outside the repo/);
    const r = repo(dc({ build: { dockerfile: "Dockerfile", context: "home" } }));
    symlinkSync(tmp, join(r, ".devcontainer/home"));
    expect(() => planImageSource(r)).toThrow(/build.context "home" leads outside the repo/);
    const r2 = repo(dc({ build: { dockerfile: "evil" } }));
    symlinkSync("/etc/passwd", join(r2, ".devcontainer/evil"));
    expect(() => planImageSource(r2)).toThrow(/build.dockerfile "evil" leads outside the repo/);
  });

  test("variables: the workspace ones expanded; the host's environment never passed in; sbx's own, credentials and secret-looking values dropped, each said", () => {
    const r = repo(
      dc({
        image: "x",
        containerEnv: { APP: "${containerWorkspaceFolder}/app", HOME_LEAK: "${localEnv:HOME}", HTTPS_PROXY: "http://evil:8080", GITHUB_TOKEN: "x", KEYISH: "ghp_0123456789abcdefghijABCDEFGHIJ012345", HOSTSECRET: "s3cret-value-of-host" },
        remoteEnv: { EDITOR: "vi", PATH: "/evil:${containerEnv:PATH}" },
      }),
    );
    const p = planImageSource(r, {}, ["s3cret-value-of-host"]);
    expect(p.env).toEqual({ APP: `${r}/app`, EDITOR: "vi" });
    const notes = p.notes.join("\n");
    for (const k of ["HOME_LEAK", "HTTPS_PROXY", "GITHUB_TOKEN", "KEYISH", "HOSTSECRET", "PATH"]) expect(notes).toContain(`.${k} not set`);
    expect(notes).toContain("containerEnv.HOME_LEAK not set: it names the host's environment, which sbx never passes in");
  });

  test("postCreateCommand in each form; forwardPorts numbers; the keys sbx does not honour are named", () => {
    expect(planImageSource(repo(dc({ image: "x", postCreateCommand: "npm ci && npm test" }))).postCreate).toEqual([["/bin/sh", "-c", "npm ci && npm test"]]);
    expect(planImageSource(repo(dc({ image: "x", postCreateCommand: ["make", "setup"] }))).postCreate).toEqual([["make", "setup"]]);
    expect(planImageSource(repo(dc({ image: "x", postCreateCommand: { a: "one", b: ["two", "2"] } }))).postCreate).toEqual([["/bin/sh", "-c", "one"], ["two", "2"]]);
    const p = planImageSource(repo(dc({ image: "x", forwardPorts: [3000, "8080", "db:5432"], features: {}, runArgs: ["--privileged"], mounts: [], customizations: {} })));
    expect(p.ports).toEqual([3000, 8080]);
    expect(p.notes).toContain('.devcontainer/devcontainer.json: forwardPorts entry "db:5432" ignored (only port numbers of the sandbox itself)');
    expect(p.notes).toContain(".devcontainer/devcontainer.json: ignored (sbx runs its own container): features, runArgs, mounts");
  });

  test("a compose file that is not there, no image at all, or not JSON: refused with what to do instead", () => {
    expect(() => planImageSource(repo(dc({ dockerComposeFile: "compose.yml", service: "app" })))).toThrow(/dockerComposeFile "compose.yml" does not exist/);
    expect(() => planImageSource(repo(dc({ name: "x" })))).toThrow(/names no image/);
    expect(() => planImageSource(repo(dc("{ not json")))).toThrow(/is not valid JSON/);
  });

  test(".devcontainer.json at the repo's top is read too", () => {
    const r = repo({ ".devcontainer.json": JSON.stringify({ image: "top" }) });
    expect(planImageSource(r).source).toEqual({ kind: "image", ref: "top", from: "devcontainer" });
  });
});
