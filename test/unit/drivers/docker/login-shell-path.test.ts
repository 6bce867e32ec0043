// The login-shell snippets put the shims first on PATH (Debian's /etc/profile resets it): golden text, and each run by a real sh and fish.
import { describe, expect, test } from "bun:test";
import { fishProfileSnippet, shProfileSnippet } from "../../../../src/drivers/docker/args";

const has = (c: string) => Bun.spawnSync(["sh", "-c", `command -v ${c}`], { stdout: "ignore" }).exitCode === 0;

describe("login-shell PATH snippets", () => {
  test("golden: sh", () => {
    expect(shProfileSnippet("/opt/sbx/shims")).toBe(
      [
        "# sbx (mounted read-only): the git/gh shims first on PATH, so network git goes through the host's bridge.",
        'case "$PATH" in',
        "  /opt/sbx/shims:*) ;;",
        '  *) PATH="/opt/sbx/shims:$PATH" ;;',
        "esac",
        "# The agent launchers (sbx run AGENT), after the image's own dirs.",
        'case ":$PATH:" in',
        "  *:/opt/sbx/agents/bin:*) ;;",
        '  *) PATH="$PATH:/opt/sbx/agents/bin" ;;',
        "esac",
        "export PATH",
        "",
      ].join("\n"),
    );
  });

  test("sh: after a reset PATH the shims come first and the agent launchers last, and sourcing twice adds them once", () => {
    const script = `PATH=/usr/bin:/bin; ${shProfileSnippet()}\n${shProfileSnippet()}\necho "$PATH"`;
    const r = Bun.spawnSync(["sh", "-c", script], { stdout: "pipe" });
    expect(r.stdout.toString().trim()).toBe("/opt/sbx/shims:/usr/bin:/bin:/opt/sbx/agents/bin");
  });

  test.skipIf(!has("fish"))("fish (skipped without fish on the host): the shims come back first even when a later config sets PATH from scratch", () => {
    const script = `${fishProfileSnippet()}\nset -gx PATH /usr/local/bin /usr/bin /bin\necho $PATH`;
    const r = Bun.spawnSync(["fish", "--no-config", "-c", script], { stdout: "pipe", env: { PATH: "/usr/bin:/bin", HOME: "/nonexistent" } });
    expect(r.stdout.toString().trim()).toBe("/opt/sbx/shims /usr/local/bin /usr/bin /bin");
  });
});
