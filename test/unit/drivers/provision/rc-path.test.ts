// A guest's rc (bash, zsh: macOS guests; fish), run by the real shell: the shims' dir first on PATH, the agent launchers' dir last, each once however
// often the rc is read.
import { describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { renderShellRc } from "../../../../src/drivers/provision/provision";

describe("bash rc PATH", () => {
  test("shims first, agent launchers last, sourcing twice adds nothing", () => {
    const [, rc] = renderShellRc({ shell: "bash", binDir: "/home/g/bin", env: { A: "1" }, sandbox: "s", lastDir: "/var/lib/sbx/runtime/agents/bin" });
    const script = `PATH=/usr/bin:/bin\n${rc!.content}\n${rc!.content}\necho "$PATH"`;
    const r = Bun.spawnSync(["bash", "--norc", "--noprofile", "-c", script], { stdout: "pipe" });
    expect(r.stdout.toString().trim()).toBe("/home/g/bin:/usr/bin:/bin:/var/lib/sbx/runtime/agents/bin");
  });

  test("without a last dir, PATH gets the shims only", () => {
    const [, rc] = renderShellRc({ shell: "bash", binDir: "/home/g/bin", env: {}, sandbox: "s" });
    const r = Bun.spawnSync(["bash", "--norc", "--noprofile", "-c", `PATH=/usr/bin:/bin\n${rc!.content}\necho "$PATH"`], { stdout: "pipe" });
    expect(r.stdout.toString().trim()).toBe("/home/g/bin:/usr/bin:/bin");
  });
});

const have = (sh: string) => Bun.spawnSync(["sh", "-c", `command -v ${sh}`]).exitCode === 0;

describe.skipIf(!have("zsh"))(`zsh rc PATH (the macOS guests' shell)${have("zsh") ? "" : " (skipped: no zsh here; install.sh installs it)"}`, () => {
  test("shims first, agent launchers last, .zshenv then .zprofile (path_helper's reorder between) adds nothing twice", () => {
    const files = renderShellRc({ shell: "zsh", binDir: "/Users/g/bin", env: { A: "1" }, sandbox: "s", lastDir: "/private/var/sbx/alice/agents/bin" });
    const [zshenv, zprofile] = [files[0]!.content, files[1]!.content];
    const script = `PATH=/usr/bin:/bin\n${zshenv}\nPATH=/usr/local/bin:/usr/bin:/bin:/Users/g/bin:/private/var/sbx/alice/agents/bin\n${zprofile}\necho "$PATH"`;
    const r = Bun.spawnSync(["zsh", "-f", "-c", script], { stdout: "pipe" });
    expect(r.stdout.toString().trim()).toBe("/Users/g/bin:/usr/local/bin:/usr/bin:/bin:/private/var/sbx/alice/agents/bin");
  });
});

describe.skipIf(!have("fish"))(`fish rc PATH${have("fish") ? "" : " (skipped: no fish here)"}`, () => {
  test("shims first, agent launchers last (fish_add_path takes dirs that exist: these do)", () => {
    const d = mkdtempSync(join(tmpdir(), "sbx-fish-rc-"));
    try {
      for (const x of ["bin", "agents"]) mkdirSync(join(d, x));
      const [conf] = renderShellRc({ shell: "fish", binDir: join(d, "bin"), env: {}, sandbox: "s", lastDir: join(d, "agents") });
      writeFileSync(join(d, "sbx.fish"), conf!.content);
      const r = Bun.spawnSync(["fish", "--no-config", "-c", `set -gx PATH /usr/bin /bin; source ${d}/sbx.fish; source ${d}/sbx.fish; string join : $PATH`], { stdout: "pipe", env: { HOME: d, PATH: "/usr/bin:/bin" } });
      expect(r.stdout.toString().trim()).toBe(`${d}/bin:/usr/bin:/bin:${d}/agents`);
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });
});

// A session's options list (the JVM's trust store, sandboxes/secret-env.ts) comes in its environment; the rc runs after
// it (bash -l, every zsh) and must not put the variable back to the sandbox's own, or Java trusts nothing sbx set up.
describe("ca-trusted-inside: the rc keeps what a session added to sbx's JAVA_TOOL_OPTIONS", () => {
  const own = "-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=3128 -Dhttp.nonProxyHosts=localhost|127.*|[::1]|0.0.0.0";
  const added = `${own} -Djavax.net.ssl.trustStore="/run/sbx s/truststore.p12" -Djavax.net.ssl.trustStorePassword=changeit`;
  /** What each case's shell sees after its rc: [inherited value or null, expected]. */
  const cases: [string | null, string][] = [
    [added, added],
    [own, own],
    [null, own],
    // Anything that does not begin with sbx's own (a stale one, another proxy) is put back to sbx's.
    ["-Dhttp.proxyHost=10.0.0.1", own],
    [`${own}x`, own],
    [own.replace("127.*", "127.0"), own],
  ];
  const run = (argv: string[], inherited: string | null, home: string) =>
    Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe", env: { PATH: "/usr/bin:/bin", HOME: home, ...(inherited === null ? {} : { JAVA_TOOL_OPTIONS: inherited }) } });

  test("bash (.bashrc, as bash -l reads it)", () => {
    const [, rc] = renderShellRc({ shell: "bash", binDir: "/home/g/bin", env: { JAVA_TOOL_OPTIONS: own }, sandbox: "s" });
    const d = mkdtempSync(join(tmpdir(), "sbx-rc-jto-"));
    try {
      writeFileSync(join(d, "rc"), rc!.content);
      for (const [inherited, want] of cases) {
        const r = run(["bash", "--norc", "--noprofile", "-c", `. ${d}/rc; printf %s "$JAVA_TOOL_OPTIONS"; bash -c 'printf /%s "$JAVA_TOOL_OPTIONS"'`], inherited, d);
        expect({ inherited, got: r.stdout.toString() }).toEqual({ inherited, got: `${want}/${want}` });
      }
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });

  test.skipIf(!have("zsh"))(`zsh (.zshenv, read by every zsh)${have("zsh") ? "" : " (skipped: no zsh here; install.sh installs it)"}`, () => {
    const [zshenv] = renderShellRc({ shell: "zsh", binDir: "/Users/g/bin", env: { JAVA_TOOL_OPTIONS: own }, sandbox: "s" });
    const d = mkdtempSync(join(tmpdir(), "sbx-rc-jto-"));
    try {
      writeFileSync(join(d, ".zshenv"), zshenv!.content);
      for (const [inherited, want] of cases) {
        const r = run(["zsh", "-c", `printf %s "$JAVA_TOOL_OPTIONS"; sh -c 'printf /%s "$JAVA_TOOL_OPTIONS"'`], inherited, d);
        expect({ inherited, got: r.stdout.toString() }).toEqual({ inherited, got: `${want}/${want}` });
      }
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });

  test.skipIf(!have("fish"))(`fish (conf.d)${have("fish") ? "" : " (skipped: no fish here)"}`, () => {
    const [conf] = renderShellRc({ shell: "fish", binDir: "/home/g/bin", env: { JAVA_TOOL_OPTIONS: own }, sandbox: "s" });
    const d = mkdtempSync(join(tmpdir(), "sbx-rc-jto-"));
    try {
      writeFileSync(join(d, "sbx.fish"), conf!.content);
      for (const [inherited, want] of cases) {
        const r = run(["fish", "--no-config", "-c", `source ${d}/sbx.fish; printf %s "$JAVA_TOOL_OPTIONS"; sh -c 'printf /%s "$JAVA_TOOL_OPTIONS"'`], inherited, d);
        expect({ inherited, got: r.stdout.toString() }).toEqual({ inherited, got: `${want}/${want}` });
      }
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });
});
