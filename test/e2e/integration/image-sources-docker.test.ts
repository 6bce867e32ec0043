// Where the image comes from (issue 23), through the real CLI and engine as a real second uid: the repo's
// devcontainer.json (its Dockerfile, variables, postCreateCommand; what it may not do is said and not done), a local
// image by --image, another Dockerfile by --dockerfile; an image that never heard of the user still runs as the user.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createServer } from "node:net";
import { join } from "node:path";
import type { Fixture } from "../docker/fixture";
import { BASE_IMAGE } from "../docker/fixture";
import { acquireFixture, canRun, putFile, docker, makeRepo, must, releaseFixture, removeRepoImages, skipReason } from "./harness";

const tag = Math.random().toString(36).slice(2, 8);
const LOCAL_IMAGE = `sbxt-local-${tag}:1`;
let f: Fixture;
let repo = "";
const sbx = (args: string[]) => f.sbx(args, { cwd: repo });
const put = (rel: string, data: string | Uint8Array) => putFile(f, repo, rel, data);

describe.skipIf(!canRun)(`image sources on Docker${canRun ? "" : ` — skipped: ${skipReason}`}`, () => {
  let fwd = 0;
  beforeAll(async () => {
    f = acquireFixture();
    repo = makeRepo(f, `imgsrc-${tag}`);
    const probe = createServer();
    fwd = await new Promise<number>((r) => probe.listen(0, "127.0.0.1", () => r((probe.address() as { port: number }).port)));
    await new Promise<void>((r) => probe.close(() => r()));
    // A newcomer's devcontainer: a plain FROM (no sbx user recipe), a variable, one from the host's environment,
    // sbx's own proxy variable, a postCreateCommand, and keys sbx does not run.
    put(".devcontainer/Dockerfile", `FROM ${BASE_IMAGE}\nARG GREETING=unset\nRUN echo from-devcontainer > /etc/sbx-marker && echo "$GREETING" > /etc/sbx-greeting\n`);
    put(
      ".devcontainer/devcontainer.json",
      `{
        // written by a newcomer
        "name": "dev",
        "build": { "dockerfile": "Dockerfile", "context": "..", "args": { "GREETING": "hello-from-args" } },
        "containerEnv": { "APP_DIR": "\${containerWorkspaceFolder}/app", "LEAKED_HOME": "\${localEnv:HOME}", "HTTPS_PROXY": "http://evil.invalid:1" },
        "remoteEnv": { "EDITOR_OF_REPO": "vi" },
        "postCreateCommand": "echo postcreate ran as $(id -un) via $HTTPS_PROXY; touch \\"$HOME/.postcreated\\"",
        "forwardPorts": [${fwd}],
        "features": { "ghcr.io/devcontainers/features/node:1": {} },
      }`,
    );
    put("docker/alt.Dockerfile", `FROM ${BASE_IMAGE}\nRUN echo from-alt > /etc/sbx-marker\n`);
    must(f.git(["add", "-A"], repo), "git add");
    must(f.git(["commit", "-qm", "devcontainer"], repo), "git commit");
    must(docker(["tag", BASE_IMAGE, LOCAL_IMAGE]), "docker tag");
  }, 60_000);

  afterAll(() => {
    if (repo) {
      for (const n of ["dc", "img", "alt"]) sbx(["rm", "--force", n]);
      removeRepoImages(repo);
    }
    docker(["image", "rm", LOCAL_IMAGE]);
    releaseFixture();
  }, 60_000);

  test("devcontainer.json: its Dockerfile builds the image; its variables are set, but never the host's environment or sbx's own; postCreateCommand runs once, as the user; ignored keys are named", () => {
    const c = sbx(["create", "dc"]);
    expect({ code: c.code, err: c.code === 0 ? "" : c.stderr }).toEqual({ code: 0, err: "" });
    expect(c.stderr).toContain("image: built from .devcontainer/Dockerfile (from devcontainer.json)");
    expect(c.stderr).toContain("containerEnv.LEAKED_HOME not set: it names the host's environment, which sbx never passes in");
    expect(c.stderr).toContain("containerEnv.HTTPS_PROXY not set: is set by sbx itself");
    expect(c.stderr).toContain("ignored (sbx runs its own container): features");
    // postCreateCommand: as the user, inside, with the sandbox's egress (its proxy, not the file's).
    expect(c.stderr).toContain(`postcreate ran as ${f.user.name} via http://127.0.0.1:3128`);
    const r = must(sbx(["exec", "dc", "--", "sh", "-c", 'cat /etc/sbx-marker /etc/sbx-greeting; echo "$APP_DIR"; echo "leak=$LEAKED_HOME"; echo "$HTTPS_PROXY"; echo "$EDITOR_OF_REPO"; test -f "$HOME/.postcreated" && echo postcreated; id -un']), "exec");
    expect(r.stdout.split("\n")).toEqual(["from-devcontainer", "hello-from-args", `${repo}/app`, "leak=", "http://127.0.0.1:3128", "vi", "postcreated", f.user.name, ""]);
    // forwardPorts: forwarded from the host's 127.0.0.1 as `sbx port` does.
    expect(JSON.parse(must(sbx(["port", "dc", "--json"]), "port").stdout)).toMatchObject({ running: true, ports: [{ port: fwd, host: fwd, state: "forwarding" }] });
  }, 300_000);

  test("a change to devcontainer.json's Dockerfile is said at the next command, with what applies it", () => {
    put(".devcontainer/Dockerfile", `FROM ${BASE_IMAGE}\nARG GREETING=unset\nRUN echo from-devcontainer-v2 > /etc/sbx-marker && echo "$GREETING" > /etc/sbx-greeting\n`);
    const r = sbx(["exec", "dc", "--", "true"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("the Dockerfile devcontainer.json names changed since sandbox dc's image was built; `sbx rebuild dc` applies it");
    must(sbx(["rebuild", "dc", "--force"]), "rebuild");
    expect(must(sbx(["exec", "dc", "--", "cat", "/etc/sbx-marker", "/etc/sbx-greeting"]), "exec").stdout).toBe("from-devcontainer-v2\nhello-from-args\n");
  }, 300_000);

  test("--image: a local image as it is (sbx pulls nothing: a missing one is refused with what to do)", () => {
    const c = sbx(["create", "img", "--image", LOCAL_IMAGE]);
    expect({ code: c.code, err: c.code === 0 ? "" : c.stderr }).toEqual({ code: 0, err: "" });
    expect(c.stderr).toContain(`image: image ${LOCAL_IMAGE}`);
    expect(c.stderr).not.toContain("building the image");
    expect(must(sbx(["exec", "img", "--", "sh", "-c", "test -e /etc/sbx-marker && echo has-marker || echo plain; id -un"]), "exec").stdout).toBe(`plain\n${f.user.name}\n`);
    const missing = sbx(["create", "nosuch", "--image", `sbxt-missing-${tag}:1`]);
    expect(missing.code).toBe(78);
    expect(missing.stderr).toContain(`image sbxt-missing-${tag}:1 is not on this machine (sbx pulls nothing)`);
  }, 300_000);

  test(".devcontainer.json (at the root) naming an image: that local image, no build; --rebuild with it is refused", () => {
    const other = makeRepo(f, `imgsrc2-${tag}`);
    try {
      putFile(f, other, ".devcontainer.json", JSON.stringify({ image: LOCAL_IMAGE, remoteEnv: { FROM_FILE: "yes" } }));
      must(f.git(["add", "-A"], other), "git add");
      must(f.git(["commit", "-qm", "devcontainer image"], other), "git commit");
      const c = f.sbx(["create", "dcimg"], { cwd: other });
      expect({ code: c.code, err: c.code === 0 ? "" : c.stderr }).toEqual({ code: 0, err: "" });
      expect(c.stderr).toContain(`image: image ${LOCAL_IMAGE} (from devcontainer.json)`);
      expect(c.stderr).not.toContain("building the image");
      expect(must(f.sbx(["exec", "dcimg", "--", "sh", "-c", 'echo "$FROM_FILE"; id -un'], { cwd: other }), "exec").stdout).toBe(`yes\n${f.user.name}\n`);
      const again = f.sbx(["create", "dcimg2", "--rebuild"], { cwd: other });
      expect({ code: again.code, err: again.stderr }).toEqual({ code: 64, err: expect.stringContaining(`--rebuild builds the sandbox's image, and this one is image ${LOCAL_IMAGE} (from devcontainer.json), used as it is`) });
    } finally {
      f.sbx(["rm", "--force", "dcimg"], { cwd: other });
    }
  }, 300_000);

  test("--dockerfile: another Dockerfile, the repo as context; on an existing sandbox it is refused, never ignored", () => {
    const c = sbx(["create", "alt", "--dockerfile", "docker/alt.Dockerfile"]);
    expect({ code: c.code, err: c.code === 0 ? "" : c.stderr }).toEqual({ code: 0, err: "" });
    expect(must(sbx(["exec", "alt", "--", "cat", "/etc/sbx-marker"]), "exec").stdout).toBe("from-alt\n");
    const again = sbx(["run", "--image", LOCAL_IMAGE, "alt", "--", "true"]);
    expect(again.code).toBe(64);
    expect(again.stderr).toContain("--image set up a new sandbox, and alt exists");
  }, 300_000);
});
