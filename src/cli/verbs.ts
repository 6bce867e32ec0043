// The command table: every verb sbx has, in the order `sbx --help` lists them.
import type { Verb } from "./verb";
import { agents } from "./commands/agents";
import { allow } from "./commands/allow";
import { allowlist } from "./commands/allowlist";
import { approvals } from "./commands/approvals";
import { attach } from "./commands/attach";
import { bridge } from "./commands/bridge";
import { chat } from "./commands/chat";
import { code } from "./commands/code";
import { complete } from "./commands/complete";
import { completion } from "./commands/completion";
import { create } from "./commands/create";
import { daemon } from "./commands/daemon";
import { demo } from "./commands/demo";
import { deny } from "./commands/deny";
import { doctor } from "./commands/doctor";
import { exec } from "./commands/exec";
import { init } from "./commands/init";
import { limits } from "./commands/limits";
import { list } from "./commands/list";
import { logs } from "./commands/logs";
import { prune } from "./commands/prune";
import { rebuild } from "./commands/rebuild";
import { publish } from "./commands/publish";
import { port } from "./commands/port";
import { policy } from "./commands/policy";
import { ps } from "./commands/ps";
import { rm } from "./commands/rm";
import { run } from "./commands/run";
import { secret } from "./commands/secret";
import { service } from "./commands/service";
import { services } from "./commands/services";
import { shell } from "./commands/shell";
import { status } from "./commands/status";
import { stop } from "./commands/stop";
import { ui } from "./commands/ui";

export const verbs: readonly Verb[] = [
  create, shell, attach, code, run, exec, agents, list, limits, rebuild, stop, rm, prune, init,
  allow, deny, allowlist, approvals, publish, port, bridge, logs,
  daemon, service, services, status, ps, secret, policy,
  ui, chat, demo, doctor, completion, complete,
];
