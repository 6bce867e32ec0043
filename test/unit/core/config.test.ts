// The config file is parsed strictly: a bad one refuses with what and where, and it can never carry a secret or route around the proxy (fail-closed).
import { describe, expect, test } from "bun:test";
import { ConfigSchema, parseConfig } from "../../../src/core/config";
import { SbxError } from "../../../src/core/errors";
import { refusal } from "../../support/refusal";

const parse = (v: unknown, known: string[] = []) => parseConfig(JSON.stringify(v), "/c/config.json", known);

describe("config file", () => {
  test("an empty object gives the defaults", () => {
    expect(parse({})).toEqual({ overlays: [], env: {}, limits: {} });
  });

  test("overlays, env and claudeAuth are read", () => {
    expect(parse({ overlays: ["~/.config/gh"], env: { EDITOR: "vim", LANGUAGE: "en" }, claudeAuth: "inject" })).toEqual({
      overlays: ["~/.config/gh"],
      env: { EDITOR: "vim", LANGUAGE: "en" },
      limits: {},
      claudeAuth: "inject",
    });
  });

  test("limits are read as written (their values are checked against the machine at create)", () => {
    expect(parse({ limits: { memory: "2g", cpus: 1.5, pids: 512 } }).limits).toEqual({ memory: "2g", cpus: 1.5, pids: 512 });
  });

  test("an unknown limit is refused, naming the allowed keys", () => {
    const e = refusal(() => parse({ limits: { swap: "1g" } }));
    expect(e.message).toContain("limits");
    expect(e.hint).toContain("limits: {memory, cpus, pids}");
  });

  for (const [what, cfg, why] of [
    ["an unknown key", { overlay: ["x"] }, "overlay"],
    ["a bad claudeAuth", { claudeAuth: "share" }, "claudeAuth"],
    ["PATH", { env: { PATH: "/evil" } }, "set by sbx itself"],
    ["HTTPS_PROXY", { env: { HTTPS_PROXY: "http://elsewhere" } }, "set by sbx itself"],
    ["no_proxy", { env: { no_proxy: "*" } }, "set by sbx itself"],
    ["ANTHROPIC_BASE_URL", { env: { ANTHROPIC_BASE_URL: "https://elsewhere" } }, "set by sbx itself"],
    ["SBX_BRIDGE_SOCKET", { env: { SBX_BRIDGE_SOCKET: "/tmp/x" } }, "set by sbx itself"],
    ["GH_TOKEN", { env: { GH_TOKEN: "x" } }, "looks like a credential"],
    ["OPENAI_API_KEY", { env: { OPENAI_API_KEY: "x" } }, "looks like a credential"],
    ["DB_PASSWORD", { env: { DB_PASSWORD: "x" } }, "looks like a credential"],
    ["a key-shaped value", { env: { NOTES: "AKIAIOSFODNN7EXAMPLE" } }, "looks like a secret"],
    ["a bad variable name", { env: { "A-B": "x" } }, "not a valid variable name"],
  ] as const) {
    test(`refuses ${what}`, () => {
      const e = refusal(() => parse(cfg));
      expect(e.exitCode).toBe(78);
      expect(e.message).toContain("/c/config.json");
      expect(e.message).toContain(why);
      expect(e.hint).toContain("Allowed keys");
    });
  }

  test("refuses a value equal to one of the host's secrets", () => {
    const e = refusal(() => parse({ env: { NOTE: "ghp_notreallybutlongenough" } }, ["ghp_notreallybutlongenough"]));
    expect(e.message).toContain("env.NOTE");
  });

  test("invalid JSON refuses with a hint, never falls back to defaults", () => {
    const e = refusal(() => parseConfig("{ overlays: [", "/c/config.json"));
    expect(e.exitCode).toBe(78);
    expect(e.message).toContain("not valid JSON");
  });
});

describe("the config schemas document themselves", () => {
  test("every field of every config file's schema has a description (config.json and chat.json)", async () => {
    const { ZulipConfigSchema } = await import("../../../src/chat/config");
    for (const schema of [ConfigSchema, ZulipConfigSchema]) {
      for (const [key, field] of Object.entries(schema.shape)) expect({ key, description: (field as { description?: string }).description ?? null }).toMatchObject({ key, description: expect.any(String) });
    }
  });

  test("an unknown key's refusal lists the allowed keys with what each is, from the schema", () => {
    let err: SbxError | null = null;
    try {
      parseConfig(JSON.stringify({ overlay: ["~/.config/gh"] }), "/c/config.json");
    } catch (e) {
      err = e as SbxError;
    }
    expect(err?.exitCode).toBe(78);
    expect(err?.message).toContain("overlay");
    for (const [key, field] of Object.entries(ConfigSchema.shape)) expect(err?.hint).toContain(`${key}: ${(field as { description?: string }).description}`);
  });
});
