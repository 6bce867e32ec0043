// The demo's pure parts: step lines, agent output parsing, its isolated environment, the Dockerfile and the argv it renders.
import { describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { demoDockerfile, npmPackageDir, probeArgs } from "../../../src/demo/base-image";
import { opensslCertArgs } from "../../../src/demo/cert";
import { demoEnvironment } from "../../../src/demo/demo";
import { clip, parseAgentLines, renderStep, summary, type Step } from "../../../src/demo/steps";
import { cgiEnv, cgiResponse } from "../../../src/demo/upstream";

const pass: Step = { id: "push", tried: "git push", expected: "accepted", happened: "pushed abc", pass: true };
const fail: Step = { ...pass, id: "dns", happened: "answered", pass: false };

describe("step lines", () => {
  test("one line each: mark, id, tried, expected, got", () => {
    expect(renderStep(pass)).toBe("PASS  push: git push — expected accepted; got pushed abc");
    expect(renderStep(fail)).toBe("FAIL  dns: git push — expected accepted; got answered");
  });
  test("colour comes only from the paint the caller passes", () => {
    const paint = { pass: (s: string) => `<g>${s}</g>`, fail: (s: string) => `<r>${s}</r>`, dim: (s: string) => s };
    expect(renderStep(pass, paint).startsWith("<g>PASS</g>")).toBe(true);
    expect(renderStep(fail, paint).startsWith("<r>FAIL</r>")).toBe(true);
  });
  test("summary counts failures", () => {
    expect(summary([pass, pass])).toBe("all 2 steps passed");
    expect(summary([pass, fail])).toBe("1 of 2 steps failed");
  });
  test("clip keeps a report on one line", () => {
    expect(clip("a\nb   c")).toBe("a b c");
    expect(clip("x".repeat(10), 5)).toBe("xxxx…");
  });
});

describe("agent output", () => {
  test("key=value lines, last wins, other lines ignored", () => {
    expect(parseAgentLines("noise\nhttp_code=403\nbody=a=b \nhttp_code=200\nBad=1\n")).toEqual({ http_code: "200", body: "a=b" });
  });
});

describe("isolation", () => {
  test("the demo's sbx runs with its own XDG dirs, no colour, its secrets in its own file, and none of the caller's tokens", () => {
    const env = demoEnvironment(
      { PATH: "/bin", HOME: "/home/u", USER: "u", GH_TOKEN: "t", ANTHROPIC_API_KEY: "k", XDG_STATE_HOME: "/home/u/.s", DOCKER_HOST: "unix:///d.sock" },
      "/tmp/sbx-demo-x",
    );
    expect(env).toEqual({
      PATH: "/bin",
      HOME: "/home/u",
      USER: "u",
      DOCKER_HOST: "unix:///d.sock",
      XDG_STATE_HOME: "/tmp/sbx-demo-x/state",
      XDG_CACHE_HOME: "/tmp/sbx-demo-x/cache",
      XDG_CONFIG_HOME: "/tmp/sbx-demo-x/config",
      XDG_RUNTIME_DIR: "/tmp/sbx-demo-x/run",
      NO_COLOR: "1",
      SBX_SECRETS_VAULT: "file",
    });
  });
});

describe("rendered commands and files", () => {
  test("the Dockerfile: FROM the base, the user recipe, no network unless --pull asked for it", () => {
    const local = demoDockerfile({ image: "sbx-base:bookworm", why: "local", installTools: false }, "# --- sbx user\nRUN true\n");
    expect(local).toBe("# The sbx demo's sandbox image: local.\nFROM sbx-base:bookworm\nUSER 0\n\n# --- sbx user\nRUN true\n");
    expect(local).not.toContain("apt-get");
    const pulled = demoDockerfile({ image: "debian:bookworm-slim", why: "pulled", installTools: true }, "# --- sbx user\n");
    expect(pulled).toContain("apt-get install");
  });
  test("the tool probe runs with no network and is labelled", () => {
    expect(probeArgs("img")).toEqual([
      "docker", "run", "--rm", "--network", "none", "--label", "sbx.demo=probe", "--entrypoint", "/bin/sh", "img",
      "-c", 'for t in git curl bash; do command -v "$t" >/dev/null || echo "$t"; done',
    ]);
  });
  test("--pull installs node and npm with the tools; the npm probe asks for node and npm", () => {
    expect(demoDockerfile({ image: "debian:bookworm-slim", why: "pulled", installTools: true }, "# --- sbx user\n")).toContain(" nodejs npm ");
    expect(probeArgs("img", ["node", "npm"]).at(-1)).toBe('for t in node npm; do command -v "$t" >/dev/null || echo "$t"; done');
  });
  test("the host's npm is the package npm's own bin link points into, and nothing else", () => {
    const dir = fs.mkdtempSync(join(tmpdir(), "sbx-npmdir-"));
    fs.mkdirSync(`${dir}/npm/bin`, { recursive: true });
    fs.writeFileSync(`${dir}/npm/bin/npm-cli.js`, "");
    fs.writeFileSync(`${dir}/npm/package.json`, JSON.stringify({ name: "npm", version: "11.0.0" }));
    fs.symlinkSync(`${dir}/npm/bin/npm-cli.js`, `${dir}/npm-link`);
    fs.mkdirSync(`${dir}/fake/bin`, { recursive: true });
    fs.writeFileSync(`${dir}/fake/bin/npm`, "");
    fs.writeFileSync(`${dir}/fake/package.json`, JSON.stringify({ name: "not-npm" }));
    try {
      expect(npmPackageDir(`${dir}/npm-link`)).toBe(`${dir}/npm`);
      expect(npmPackageDir(`${dir}/fake/bin/npm`)).toBeNull();
      expect(npmPackageDir(null)).toBeNull();
      expect(npmPackageDir(`${dir}/missing`)).toBeNull();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
  test("the certificate names the sites' IP addresses", () => {
    const a = opensslCertArgs("/d", ["127.0.0.2", "127.0.0.3"]);
    expect(a.slice(0, 3)).toEqual(["openssl", "req", "-x509"]);
    expect(a).toContain("subjectAltName=IP:127.0.0.2,IP:127.0.0.3");
    expect(a.slice(-4)).toEqual(["-keyout", "/d/site.key", "-out", "/d/site.pem"]);
  });
  test("the upstream's CGI environment and reply parsing", () => {
    const env = cgiEnv("/up", "/bin", { method: "POST", pathname: "/demo.git/git-receive-pack", search: "?x=1", headers: new Headers({ "content-type": "application/x-git-receive-pack-request" }), length: 5 });
    expect(env).toMatchObject({ GIT_PROJECT_ROOT: "/up", PATH_INFO: "/demo.git/git-receive-pack", QUERY_STRING: "x=1", REQUEST_METHOD: "POST", CONTENT_LENGTH: "5", GIT_CONFIG_GLOBAL: "/dev/null" });
    const r = cgiResponse(new TextEncoder().encode("Status: 404 Not Found\r\nContent-Type: text/plain\r\n\r\nnope"));
    expect(r.status).toBe(404);
    expect(r.headers.get("content-type")).toBe("text/plain");
    expect(cgiResponse(new TextEncoder().encode("no headers")).status).toBe(502);
  });
});
