// build-proxy on a real engine (issue 39): an image build behind a company proxy gets it as Docker's predefined proxy
// args. Measured here: a RUN step sees HTTPS_PROXY and NO_PROXY; the image keeps neither (not in `docker history`, not
// in its config), so the value never travels with the image; a Dockerfile that declares `ARG HTTPS_PROXY` does keep it
// in its history, which is why sbx never passes the proxy's credentials into a build (core/parent-proxy.ts).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildProxyArgs, parentFromEnv } from "../../../src/core/parent-proxy";
import { DockerEngine } from "../../../src/drivers/docker/engine-client";
import { ensureImage } from "../../../src/drivers/docker/image";
import { createExec } from "../../../src/sys/exec";
import { BASE_IMAGE } from "./fixture";

const ok = (argv: string[]) => Bun.spawnSync(argv, { stdout: "ignore", stderr: "ignore" }).exitCode === 0;
const why = !ok(["docker", "info"]) ? "no Docker engine answers" : !ok(["docker", "image", "inspect", BASE_IMAGE]) ? `base image ${BASE_IMAGE} missing` : undefined;
const user = { name: "ann", uid: 1000, gid: 1000, home: "/home/ann", shell: "/bin/bash" };
const PROXY = "http://proxy.corp.test:3128";
const exec = createExec(process.env as Record<string, string>);
const engine = new DockerEngine(exec, undefined);
const sh = (argv: string[]) => Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" }).stdout.toString();

let tmp = "";
const tags: string[] = [];

/** A repo whose Dockerfile is `lines`, built by sbx with the parent proxy's args; its tag. */
async function build(name: string, lines: string[]): Promise<string> {
  const repo = join(tmp, name);
  mkdirSync(repo, { recursive: true });
  writeFileSync(join(repo, "Dockerfile"), `FROM ${BASE_IMAGE}\n${lines.join("\n")}\n`);
  const proxy = buildProxyArgs(parentFromEnv({ HTTPS_PROXY: PROXY, NO_PROXY: ".corp.test" }).settings);
  const img = await ensureImage(engine, exec, repo, user, { proxy, rebuild: true });
  tags.push(img.tag);
  return img.tag;
}

describe.skipIf(why !== undefined)(`build-proxy on a real engine${why ? ` (skipped: ${why})` : ""}`, () => {
  beforeAll(() => {
    tmp = mkdtempSync(join(tmpdir(), "sbx-build-proxy-"));
  });
  afterAll(() => {
    if (tags.length) Bun.spawnSync(["docker", "image", "rm", "--force", ...tags], { stdout: "ignore", stderr: "ignore" });
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  test("a RUN step sees the parent proxy; the image keeps it nowhere (history, config)", async () => {
    const tag = await build("plain", ["RUN printenv HTTPS_PROXY > /proxy-seen && printenv NO_PROXY >> /proxy-seen"]);
    expect(sh(["docker", "run", "--rm", "--entrypoint", "cat", tag, "/proxy-seen"])).toBe(`${PROXY}\n.corp.test\n`);
    expect(sh(["docker", "history", "--no-trunc", "--format", "{{.CreatedBy}}", tag])).not.toContain("proxy.corp.test");
    expect(sh(["docker", "image", "inspect", tag])).not.toContain("proxy.corp.test");
  }, 120_000);

  test("a Dockerfile that declares ARG HTTPS_PROXY keeps its value in the history: why a login never goes in", async () => {
    const tag = await build("declared", ["ARG HTTPS_PROXY", "RUN true"]);
    expect(sh(["docker", "history", "--no-trunc", "--format", "{{.CreatedBy}}", tag])).toContain(`HTTPS_PROXY=${PROXY}`);
  }, 120_000);
});
