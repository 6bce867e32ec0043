// The CLI is argv → one daemon call → render: no verb reaches (statically or through `await import`) the store, the
// sandbox service, drivers, backends, guards, policy or the daemon, except the wire types and the exceptions named here.
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "../../..");
const FORBIDDEN = /^src\/(store|sandboxes|drivers|backend|daemon|proxy|bridge|sync|policy|guards|ui|chat|llm)\//;

/** What the CLI may use of those dirs: the wire and the fast attach path. */
const ALLOWED = new Set([
  "src/daemon/protocol.ts", // the control socket's wire shapes
  "src/daemon/exec-types.ts", // the exec stream's content type
  "src/drivers/docker/engine-exec.ts", // the fast path's fallback for a container with no exec agent (Engine API exec)
  "src/drivers/docker/start-line.ts", // the shell line that fallback's command starts through, as a session's does
]);

/** Verbs that are not "one daemon call", and why; each may reach only the modules listed (a prefix ends in /). */
const EXCEPTIONS: Record<string, { why: string; may: string[] }> = {
  "daemon.ts": { why: "`sbx daemon` is the daemon, in the foreground", may: ["src/"] },
  "service.ts": {
    why: "installs the daemon's own unit (and the macOS root kit) before any daemon runs",
    may: ["src/drivers/", "src/store/", "src/os-service/"],
  },
  "doctor.ts": { why: "diagnoses the host, including when the daemon cannot start, and names the token the bridge would send each remote (the bridge's own naming rules)", may: ["src/drivers/", "src/store/", "src/sync/", "src/bridge/"] },
  "demo.ts": { why: "runs its own throwaway sbx and servers, driving sbx only through its CLI", may: ["src/drivers/"] },
  "chat.ts": {
    why: "checks the bot's key with the Zulip server (the bot's own client), or the Slack token (auth.test) or the webhook (a signed ping), then writes chat.json or approvals.json (the daemon reloads it)",
    may: [
      "src/chat/config.ts",
      "src/chat/check.ts",
      "src/chat/zulip.ts",
      "src/chat/private-file.ts",
      "src/chat/channels-config.ts",
      "src/chat/channels-setup.ts",
      "src/chat/slack-api.ts",
      "src/chat/outbox.ts",
      "src/chat/post.ts",
      "src/chat/signing.ts",
    ],
  },
  "ui.ts": { why: "opens the launch page the daemon's link points at", may: ["src/ui/launch.ts"] },
};

function tsFiles(d: string): string[] {
  return readdirSync(d).flatMap((n) => {
    const p = join(d, n);
    return statSync(p).isDirectory() ? tsFiles(p) : p.endsWith(".ts") ? [p] : [];
  });
}

/** Relative imports of a file, static and dynamic, resolved to files. */
function importsOf(file: string): string[] {
  const src = readFileSync(file, "utf8");
  const out: string[] = [];
  for (const m of src.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)["'](\.{1,2}\/[^"']+)["']/g)) {
    const p = resolve(dirname(file), m[1]!);
    const hit = [p, `${p}.ts`, join(p, "index.ts")].find((c) => existsSync(c) && statSync(c).isFile());
    if (hit) out.push(hit);
  }
  return out;
}

/** Every module a file reaches, with the chain that reaches it. */
function reach(start: string): Map<string, string[]> {
  const chains = new Map<string, string[]>([[start, [start]]]);
  const queue = [start];
  while (queue.length > 0) {
    const f = queue.shift()!;
    for (const d of importsOf(f)) {
      if (chains.has(d)) continue;
      chains.set(d, [...chains.get(f)!, d]);
      queue.push(d);
    }
  }
  return chains;
}

const rel = (f: string) => relative(ROOT, f);

describe("the CLI's import boundary", () => {
  const verbs = readdirSync(join(ROOT, "src/cli/commands")).filter((n) => n.endsWith(".ts") && !n.startsWith("_"));

  for (const verb of verbs) {
    test(`${verb} reaches no store, service, driver, backend, guard, policy or daemon module`, () => {
      const ex = EXCEPTIONS[verb];
      const bad: string[] = [];
      for (const [file, chain] of reach(join(ROOT, "src/cli/commands", verb))) {
        const r = rel(file);
        if (!FORBIDDEN.test(r) || ALLOWED.has(r)) continue;
        if (ex?.may.some((m) => (m.endsWith("/") ? r.startsWith(m) : r === m))) continue;
        bad.push(chain.map(rel).join(" → "));
      }
      expect(bad).toEqual([]);
    });
  }

  test("the boundary check sees through `await import()` (it would catch a verb that loads the store lazily)", () => {
    const chains = reach(join(ROOT, "src/cli/commands/daemon.ts"));
    expect([...chains.keys()].map(rel)).toContain("src/store/store.ts");
  });

  test("every exception names a verb that exists and says why", () => {
    for (const [verb, ex] of Object.entries(EXCEPTIONS)) {
      expect(verbs).toContain(verb);
      expect(ex.why.length).toBeGreaterThan(10);
    }
  });
});
