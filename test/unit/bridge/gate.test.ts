// The gate's git argv and environment (golden), and which token goes to which host.
import { describe, expect, test } from "bun:test";
import { credentialHost, gateGit, gitEnv, tokenFor, CREDENTIAL_HELPER } from "../../../src/bridge/gate";
import { githubRepo } from "../../../src/bridge/server";

describe("gate git", () => {
  test("argv: only host-chosen config, the one transport, our credential helper last", () => {
    expect(gateGit(["push", "https://github.com/o/r.git", "refs/heads/x:refs/heads/x"], { transport: "https", credentials: true })).toEqual([
      "git",
      "-c", "core.hooksPath=/dev/null",
      "-c", "core.fsmonitor=false",
      "-c", "core.sshCommand=/bin/false",
      "-c", "protocol.allow=never",
      "-c", "protocol.https.allow=always",
      "-c", "http.followRedirects=false",
      "-c", "credential.helper=",
      "-c", `credential.helper=${CREDENTIAL_HELPER}`,
      "-c", "credential.useHttpPath=false",
      "-c", "transfer.fsckObjects=true",
      "push", "https://github.com/o/r.git", "refs/heads/x:refs/heads/x",
    ]);
  });
  test("the token is in the env of that one process, never in argv", () => {
    const argv = gateGit(["fetch"], { transport: "https", credentials: true });
    const env = gitEnv({ path: "/usr/bin", home: "/h", token: { value: "SECRET-TOKEN-1", host: "github.com" } });
    expect(argv.join(" ")).not.toContain("SECRET-TOKEN-1");
    expect(env).toEqual({
      PATH: "/usr/bin",
      HOME: "/h",
      XDG_CONFIG_HOME: "/h/.config",
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_CONFIG_GLOBAL: "/dev/null",
      GIT_TERMINAL_PROMPT: "0",
      GIT_ASKPASS: "/bin/false",
      SSH_ASKPASS: "/bin/false",
      GIT_PROTOCOL_FROM_USER: "0",
      GIT_OPTIONAL_LOCKS: "0",
      LC_ALL: "C",
      SBX_GATE_TOKEN: "SECRET-TOKEN-1",
      SBX_GATE_HOST: "github.com",
    });
    expect(gitEnv({ path: "/usr/bin", home: "/h" }).SBX_GATE_TOKEN).toBeUndefined();
  });
  test("the credential helper answers only for the expected host", async () => {
    const helper = CREDENTIAL_HELPER.slice(1);
    const ask = async (host: string) => {
      const p = Bun.spawn(["sh", "-c", `${helper} "$@"`, "helper", "get"], { env: { SBX_GATE_TOKEN: "T0KEN-xyz-123", SBX_GATE_HOST: "github.com" }, stdin: Buffer.from(`protocol=https\nhost=${host}\n\n`), stdout: "pipe" });
      return new Response(p.stdout).text();
    };
    expect(await ask("github.com")).toBe("username=x-access-token\npassword=T0KEN-xyz-123\n");
    expect(await ask("evil.example")).toBe("");
    expect(await ask("github.com.evil.example")).toBe("");
  });
  test("which secret is the token for a URL", () => {
    const s = { GH_TOKEN: "gh", GITLAB_TOKEN: "gl", GIT_TOKEN: "any", "GIT_TOKEN_GIT_EXAMPLE_COM": "ex" };
    expect(tokenFor("https://github.com/o/r", s)).toBe("gh");
    expect(tokenFor("https://gitlab.com/o/r", s)).toBe("gl");
    expect(tokenFor("https://git.example.com/o/r", s)).toBe("ex");
    expect(tokenFor("http://127.0.0.1:8080/r.git", s)).toBe("any");
    expect(credentialHost("https://user@Example.com:8443/x")).toBe("example.com:8443");
  });
  test("gh --repo comes from a GitHub remote URL", () => {
    expect(githubRepo("https://github.com/o/r.git")).toBe("o/r");
    expect(githubRepo("git@github.com:o/r.git")).toBe("o/r");
    expect(githubRepo("https://gitlab.com/o/r.git")).toBeUndefined();
  });
});
