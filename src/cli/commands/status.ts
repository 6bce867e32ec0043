// sbx status: the daemon's health, every sandbox's phase and whether its guards (proxy, bridge, …) are up.
import type { Command } from "commander";
import { ExitCode } from "../../core/errors";
import type { Verb } from "../verb";

type Chat = NonNullable<import("../../daemon/protocol").Status["chat"]>;

function chatLine(ch: Chat, c: { green(s: string): string; red(s: string): string }): string {
  if (!ch.configured) return "not set up (`sbx chat setup zulip …`)";
  const where = ch.stream ? `${ch.provider ?? "zulip"} stream '${ch.stream}' on ${ch.site ?? "?"}` : (ch.provider ?? "zulip");
  if (ch.connected) return `${where}, ${c.green("connected")}`;
  return `${where}, ${c.red("not connected")}${ch.error ? ` (${ch.error})` : ""}`;
}

type Approvals = NonNullable<import("../../daemon/protocol").Status["approvals"]>;
type ChannelState = NonNullable<Approvals["webhook"]>;

/** One line for the webhook or Slack: where it posts and how its deliveries went (the last failure, when there is one). */
function channelLine(s: ChannelState, c: { green(s: string): string; red(s: string): string }, ago: (ms: number) => string): string {
  const counts = `${s.delivered} delivered, ${s.failed} failed${s.dropped ? `, ${s.dropped} dropped (queue full)` : ""}${s.queued ? `, ${s.queued} queued` : ""}`;
  const failing = s.lastError !== undefined && (s.lastOkAt === undefined || (s.lastErrorAt ?? 0) > s.lastOkAt);
  if (!failing) return `${s.target}, ${c.green("ok")} (${counts})`;
  return `${s.target}, ${c.red("failing")} (${counts}; last: ${s.lastError}, ${ago(Date.now() - (s.lastErrorAt ?? Date.now()))} ago)`;
}

/** The lines `sbx status` prints for approvals.json (none when it is not set up). */
function approvalLines(a: Approvals, c: { green(s: string): string; red(s: string): string }, ago: (ms: number) => string): string[] {
  if (!a.configured) return [];
  if (a.error) return [`approvals: ${c.red("not started")} (${a.error})`];
  const out: string[] = [];
  if (a.listener) out.push(`approvals listener: ${a.listener.origin}${a.listener.publicUrl ? ` (public ${a.listener.publicUrl})` : ""}${a.listener.loopbackOnly ? "" : " — reachable from the network"}`);
  else out.push(`approvals listener: ${c.red("not listening")}${a.listenerError ? ` (${a.listenerError})` : ""}`);
  if (a.webhook) out.push(`webhook: ${channelLine(a.webhook, c, ago)}`);
  if (a.slack) out.push(`slack: channel ${channelLine(a.slack, c, ago)}`);
  return out;
}

export const status: Verb = {
  name: "status",
  summary: "show daemon health, sandboxes and their guards",
  declare(cmd: Command) {
    cmd.option("--json", "print JSON");
  },
  async run(ctx, _args, opts) {
    const [{ DaemonClient }, { duration }, { stateOfView: stateOf }] = await Promise.all([import("../../client/client"), import("../../core/time"), import("../../core/sandbox-state")]);
    const client = new DaemonClient(ctx.paths.controlSocket);
    const health = await client.health();
    if (!health) {
      if (opts.json) ctx.render.json({ daemon: null, socket: ctx.paths.controlSocket, log: ctx.paths.daemonLog });
      else {
        ctx.render.out(`daemon: not running (no answer on ${ctx.paths.controlSocket})`);
        ctx.render.info(`hint: start it with \`sbx daemon\`, or \`sbx service install\`; its log is ${ctx.paths.daemonLog}`);
      }
      return ExitCode.unavailable;
    }
    const st = await client.status();
    if (opts.json) {
      // The one word for each sandbox (core/sandbox-state.ts): the store's record and the runtime's phase stay inside.
      const sandboxes = st.sandboxes.map((s) => {
        const { phase: _phase, creating: _creating, ...rest } = s;
        return { ...rest, state: stateOf(s) };
      });
      ctx.render.json({ ...st, sandboxes });
      return ExitCode.ok;
    }
    const { c } = ctx.render;
    ctx.render.out(
      `daemon: ${c.green("running")} pid ${st.daemon.pid}, up ${duration(Date.now() - st.daemon.startedAt)}, v${st.daemon.version}, ` +
        `backends: ${st.backends.join(", ") || "none"}, guards: ${st.guards.join(", ") || "none"}, sessions: ${st.sessions}`,
    );
    // The dashboard's origin only: its launch links come from `sbx ui`, one at a time.
    ctx.render.out(`dashboard: ${st.ui ? `${st.ui.origin} (open it with \`sbx ui\`)` : st.ui === null ? c.red("not running (see the daemon log)") : "not hosted by this daemon"}`);
    if (st.chat) ctx.render.out(`chat: ${chatLine(st.chat, c)}`);
    if (st.approvals) for (const l of approvalLines(st.approvals, c, duration)) ctx.render.out(l);
    if (st.sandboxes.length === 0) {
      ctx.render.out("no sandboxes");
      return ExitCode.ok;
    }
    ctx.render.table(
      ["NAME", "STATE", "GUARDED", "GUARDS", "REPO"],
      st.sandboxes.map((s) => [
        s.name,
        stateOf(s),
        s.guarded ? c.green("yes") : s.state === "active" ? c.red("NO (fenced)") : "no",
        s.guards.map((g) => `${g.name} ${g.ok ? "ok" : g.detail}`).join(", ") + (s.error ? ` — ${s.error}` : ""),
        s.repo,
      ]),
      { GUARDS: "wrap", REPO: "start" },
    );
    // A service that stopped or turned unhealthy while its sandbox runs (it crashed: sbx stops them only with it).
    for (const s of st.sandboxes) {
      if (s.phase !== "running") continue;
      for (const v of s.services ?? []) {
        const trouble = v.state !== "running" ? (v.state === "exited" ? `exited (code ${v.exitCode})` : v.state) : v.health === "unhealthy" ? "unhealthy" : null;
        if (trouble !== null) ctx.render.out(`${c.red(`service ${v.name} of ${s.name} ${trouble}`)}: sbx services ${s.name} logs ${v.name}; sbx services ${s.name} restart ${v.name}`);
      }
    }
    return ExitCode.ok;
  },
};
