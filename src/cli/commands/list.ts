// sbx list: the sandboxes sbx knows, with their state and whether their clones hold commits the host lacks
import type { Command } from "commander";
import { ExitCode } from "../../core/errors";
import { formatBytes } from "../../core/limits";
import { STATE_MEANINGS } from "../../core/sandbox-state";
import type { Verb } from "../verb";

export const list: Verb = {
  name: "list",
  aliases: ["ls"],
  summary: "list sandboxes",
  declare(cmd: Command) {
    cmd
      .option("--all", "include deleted sandboxes")
      .option("--json", "print JSON")
      .addHelpText("after", ["", "STATE is one of (the same words in `sbx status`, --json, the dashboard and chat):", ...Object.entries(STATE_MEANINGS).map(([w, m]) => `  ${w.padEnd(9)} ${m}`), "", "POLICY is its egress level: locked, balanced, open, or default (the built-in list); `sbx policy show NAME`."].join("\n"));
  },
  async run(ctx, _args, opts) {
    // Loaded here, not at the top: `sbx --help` and `--version` must not pay for them.
    const [{ daemon, outOf }, { stateOfListed: stateOf }, { spendLine }] = await Promise.all([import("../../client/sandboxes"), import("../../core/sandbox-state"), import("../../core/llm-budget")]);
    const { sandboxes: items } = await (await daemon(ctx)).lifecycle("list", { all: opts.all === true }, outOf(ctx));
    const isGuarded = (i: { guarded: boolean }) => i.guarded;
    // A sandbox whose state could not be read (the engine down, a kind that cannot run here) is shown as unknown,
    // never as absent, and the exit status says so (69).
    const unread = items.filter((i) => stateOf(i) === "unknown" && i.reason !== undefined);
    const code = unread.length > 0 ? ExitCode.unavailable : ExitCode.ok;
    for (const i of unread) ctx.render.info(`${i.name}: state unknown: ${i.reason}`);
    if (opts.json) {
      ctx.render.json(
        items.map((i) => ({
          name: i.name,
          repo: i.repo,
          backend: i.backend,
          state: stateOf(i),
          createdAt: i.createdAt,
          lastUsedAt: i.lastUsedAt,
          guarded: isGuarded(i),
          level: i.level ?? null,
          unsyncedCommits: i.unsynced === null ? null : i.unsynced.length,
          unsynced: i.unsynced,
          ...(i.reason !== undefined ? { reason: i.reason } : {}),
          ...(i.guardError !== undefined ? { guardError: i.guardError } : {}),
          ...(i.limits ? { limits: i.limits } : {}),
          ...(i.hits ? { hits: i.hits } : {}),
          ...(i.notes ? { notes: i.notes } : {}),
          ...(i.llm ? { llm: i.llm } : {}),
        })),
      );
      return code;
    }
    if (items.length === 0) {
      ctx.render.info("no sandboxes; create one with `sbx create <name>` in a repo");
      return 0;
    }
    // What a person should know beside the state: a limit it ran into, why it stopped when sbx did not stop it, or why
    // it failed.
    const note = (i: (typeof items)[number]): string => {
      if (i.phase !== "unknown" && i.reason !== undefined) return i.reason;
      if (i.guardError !== undefined && stateOf(i) === "failed") return `its guards did not come up: ${i.guardError}`;
      const hit = (i.hits ?? []).map((h) =>
        h.limit === "memory"
          ? `memory limit${i.limits?.memory ? ` (${formatBytes(i.limits.memory)})` : ""} hit: ${h.count} killed`
          : `pids limit${i.limits?.pids ? ` (${i.limits.pids})` : ""} hit: ${h.count} forks refused`,
      );
      return hit.join("; ");
    };
    const notes = items.map(note);
    const withNotes = notes.some((n) => n !== "");
    ctx.render.table(
      ["NAME", "REPO", "STATE", "GUARDS", "POLICY", "CREATED", "LAST USED", "UNSYNCED", "LLM SPEND", ...(withNotes ? ["NOTE"] : [])],
      items.map((i, n) => [
        i.name,
        i.repo,
        stateOf(i),
        i.state === "deleted" ? "-" : isGuarded(i) ? "up" : "down",
        // No level: the built-in list (sbx policy show NAME says what it holds).
        i.level ?? "default",
        ctx.render.when(i.createdAt),
        ctx.render.when(i.lastUsedAt),
        i.unsynced === null ? "?" : i.unsynced.length === 0 ? "-" : `${i.unsynced.length} commit(s)`,
        i.llm ? spendLine(i.llm) : "-",
        ...(withNotes ? [notes[n] || "-"] : []),
      ]),
      { REPO: "start", NOTE: "wrap" },
    );
    for (const i of items) for (const line of i.notes ?? []) ctx.render.info(line);
    return code;
  },
};
