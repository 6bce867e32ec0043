// The agent table and its renderers: every row complete and consistent, the launcher run by a real sh (the image's
// agent first, sbx's cached one else, nothing a variable holds ever evaluated), the instruction section as the proxy speaks.
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  AGENT_NAMES,
  AGENTS,
  agentSetupPlan,
  defaultAgentSandboxName,
  fillTemplate,
  instructionSection,
  renderLauncher,
  shExpand,
  VERSION_RE,
  type AgentName,
} from "../../../src/core/agents";
import { NAME_PATTERN } from "../../../src/core/names";
import { asksAboutItself } from "../../../src/core/agent-names";
import { PRESETS } from "../../../src/core/presets";
import { blockedPhrase } from "../../../src/proxy/refusal";
import { allowCommand } from "../../../src/core/egress";

const tmp = mkdtempSync(join(tmpdir(), "sbx-agents-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("the agent table", () => {
  test("covers Claude Code, Codex CLI, Gemini CLI, OpenCode and aider, each row complete", () => {
    expect([...AGENT_NAMES].sort()).toEqual(["aider", "claude", "codex", "gemini", "opencode"]);
    for (const n of AGENT_NAMES) {
      const a = AGENTS[n];
      expect(a.binary).toMatch(/^[a-z][a-z0-9-]*$/);
      expect(Object.hasOwn(PRESETS, a.preset)).toBe(true);
      expect(a.routes.length).toBeGreaterThan(0);
      expect(a.instructions.startsWith("/") || a.instructions.includes("..")).toBe(false);
      expect(a.prompt.length).toBeGreaterThan(0);
      expect(a.login.never.length).toBeGreaterThan(0);
      for (const s of a.setup) expect(s.path.startsWith("/") || s.path.includes("..")).toBe(false);
    }
  });

  test("npm packages resolve per platform: Claude's and OpenCode's by name, Codex's by version, Gemini's as is", () => {
    const p = { os: "linux", arch: "x64" } as const;
    const pkg = (n: AgentName) => {
      const i = AGENTS[n].install;
      if (i.kind !== "npm") throw new Error("not npm");
      return [fillTemplate(i.from.name, p, "1.2.3"), fillTemplate(i.from.version, p, "1.2.3"), fillTemplate(i.entry, p, "1.2.3")];
    };
    expect(pkg("claude")).toEqual(["@anthropic-ai/claude-code-linux-x64", "1.2.3", "claude"]);
    expect(pkg("codex")).toEqual(["@openai/codex", "1.2.3-linux-x64", "vendor/x86_64-unknown-linux-musl/bin/codex"]);
    expect(pkg("opencode")).toEqual(["opencode-linux-x64", "1.2.3", "bin/opencode"]);
    expect(pkg("gemini")).toEqual(["@google/gemini-cli", "1.2.3", "bundle/gemini.js"]);
    expect(fillTemplate("{triple}", { os: "linux", arch: "arm64" }, "")).toBe("aarch64-unknown-linux-musl");
  });

  test("a version is digits and dots with an optional tag: nothing that could name a path", () => {
    for (const ok of ["2.1.332", "0.169.0", "1.0.0-beta.1"]) expect(VERSION_RE.test(ok)).toBe(true);
    for (const bad of ["latest", "../../x", "1.2", "1.2.3/../../x", "1.2.3 ", "1.2.3-a/b", ""]) expect(VERSION_RE.test(bad)).toBe(false);
  });

  test("the default sandbox name is the agent and the repo's dir, always a valid name and never an agent's", () => {
    for (const [repo, want] of [["app", "claude-app"], ["My Repo!", "claude-my-repo"], ["---", "claude-sandbox"], ["x".repeat(80), `claude-${"x".repeat(40)}`]] as const) {
      const n = defaultAgentSandboxName("claude", repo);
      expect(n).toBe(want);
      expect(NAME_PATTERN.test(n)).toBe(true);
    }
  });
});

describe("shExpand", () => {
  test("${NAME} is expanded at run time, everything else is literal (quotes, $(…), backticks)", () => {
    const v = `a'b "c" $(touch ${tmp}/pwned) \`id\` \${HOME}/x`;
    const r = Bun.spawnSync(["sh", "-c", `printf %s ${shExpand(v)}`], { env: { HOME: "/h" } });
    expect(r.stdout.toString()).toBe(`a'b "c" $(touch ${tmp}/pwned) \`id\` /h/x`);
  });
});

/** A fake agent that prints its argv and the variables the launcher sets or unsets. */
function fakeAgent(path: string, label: string): void {
  writeFileSync(path, `#!/bin/sh\necho "${label}" "$@"\necho "API_KEY=\${ANTHROPIC_API_KEY-unset} TRAFFIC=\${CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC-}"\n`);
  chmodSync(path, 0o755);
}

function launch(agent: AgentName, opts: { cached: string | null; node?: string | null; path: string; env?: Record<string, string> }, args: string[] = []) {
  const bin = join(tmp, `bin-${agent}-${Math.random().toString(36).slice(2)}`);
  mkdirSync(bin);
  const file = join(bin, AGENTS[agent].binary);
  writeFileSync(file, renderLauncher({ agent, cached: opts.cached, node: opts.node ?? null, binDir: bin }));
  chmodSync(file, 0o555);
  const r = Bun.spawnSync([file, ...args], { env: { PATH: `${bin}:${opts.path}`, HOME: tmp, ...opts.env }, stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
}

describe("the launcher, run by a real sh", () => {
  test("the image's own agent on PATH wins over sbx's cached one, with the agent's environment; the launcher never runs itself", () => {
    const img = join(tmp, "img");
    mkdirSync(img);
    fakeAgent(join(img, "claude"), "image");
    const cached = join(tmp, "cached-claude");
    fakeAgent(cached, "cached");
    const r = launch("claude", { cached, path: `${img}:/usr/bin:/bin`, env: { ANTHROPIC_API_KEY: "sbx-placeholder" } }, ["-p", "hi there"]);
    expect(r.code).toBe(0);
    expect(r.out).toBe("image -p hi there\nAPI_KEY=unset TRAFFIC=1\n");
  });

  test("no agent on PATH: sbx's cached one, with the agent's arguments first", () => {
    const cached = join(tmp, "cached-codex");
    fakeAgent(cached, "cached");
    const r = launch("codex", { cached, path: "/usr/bin:/bin", env: { SBX_CODEX_BASE_URL: "http://127.0.0.1:3128/llm/codex" } }, ["exec", "x"]);
    expect(r.code).toBe(0);
    const first = r.out.split("\n")[0]!;
    expect(first).toContain('model_providers.sbx={name="OpenAI through sbx",base_url="http://127.0.0.1:3128/llm/codex"');
    expect(first.endsWith(" exec x")).toBe(true);
  });

  test("a JavaScript agent runs on the cached Node.js", () => {
    const node = join(tmp, "fake-node");
    writeFileSync(node, '#!/bin/sh\necho node "$@"\n');
    chmodSync(node, 0o755);
    const r = launch("gemini", { cached: "/opt/sbx/agents/pkg/gemini/1.0.0/package/bundle/gemini.js", node, path: "/usr/bin:/bin" }, ["-p", "q"]);
    expect(r.out.split("\n")[0]).toBe("node --disable-warning=UNDICI-EHPA /opt/sbx/agents/pkg/gemini/1.0.0/package/bundle/gemini.js -p q");
  });

  const realNode = Bun.which("node");
  test.skipIf(!realNode)(`quiet-node: the proxy agent's UNDICI-EHPA warning is not printed by sbx's Node.js, other warnings are${realNode ? "" : " (skipped: no node on PATH)"}`, () => {
    const agent = join(tmp, "warns.js");
    writeFileSync(agent, 'process.emitWarning("EnvHttpProxyAgent is experimental", { code: "UNDICI-EHPA" }); process.emitWarning("kept", { code: "OTHER" }); console.log("ran", process.argv.slice(2).join(" "));\n');
    const r = launch("gemini", { cached: agent, node: realNode!, path: "/usr/bin:/bin" }, ["-p", "q"]);
    expect(r.out).toContain("ran -p q");
    expect(r.err).not.toContain("UNDICI-EHPA");
    expect(r.err).toContain("[OTHER] Warning: kept");
  });

  test("neither: exit 127 and a message saying how to install it", () => {
    const r = launch("opencode", { cached: null, path: "/usr/bin:/bin" });
    expect(r.code).toBe(127);
    expect(r.err).toContain("sbx: OpenCode is not installed here; on the host, `sbx run opencode` installs it");
  });


  test("a value the sandbox controls (SBX_CODEX_BASE_URL) is passed as data, never run", () => {
    const cached = join(tmp, "cached-codex2");
    fakeAgent(cached, "cached");
    const r = launch("codex", { cached, path: "/usr/bin:/bin", env: { SBX_CODEX_BASE_URL: `$(touch ${tmp}/pwned2)\`touch ${tmp}/pwned3\`` } });
    expect(r.code).toBe(0);
    expect(Bun.spawnSync(["test", "-e", join(tmp, "pwned2")]).exitCode).toBe(1);
    expect(Bun.spawnSync(["test", "-e", join(tmp, "pwned3")]).exitCode).toBe(1);
  });
});

describe("the instruction section", () => {
  const s = instructionSection("demo");

  test("about twenty lines, between markers, one text for every agent", () => {
    const lines = s.trimEnd().split("\n");
    expect(lines[0]!.startsWith("<!-- sbx:begin")).toBe(true);
    expect(lines.at(-1)).toBe("<!-- sbx:end -->");
    expect(lines.length).toBeLessThanOrEqual(22);
    for (const a of AGENT_NAMES) expect(agentSetupPlan(a, "demo", "/w").instructions.section).toBe(s);
  });

  test("quotes the proxy's refusal as the proxy writes it, and says how to ask", () => {
    const phrase = blockedPhrase("HOST:443", allowCommand("HOST", "demo"));
    expect(s.replace(/\n\s+/g, " ")).toContain(phrase);
    expect(s).toContain("sbx-egress ask HOST");
    expect(s).toContain("sbx/demo/");
  });

  test("Claude's first-run settings name the sandbox's workdir", () => {
    const plan = agentSetupPlan("claude", "demo", "/home/ann/src/app");
    expect(plan.instructions.path).toBe(".claude/CLAUDE.md");
    expect(JSON.stringify(plan.setup)).toContain('"/home/ann/src/app":{"hasTrustDialogAccepted":true}');
  });
});

/**
 * A Python as a distribution ships it, as far as the launcher uses it: `--version`, the version check, the
 * `import venv, ensurepip` probe, and `-m venv DIR`, which makes DIR/bin/pip. Debian's python3 without python3-venv
 * has venv but not ensurepip, and its `-m venv` prints Debian's own text. The venv's pip either installs (a fake
 * aider that prints its argv) or fails with `pipOut` on stderr, as the real pip does.
 */
function fakePython(dir: string, o: { version?: string; ensurepip?: boolean; pipOut?: string }): void {
  mkdirSync(dir, { recursive: true });
  const version = o.version ?? "3.11.2";
  const [maj, min] = version.split(".").map(Number) as [number, number];
  const pip = o.pipOut === undefined
    ? `#!/bin/sh\nmkdir -p "$(dirname "$0")" && printf '#!/bin/sh\\necho aider "$@"\\n' > "$(dirname "$0")/aider" && chmod +x "$(dirname "$0")/aider"\n`
    : `#!/bin/sh\ncat >&2 <<'EOF'\n${o.pipOut}\nEOF\nexit 1\n`;
  writeFileSync(join(dir, "pip-template"), pip);
  writeFileSync(
    join(dir, "python3"),
    [
      "#!/bin/sh",
      'case "$1 $2" in',
      `  "--version ") echo "Python ${version}" ;;`,
      `  "-c import sys"*) exit ${maj > 3 || (maj === 3 && min >= 10) ? 0 : 1} ;;`,
      `  "-c import venv, ensurepip") ${o.ensurepip === false ? `echo "ModuleNotFoundError: No module named 'ensurepip'" >&2; exit 1` : "exit 0"} ;;`,
      '  "-m venv")',
      o.ensurepip === false
        ? "    printf '%s\\n' 'The virtual environment was not created successfully because ensurepip is not' 'available.  On Debian/Ubuntu systems, you need to install the python3-venv' 'package using the following command.' '' '    apt install python3.11-venv'; exit 1 ;;"
        : `    mkdir -p "$3/bin" && cp '${join(dir, "pip-template")}' "$3/bin/pip" && chmod +x "$3/bin/pip" ;;`,
      "esac",
    ].join("\n"),
  );
  chmodSync(join(dir, "python3"), 0o755);
}

/** What pip prints when sbx's proxy refuses the CONNECT to `host` (the reason phrase as the proxy writes it). */
function refusedPip(host: string): string {
  const phrase = blockedPhrase(`${host}:443`, allowCommand(host, "demo"));
  const retry = (n: number) => `WARNING: Retrying (Retry(total=${n}, connect=None, read=None, redirect=None, status=None)) after connection broken by 'ProxyError('Unable to connect to proxy', OSError('Tunnel connection failed: 403 ${phrase}'))': /simple/aider-chat/`;
  return [retry(4), retry(3), "ERROR: Could not find a version that satisfies the requirement aider-chat (from versions: none)", "ERROR: No matching distribution found for aider-chat"].join("\n");
}

describe("aider's install inside: each failure from outside the sandbox gets sbx's message and the fix", () => {
  let n = 0;
  /** The aider launcher in a fresh HOME: `python` a fakePython dir (or none), `apt` a package manager on PATH, `container` the marker present. */
  function aider(o: { python?: Parameters<typeof fakePython>[1]; apt?: boolean; container: boolean }, args: string[] = []) {
    const root = join(tmp, `aider-${n++}`);
    const home = join(root, "home");
    mkdirSync(home, { recursive: true });
    const bin = join(root, "launchers");
    mkdirSync(bin);
    const sys = join(root, "sys");
    mkdirSync(sys);
    if (o.python) fakePython(sys, o.python);
    if (o.apt) {
      writeFileSync(join(sys, "apt-get"), "#!/bin/sh\nexit 0\n");
      chmodSync(join(sys, "apt-get"), 0o755);
    }
    const marker = join(root, "dockerenv");
    if (o.container) writeFileSync(marker, "");
    writeFileSync(join(bin, "aider"), renderLauncher({ agent: "aider", cached: null, node: null, binDir: bin, containerMarker: marker }));
    chmodSync(join(bin, "aider"), 0o555);
    // The tools the launcher itself uses (sh, sed, grep, cat, mkdir, …) from the system; python3 and apt-get only as given.
    const tools = join(root, "tools");
    mkdirSync(tools);
    for (const t of ["sh", "sed", "grep", "cat", "mkdir", "rm", "tail", "head", "uname", "chmod", "dirname", "cp", "printf"]) {
      const p = Bun.which(t);
      if (p) Bun.spawnSync(["ln", "-s", p, join(tools, t)]);
    }
    const r = Bun.spawnSync([join(bin, "aider"), ...args], { env: { PATH: `${bin}:${sys}:${tools}`, HOME: home, SANDBOX: "demo" }, stdout: "pipe", stderr: "pipe" });
    return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString(), home };
  }

  test("no python3, in a container with apt: exit 127, the Dockerfile line and the rebuild", () => {
    const r = aider({ apt: true, container: true });
    expect(r.code).toBe(127);
    expect(r.err).toBe("sbx: aider needs python3 (3.10 or newer), which this sandbox lacks: add to the sandbox's Dockerfile: RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-venv, then `sbx rebuild demo` on the host\n");
  });

  test("no python3 in a user-account sandbox: this machine's package, not a Dockerfile", () => {
    const r = aider({ apt: true, container: false });
    expect(r.code).toBe(127);
    expect(r.err).toContain("install it on this machine: sudo apt-get install python3 python3-venv");
    expect(r.err).not.toContain("Dockerfile");
  });

  test("Debian's python3 without python3-venv (`ensurepip is not available`): sbx's message naming python3-venv, never Debian's raw text", () => {
    const r = aider({ python: { ensurepip: false }, apt: true, container: true });
    expect(r.code).toBe(1);
    expect(r.err).toContain("this sandbox's Python has no venv module with ensurepip (Debian and Ubuntu ship it as python3-venv)");
    expect(r.err).toContain("RUN apt-get update && apt-get install -y --no-install-recommends python3-venv, then `sbx rebuild demo`");
    expect(r.err).not.toContain("ensurepip is not\navailable");
    expect(r.err).not.toContain("apt install python3.11-venv");
  });

  test("a Python older than 3.10: said with the version found", () => {
    const r = aider({ python: { version: "3.8.10" }, apt: true, container: true });
    expect(r.code).toBe(1);
    expect(r.err).toContain("aider needs Python 3.10 or newer; this sandbox has Python 3.8.10");
  });

  test("the package index refused by sbx's proxy: the host refused, the preset to allow (or sbx run aider), nothing half-made left", () => {
    const r = aider({ python: { pipOut: refusedPip("pypi.org") }, container: true });
    expect(r.code).toBe(1);
    expect(r.err).toContain("sbx: pip could not reach the package index: sbx's proxy refused pypi.org. On the host: `sbx allow --preset pypi --sandbox demo` (or start it with `sbx run aider demo`, which allows it), then run aider again.");
    expect(r.err).toContain("pip's whole output: ~/.local/share/sbx/aider-pip.log");
    expect(r.err).not.toContain("WARNING: Retrying");
    expect(Bun.spawnSync(["test", "-e", join(r.home, ".local/share/sbx/aider")]).exitCode).toBe(1);
    expect(Bun.file(join(r.home, ".local/share/sbx/aider-pip.log")).size).toBeGreaterThan(0);
  });

  test("a mirror's host refused (the person's pip settings name it): that host to allow, not PyPI's preset", () => {
    const r = aider({ python: { pipOut: refusedPip("pypi.mirror.corp.example") }, container: true });
    expect(r.err).toContain("sbx's proxy refused pypi.mirror.corp.example. On the host: `sbx allow pypi.mirror.corp.example --sandbox demo`, then run aider again.");
  });

  test("a host named like PyPI's but not under it is not taken for PyPI (evilpypi.org)", () => {
    const r = aider({ python: { pipOut: refusedPip("evilpypi.org") }, container: true });
    expect(r.err).toContain("`sbx allow evilpypi.org --sandbox demo`");
    expect(r.err).not.toContain("--preset pypi");
  });

  test("any other pip failure: the end of pip's own output, and where the rest is", () => {
    const r = aider({ python: { pipOut: "ERROR: something else went wrong" }, container: true });
    expect(r.err).toContain("ERROR: something else went wrong\nsbx: installing aider-chat failed (the end of pip's output above)");
  });

  test("a Python with its venv module: installed once, then aider runs with sbx's instruction file and the caller's arguments", () => {
    const r = aider({ python: {}, container: true }, ["--message", "hi"]);
    expect(r.code).toBe(0);
    expect(r.err).toBe("sbx: installing aider-chat into ~/.local/share/sbx/aider (once per sandbox)\n");
    expect(r.out.trim()).toBe(`aider --read ${r.home}/.config/sbx/AGENTS.md --message hi`);
  });
});

describe("plain-output: an agent that writes colour codes to stderr whatever NO_COLOR says (OpenCode)", () => {
  /** As OpenCode 1.18 does on a pipe: its answer on stdout, SGR codes around its UI lines on stderr; stdin read; exit 3. */
  function colourful(path: string): void {
    writeFileSync(path, `#!/bin/sh\nread line; printf 'answer:%s\\n' "$line"\nprintf '\\033[0m\\n> build \\033[1;32mok\\033[0m\\n' >&2\nexit 3\n`);
    chmodSync(path, 0o755);
  }
  function run(env: Record<string, string>) {
    const cached = join(tmp, `oc-${Math.random().toString(36).slice(2)}`);
    colourful(cached);
    const bin = join(tmp, `bin-oc-${Math.random().toString(36).slice(2)}`);
    mkdirSync(bin);
    writeFileSync(join(bin, "opencode"), renderLauncher({ agent: "opencode", cached, node: null, binDir: bin }));
    chmodSync(join(bin, "opencode"), 0o555);
    const r = Bun.spawnSync([join(bin, "opencode"), "run", "q"], { env: { PATH: `${bin}:/usr/bin:/bin`, HOME: tmp, ...env }, stdin: Buffer.from("hello\n"), stdout: "pipe", stderr: "pipe" });
    return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
  }

  test("NO_COLOR set and stderr a pipe: no escape codes on stderr; stdout, stdin and the exit status as the agent's", () => {
    const r = run({ NO_COLOR: "1", TERM: "dumb" });
    expect(r.err).toBe("\n> build ok\n");
    expect(r.out).toBe("answer:hello\n");
    expect(r.code).toBe(3);
  });

  test("without NO_COLOR (output to a terminal, or FORCE_COLOR kept): stderr exactly as the agent wrote it", () => {
    const r = run({ TERM: "xterm-256color" });
    expect(r.err).toBe("\x1b[0m\n> build \x1b[1;32mok\x1b[0m\n");
    expect(r.out).toBe("answer:hello\n");
    expect(r.code).toBe(3);
  });

  test("only OpenCode's launcher filters; the others exec the agent as it is", () => {
    for (const a of AGENT_NAMES) expect(renderLauncher({ agent: a, cached: "/x", node: null, binDir: "/b" }).includes("sbx_run()")).toBe(a === "opencode");
  });
});


describe("unattended flags go only with a run that acts", () => {
  test("each agent's own --version form (and --help) asks about itself: no flags beside it, as outside a sandbox", () => {
    for (const n of AGENT_NAMES) expect(asksAboutItself(AGENTS[n].version)).toBe(true);
    expect(asksAboutItself(["--help"])).toBe(true);
    expect(asksAboutItself(["-h"])).toBe(true);
  });

  test.each([[[]], [["--version", "-p", "rm -rf it"]], [["-p", "--version"]], [["--resume", "--version"]], [["fix --version"]], [["-v"]], [["--version="]]])(
    "%j is a run (flags kept)",
    (args) => {
      expect(asksAboutItself(args)).toBe(false);
    },
  );
});
