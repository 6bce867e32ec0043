// sbx code NAME, through the real verb table and the daemon's routes (Docker on the in-memory engine), with a stand-in
// for VS Code's `code` CLI on PATH that records each call and its SSH_AUTH_SOCK, and answers --list-extensions as the
// real one does (one extension id a line). credential-scope: without the settings that keep VS Code's Dev Containers
// from copying ~/.gitconfig in and forwarding the host's git credential helper, nothing is opened; `code` runs without
// the host's SSH agent.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { containerOfUri, VSCODE_CREDENTIAL_SETTINGS } from "../../../src/core/editors";
import { FakeDriver } from "../../fakes/driver";
import { selfUser } from "../../../src/sys/host-user";
import { dockerCliWorld, type DockerCliWorld } from "../../support/docker-cli-world";

let x: DockerCliWorld;
let bin = "";
let calls = "";

/** VS Code's `code` as far as sbx uses it: --list-extensions prints the installed ids; --folder-uri opens a window. */
function fakeCode(dir: string, extensions: string[]): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "extensions"), extensions.map((e) => `${e}\n`).join(""));
  writeFileSync(
    join(dir, "code"),
    [
      "#!/bin/sh",
      `{ for a in "$@"; do printf '%s\\n' "$a"; done; printf 'SSH_AUTH_SOCK=%s\\n---\\n' "\${SSH_AUTH_SOCK-unset}"; } >> '${calls}'`,
      'case "$1" in',
      `  --list-extensions) cat '${join(dir, "extensions")}' ;;`,
      '  --folder-uri) case "$2" in vscode-remote://*) ;; *) echo "not a remote URI: $2" >&2; exit 1 ;; esac ;;',
      "esac",
    ].join("\n"),
  );
  chmodSync(join(dir, "code"), 0o755);
}

/** Each call of the stand-in: its argv and the SSH_AUTH_SOCK it saw. */
function codeCalls(): { argv: string[]; ssh: string }[] {
  if (!existsSync(calls)) return [];
  return readFileSync(calls, "utf8")
    .split("---\n")
    .filter(Boolean)
    .map((block) => {
      const lines = block.split("\n").filter((l) => l !== "");
      return { argv: lines.slice(0, -1), ssh: lines.at(-1)!.replace(/^SSH_AUTH_SOCK=/, "") };
    });
}

function writeSettings(text: string): string {
  const file = join(x.vars.XDG_CONFIG_HOME!, "Code", "User", "settings.json");
  mkdirSync(join(file, ".."), { recursive: true });
  writeFileSync(file, text);
  return file;
}

const SAFE = `{
  // as a person keeps it: comments and a trailing comma
  "editor.fontSize": 13,
  "dev.containers.copyGitConfig": false,
  "dev.containers.gitCredentialHelperConfigLocation": "none",
  "dev.containers.dockerCredentialHelper": false,
  "dev.containers.githubCLILoginWithToken": false,
}`;

const env = () => ({ PATH: `${bin}:${x.vars.PATH}`, SSH_AUTH_SOCK: "/tmp/host-agent.sock" });
const stateOf = async (name: string) => (JSON.parse((await x.cli(["list", "--json"])).stdout) as { name: string; state: string }[]).find((s) => s.name === name)?.state;

beforeEach(async () => {
  x = await dockerCliWorld({ drivers: ({ exec, paths, env: e }) => ({ "linux-user": new FakeDriver("linux-user", exec, paths, selfUser(e)) }) });
  bin = join(x.w.root, "bin");
  calls = join(x.w.root, "code-calls");
  fakeCode(bin, ["ms-python.python", "ms-vscode-remote.remote-containers"]);
  expect((await x.cli(["create", "demo"])).code).toBe(0);
  expect((await x.cli(["stop", "demo"])).code).toBe(0);
});
afterEach(async () => {
  await x.close();
});

describe("credential-scope: sbx code opens a sandbox in VS Code only with the settings that keep the host's credentials out", () => {
  test("no settings file, or one that lacks a setting: refused (77), each missing setting named with the file; code never opens anything", async () => {
    const none = await x.cli(["code", "demo"], undefined, { vars: env() });
    expect(none.code).toBe(77);
    for (const k of Object.keys(VSCODE_CREDENTIAL_SETTINGS)) expect(none.stderr).toContain(`"${k}": ${JSON.stringify(VSCODE_CREDENTIAL_SETTINGS[k])},`);
    expect(none.stderr).toContain(join(x.vars.XDG_CONFIG_HOME!, "Code", "User", "settings.json"));
    expect(none.stderr).toContain("use your credentials");

    writeSettings(SAFE.replace('"none"', '"global"'));
    const one = await x.cli(["code", "demo"], undefined, { vars: env() });
    expect(one.code).toBe(77);
    expect(one.stderr).toContain('"dev.containers.gitCredentialHelperConfigLocation": "none",');
    expect(one.stderr).not.toContain('"dev.containers.copyGitConfig"');
    expect(codeCalls().filter((c) => c.argv[0] === "--folder-uri")).toEqual([]);
    expect(await stateOf("demo")).toBe("stopped");
  });

  test("with them: the sandbox is started, then code opens its container at the repo's path, without the host's SSH agent", async () => {
    writeSettings(SAFE);
    const r = await x.cli(["code", "demo"], undefined, { vars: env() });
    expect(r.code).toBe(0);
    expect(await stateOf("demo")).toBe("running");
    const open = codeCalls().find((c) => c.argv[0] === "--folder-uri");
    expect(open).toBeDefined();
    expect(open!.ssh).toBe("unset");
    const uri = open!.argv[1]!;
    const container = containerOfUri(uri)!;
    // The container the URI names is the sandbox's own, running.
    expect(x.engine.containers.get(container)?.status).toBe("running");
    expect(decodeURIComponent(new URL(uri).pathname)).toBe(realpathSync(x.w.repo));
    expect(r.stderr).toContain(`opened sandbox demo in VS Code (container ${container}`);
    expect(r.stderr).toContain("without your SSH agent");
  });

  test("--json says what was opened and with which settings", async () => {
    const file = writeSettings(SAFE);
    const r = await x.cli(["code", "demo", "--json"], undefined, { vars: env() });
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(j).toMatchObject({ sandbox: "demo", backend: "docker", path: realpathSync(x.w.repo), opened: true, code: join(bin, "code"), settings: { file, missing: [] } });
    expect(containerOfUri(j.uri as string)).toBe(j.container as string);
  });
});

describe("sbx code: the ways it cannot open", () => {
  test("--print: only the URI on stdout; nothing started, code never run; the missing settings and the stopped sandbox said", async () => {
    const r = await x.cli(["code", "--print", "demo"], undefined, { vars: env() });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^vscode-remote:\/\/attached-container\+[0-9a-f]+\/\S+\n$/);
    expect(r.stderr).toContain("dev.containers.gitCredentialHelperConfigLocation");
    expect(r.stderr).toContain("is not running");
    expect(codeCalls()).toEqual([]);
    expect(await stateOf("demo")).toBe("stopped");
  });

  test("code not on PATH: the URI on stdout and what to do on stderr, exit 69; nothing started", async () => {
    writeSettings(SAFE);
    const r = await x.cli(["code", "demo"], undefined, { vars: { PATH: "/usr/bin:/bin" } });
    expect(r.code).toBe(69);
    expect(r.stdout).toMatch(/^vscode-remote:\/\/attached-container\+/);
    expect(r.stderr).toContain("`code` command is not on PATH");
    expect(r.stderr).toContain("Attach to Running Container");
    expect(await stateOf("demo")).toBe("stopped");
  });

  test("VS Code without Dev Containers: refused with the install command; no window opened", async () => {
    writeSettings(SAFE);
    fakeCode(bin, ["ms-python.python"]);
    const r = await x.cli(["code", "demo"], undefined, { vars: env() });
    expect(r.code).toBe(69);
    expect(r.stderr).toContain("code --install-extension ms-vscode-remote.remote-containers");
    expect(codeCalls().map((c) => c.argv[0])).toEqual(["--list-extensions"]);
  });

  test("a user-account sandbox: refused with why (no container; Remote-SSH needs a login sbx does not set up) and what works", async () => {
    writeSettings(SAFE);
    expect((await x.cli(["create", "--backend", "user", "acct"])).code).toBe(0);
    for (const argv of [["code", "acct"], ["code", "--print", "acct"]]) {
      const r = await x.cli(argv, undefined, { vars: env() });
      expect(r.code).toBe(69);
      expect(r.stdout).toBe("");
      expect(r.stderr).toContain("sbx code opens Docker sandboxes; acct it is a Linux user account");
      expect(r.stderr).toContain("Remote-SSH");
      expect(r.stderr).toContain("sbx shell acct");
      expect(r.stderr).toContain("git log sandbox-acct/BRANCH");
    }
    expect(codeCalls()).toEqual([]);
  });

  test("a sandbox that does not exist: not found, with how to make it", async () => {
    const r = await x.cli(["code", "nope"], undefined, { vars: env() });
    expect(r.code).toBe(66);
    expect(r.stderr).toContain("sbx create nope");
  });
});
