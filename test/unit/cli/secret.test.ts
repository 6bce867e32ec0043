// sbx secret: at a terminal the value is asked for hidden (empty refused, Ctrl-C stores nothing, exit 130); off a terminal it is read from stdin; rm and list.
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CANCELLED, runSecret, type SecretInput } from "../../../src/cli/commands/secret";
import { createRender } from "../../../src/cli/render";
import type { CliContext } from "../../../src/cli/verb";
import { readSecrets } from "../../../src/secrets/store";
import { SbxError } from "../../../src/core/errors";
import { FakeExec } from "../../fakes/exec";

const made: string[] = [];
afterAll(() => made.forEach((d) => rmSync(d, { recursive: true, force: true })));

function ctx(stdinIsTTY = false) {
  const configDir = mkdtempSync(join(tmpdir(), "sbx-secret-verb-"));
  made.push(configDir);
  const out: string[] = [];
  const err: string[] = [];
  const render = createRender({ stdout: (s) => out.push(s), stderr: (s) => err.push(s), stdoutIsTTY: false, stderrIsTTY: false }, { NO_COLOR: "1" });
  // No session bus and not a Mac: values are kept in sbx's file (test/unit/secrets/stored.test.ts has the vaults).
  const env = { platform: "linux", raw: {}, vars: { HOME: configDir }, uid: 1000 };
  const c = { paths: { configDir }, env, exec: new FakeExec(), render, stdinIsTTY } as unknown as CliContext;
  return { c, out, err, file: join(configDir, "secrets.json") };
}

/** Input that must come from the terminal: stdin is never read. */
function typed(answer: string | null) {
  const prompts: string[] = [];
  const input: SecretInput = {
    stdin: () => Promise.reject(new Error("stdin read at a terminal")),
    hidden: async (p) => (prompts.push(p), answer),
  };
  return { input, prompts };
}

/** Input from a pipe: no prompt may be shown. */
const piped = (text: string): SecretInput => ({ stdin: async () => text, hidden: () => Promise.reject(new Error("prompted off a terminal")) });

describe("sbx secret set", () => {
  test("at a terminal: asks with a hidden prompt naming the secret, stores what was typed, prints its length only", async () => {
    const { c, err, file } = ctx(true);
    const t = typed("ghp_typed value");
    expect(await runSecret(c, ["set", "GH_TOKEN"], {}, t.input)).toBe(0);
    expect(t.prompts).toHaveLength(1);
    expect(t.prompts[0]).toContain("GH_TOKEN");
    expect(t.prompts[0]).toContain("Ctrl-C");
    expect(readSecrets(file).GH_TOKEN).toBe("ghp_typed value");
    expect(err.join("")).toContain(`stored GH_TOKEN in ${file} (15 characters`);
    expect(err.join("")).not.toContain("ghp_typed");
  });

  test("at a terminal: an empty value is refused (usage, 64) and nothing is stored", async () => {
    const { c, file } = ctx(true);
    const e = await runSecret(c, ["set", "GH_TOKEN"], {}, typed("").input).then(() => null, (x: unknown) => x as SbxError);
    expect(e).toBeInstanceOf(SbxError);
    expect(e!.exitCode).toBe(64);
    expect(e!.message).toBe("empty value: GH_TOKEN was not stored");
    expect(e!.hint).toContain("sbx secret set GH_TOKEN");
    expect(existsSync(file)).toBe(false);
  });

  test("at a terminal: Ctrl-C stores nothing, keeps an older value, says so and exits 130", async () => {
    const { c, err, file } = ctx(true);
    await runSecret(c, ["set", "GH_TOKEN"], {}, typed("old").input);
    expect(await runSecret(c, ["set", "GH_TOKEN"], {}, typed(null).input)).toBe(CANCELLED);
    expect(CANCELLED).toBe(130);
    expect(err.join("")).toContain("cancelled: GH_TOKEN was not stored");
    expect(readSecrets(file).GH_TOKEN).toBe("old");
  });

  test("off a terminal: reads stdin (one trailing newline dropped), never prompts", async () => {
    const { c, out, file } = ctx(false);
    expect(await runSecret(c, ["set", "GH_TOKEN"], {}, piped("ghp_value\n"))).toBe(0);
    expect(readSecrets(file).GH_TOKEN).toBe("ghp_value");
    await runSecret(c, ["list"], {}, piped(""));
    expect(out.join("")).toBe("GH_TOKEN\n");
  });

  test("off a terminal: empty stdin is refused", async () => {
    const { c, file } = ctx(false);
    await expect(runSecret(c, ["set", "GH_TOKEN"], {}, piped("\n"))).rejects.toThrow("empty secret value");
    expect(existsSync(file)).toBe(false);
  });

  test("a bad name is refused before anything is asked", async () => {
    const { c } = ctx(true);
    const t = typed("x");
    await expect(runSecret(c, ["set", "gh_token"], {}, t.input)).rejects.toThrow("bad secret name");
    expect(t.prompts).toEqual([]);
  });
});

describe("sbx secret rm", () => {
  test("rm of a missing secret is not_found", async () => {
    const { c } = ctx();
    await expect(runSecret(c, ["rm", "NOPE"], {}, piped(""))).rejects.toThrow("no secret named NOPE");
  });
});

describe("sbx secret import", () => {
  test("stores the known keys this shell has and sbx does not, prints names only; one that differs is kept and said", async () => {
    const { c, out, err, file } = ctx();
    (c as unknown as { env: { raw: Record<string, string> } }).env.raw = { OPENAI_API_KEY: "sk-shell-openai-value", GH_TOKEN: "ghp_shell", UNRELATED: "x" };
    await runSecret(c, ["set", "GH_TOKEN"], {}, piped("ghp_stored"));
    expect(await runSecret(c, ["import"], {}, piped(""))).toBe(0);
    expect(readSecrets(file)).toEqual({ GH_TOKEN: "ghp_stored", OPENAI_API_KEY: "sk-shell-openai-value" });
    expect(out.join("")).toBe("imported OPENAI_API_KEY\n");
    expect(err.join("")).toContain("GH_TOKEN in this shell differs from the one sbx has; kept sbx's");
    expect(out.join("") + err.join("")).not.toContain("sk-shell-openai-value");
    expect(out.join("") + err.join("")).not.toContain("ghp_shell");
  });
});

describe("sbx secret set --host: the binding asked for", () => {
  test("defaults: every method, every path, the variable named like the secret, the value stored by sbx", async () => {
    const { bindingSpecOf } = await import("../../../src/cli/commands/secret");
    expect(bindingSpecOf("SENTRY_TOKEN", { host: ["Sentry.io"], header: "Authorization: Bearer {}" })).toEqual({
      hosts: ["sentry.io"],
      rules: [{ methods: ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"], path: "/**" }],
      header: { name: "Authorization", template: "Bearer {}" },
      env: "SENTRY_TOKEN",
      npmrc: false,
      inBody: false,
      source: { kind: "vault" },
    });
    expect(bindingSpecOf("NPM_TOKEN", { host: ["npm.example.com"], npmrc: true }).env).toBeNull();
    expect(bindingSpecOf("GH", { host: ["api.github.com"], command: "gh auth token", ttl: "55m", method: ["get,post"], path: ["/v1/**", "/v2/x"] })).toMatchObject({
      rules: [{ methods: ["GET", "POST"], path: "/v1/**" }, { methods: ["GET", "POST"], path: "/v2/x" }],
      source: { kind: "command", command: "gh auth token", ttlMs: 55 * 60_000 },
    });
  });

  test("what is wrong is said with the fix: no host, a header without {}, a bad ttl, --ttl alone, --command with --ref, a bad ref", async () => {
    const { bindingSpecOf } = await import("../../../src/cli/commands/secret");
    const bad = (o: Record<string, unknown>) => {
      try {
        bindingSpecOf("X", o);
        return null;
      } catch (e) {
        return (e as SbxError).message;
      }
    };
    expect(bad({ header: "Authorization: Bearer {}" })).toContain("which hosts");
    expect(bad({ host: ["a.test"], header: "Authorization: Bearer" })).toContain("not 'Name: value with {}'");
    expect(bad({ host: ["a.test"], command: "x", ttl: "soon" })).toContain("not a time");
    expect(bad({ host: ["a.test"], ttl: "5m" })).toContain("--ttl is how long");
    expect(bad({ host: ["a.test"], command: "x", ref: "op://a/b/c" })).toContain("both say where");
    expect(bad({ host: ["a.test"], ref: "1password:thing" })).toContain("not a 1Password reference");
    expect(bad({ host: ["a.test"], path: ["v1"] })).toContain("starts with /");
  });
});

describe("sbx secret set --host: what the daemon would refuse is said before a value is asked for", () => {
  test("an address or a port as the host, a path the proxy cannot match", async () => {
    const { c } = ctx(true);
    const t = typed("never-asked");
    const e = await runSecret(c, ["set", "X", "--host"], { host: ["10.0.0.1"] }, t.input).catch((x: unknown) => x as SbxError);
    expect((e as SbxError).message).toContain("address");
    expect(t.prompts).toEqual([]);
    const p = await runSecret(c, ["set", "X"], { host: ["a.test"], path: ["/v1/../x"] }, t.input).catch((x: unknown) => x as SbxError);
    expect((p as SbxError).message).toContain("not a path the proxy can match");
    expect(t.prompts).toEqual([]);
  });
});
