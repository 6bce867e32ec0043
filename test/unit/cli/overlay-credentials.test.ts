// Invariant "overlays carry no credentials": an overlay that is, or holds, a credential location is refused (flag or
// config file) with the reason, unless --expose-credentials, which names each location it shows; a secret in what an
// overlay shows is left out of the view the sandbox gets, and said (copy-in-scanned).
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { dockerCliWorld, type DockerCliWorld } from "../../support/docker-cli-world";
import { secretsFile, setSecret } from "../../../src/secrets/store";

let x: DockerCliWorld;
let home: string;
beforeEach(async () => {
  x = await dockerCliWorld();
  home = x.w.env.vars.HOME;
  mkdirSync(join(home, ".ssh"), { recursive: true });
  writeFileSync(join(home, ".ssh", "id_ed25519"), "-----BEGIN OPENSSH PRIVATE KEY-----\n");
  mkdirSync(join(home, ".config", "gh"), { recursive: true });
  mkdirSync(join(home, ".config", "nvim"), { recursive: true });
});
afterEach(async () => {
  await x.close();
});

describe("overlays of credential locations", () => {
  test("--overlay ~/.ssh, a dir holding ~/.config/gh, and one inside it are refused (exit 77), and nothing is made", async () => {
    for (const o of ["~/.ssh", "~/.config", join(home, ".config", "gh")]) {
      const r = await x.cli(["create", "c", "--overlay", o]);
      expect({ o, code: r.code }).toEqual({ o, code: 77 });
      expect(r.stderr).toContain("will not overlay");
      expect(r.stderr).toContain("--expose-credentials");
    }
    expect(JSON.parse((await x.cli(["list", "--json"])).stdout)).toEqual([]);
  });

  test("the config file's overlays are held to the same rule", async () => {
    mkdirSync(join(x.w.root, "config", "sbx"), { recursive: true });
    writeFileSync(join(x.w.root, "config", "sbx", "config.json"), JSON.stringify({ overlays: ["~/.ssh"] }));
    const r = await x.cli(["create", "c"]);
    expect(r.code).toBe(77);
    expect(r.stderr).toContain("~/.ssh");
  });

  test("a dir without credentials is overlaid; --expose-credentials overlays one and says what the agent can read", async () => {
    expect((await x.cli(["create", "a", "--overlay", "~/.config/nvim"])).code).toBe(0);
    const r = await x.cli(["create", "b", "--overlay", "~/.ssh", "--expose-credentials"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("warning: --expose-credentials: the agent in this sandbox can read ~/.ssh");
  });
});

describe("overlays holding a secret's value or shape: left out of the view, said, never refused", () => {
  const TOKEN = "ghp_0123456789abcdefABCDEF0123456789abcd";
  /** The lower dir (the view) of the overlay the sandbox's container mounts at `target`. */
  const lowerOf = (name: string, target: string): string => {
    const c = [...x.engine.containers.values()].find((k) => k.labels["sbx.name"] === name)!;
    const o = x.engine.volumesByName.get(c.volumeAt.get(target)!)!.opts.o!;
    return /lowerdir=((?:\\.|[^,])*)/.exec(o)![1]!.replace(/\\(.)/g, "$1");
  };

  test("the default fish overlay with the host's own token in config.fish: created, config.fish left out of the view and named with its line, never the value; --expose-credentials keeps it, warned", async () => {
    setSecret(secretsFile(join(x.w.root, "config", "sbx")), "GH_TOKEN", TOKEN);
    mkdirSync(join(home, ".config", "fish"), { recursive: true });
    writeFileSync(join(home, ".config", "fish", "config.fish"), `set -gx EDITOR vim\nset -gx GH_TOKEN ${TOKEN}\n`);
    const r = await x.cli(["create", "c"]);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("~/.config/fish/config.fish: line 2 (the value of the host secret GH_TOKEN");
    expect(r.stderr).not.toContain(TOKEN);
    expect(existsSync(join(lowerOf("c", join(home, ".config", "fish")), "config.fish"))).toBe(false);
    const ok = await x.cli(["create", "e", "--expose-credentials"]);
    expect(ok.code).toBe(0);
    expect(ok.stderr).toContain("warning: --expose-credentials: the agent in e can read what holds a secret: ~/.config/fish/config.fish: line 2");
    expect(readFileSync(join(lowerOf("e", join(home, ".config", "fish")), "config.fish"), "utf8")).toContain(TOKEN);
  }, 30_000);

  test("a secret shape in an --overlay dir, or an encoded host value; ~/.claude only as far as its view shows it", async () => {
    setSecret(secretsFile(join(x.w.root, "config", "sbx")), "OPENAI_API_KEY", "sk-proj-hostvalue-0123456789");
    writeFileSync(join(home, ".config", "nvim", "init.lua"), `vim.g.key = "${Buffer.from("sk-proj-hostvalue-0123456789").toString("base64")}"\n`);
    const enc = await x.cli(["create", "c", "--overlay", "~/.config/nvim"]);
    expect(enc.code).toBe(0);
    expect(enc.stderr).toContain("init.lua: line 1 (the value of the host secret OPENAI_API_KEY");
    writeFileSync(join(home, ".config", "nvim", "init.lua"), `-- token = "${TOKEN}"\n`);
    const shape = await x.cli(["create", "d", "--overlay", "~/.config/nvim"]);
    expect(shape.stderr).toContain("init.lua: line 1 (GitHub token)");
    writeFileSync(join(home, ".config", "nvim", "init.lua"), "-- nothing\n");
    // Another project's transcript is not shown, so not read; this project's is shown, so it is.
    mkdirSync(join(home, ".claude", "projects", "-other"), { recursive: true });
    writeFileSync(join(home, ".claude", "projects", "-other", "t.jsonl"), `${TOKEN}\n`);
    const clean = await x.cli(["create", "f", "--overlay", "~/.config/nvim"]);
    expect(clean.stderr).not.toContain("held a secret");
    const repo = realpathSync(x.w.repo);
    const mine = join(home, ".claude", "projects", repo.replace(/[^A-Za-z0-9]/g, "-"));
    mkdirSync(mine, { recursive: true });
    writeFileSync(join(mine, "t.jsonl"), `${JSON.stringify({ cwd: repo, pasted: TOKEN })}\n`);
    const pasted = await x.cli(["create", "g"]);
    expect(pasted.code).toBe(0);
    expect(pasted.stderr).toContain("t.jsonl: line 1: pasted (GitHub token)");
    const t = readFileSync(join(lowerOf("g", join(home, ".claude")), "projects", repo.replace(/[^A-Za-z0-9]/g, "-"), "t.jsonl"), "utf8");
    expect(JSON.parse(t)).toEqual({ cwd: repo, pasted: "[removed by sbx: it held a secret]" });
  }, 30_000);
});
