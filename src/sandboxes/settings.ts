// What a sandbox may use and reach, kept in its identity and changed under its lock: `sbx limits`, `sbx port`,
// `sbx publish` (host services its proxy may reach) and `sbx bridge` (what its git/gh may do).
import { SbxError } from "../core/errors";
import type { Sandbox } from "../core/schemas";
import { nextPorts, parsePortSpec, portsOf, type PortForward, type PortState } from "../core/ports";
import { parsePublished, publishedOf } from "../core/egress";
import { BRIDGE_ALLOWS, BridgeSettingsSchema, bridgeSettingsOf, REF_PATTERN, REMOTE_NAME, type BridgeAllow, type BridgeSettings } from "../core/bridge-settings";
import { defaultLimits, limitHits, parseCpus, parseMemory, parsePids, type Limits, type LimitsInput } from "../core/limits";
import { hostGitEnv, HOST_GIT_SAFE } from "../sync/git-argv";
import { formatBudget, parseBudget } from "../core/llm-budget";
import { LlmBudgets } from "../llm/budget";
import { priceReader } from "../sys/config-file";
import type { ServiceView } from "../core/services";
import type { ServiceContext } from "./context";
import type { LimitsReport, Named } from "./requests";

/**
 * `sbx limits NAME [--memory …] [--cpus …] [--pids …]`: shows a sandbox's limits and what it ran into, or changes
 * them: stored, then applied at once to what exists (a stopped sandbox has them when it starts). A sandbox made
 * before limits existed starts from the defaults.
 */
export async function sandboxLimits(c: ServiceContext, name: string, w: Named & { set?: LimitsInput }): Promise<LimitsReport> {
  const { repo, row, driver } = await c.locate(name, w);
  const { llmBudget, ...set } = w.set ?? {};
  const given = Object.entries(set).filter(([, v]) => v !== undefined);
  if (given.length === 0 && llmBudget === undefined) {
    const counters = await driver.counters(driver.spec(row)).catch(() => null);
    return { name, limits: c.limitsOf(row), hits: counters === null ? null : limitHits(null, counters), llm: llmSpend(c, row) };
  }
  const lock = await c.lockLive(row, w.out);
  try {
    if (llmBudget !== undefined) setLlmBudget(c, row.id, name, llmBudget);
    const fresh = c.d.store.getSandbox(row.id) ?? row;
    if (given.length === 0) return { name, limits: c.limitsOf(fresh), hits: null, llm: llmSpend(c, fresh) };
    const cap = c.capacity;
    const next: Limits = { ...(c.limitsOf(fresh) ?? defaultLimits(cap)) };
    if (set.memory !== undefined) next.memory = parseMemory(set.memory, cap);
    if (set.cpus !== undefined) next.cpus = parseCpus(set.cpus, cap);
    if (set.pids !== undefined) next.pids = parsePids(set.pids);
    const updated: Sandbox = { ...fresh, identity: { ...fresh.identity, limits: next } };
    const spec = driver.spec(updated);
    // Applied first: a value the kernel refuses (memory below what the sandbox uses now) is not stored.
    await driver.applyLimits(spec);
    c.d.store.updateIdentity(row.id, updated.identity);
    c.d.store.audit({ sandboxId: row.id, kind: "lifecycle", action: "limits", detail: { name, ...next } });
    const running = (await driver.inspect(spec).catch(() => null))?.phase === "running";
    return { name, limits: next, hits: null, applied: running ? "now" : "next-start", llm: llmSpend(c, updated) };
  } finally {
    lock.release();
  }
}

/** A sandbox's LLM spend, priced at the table in force. */
export function llmSpend(c: ServiceContext, row: Sandbox) {
  return new LlmBudgets({ store: c.d.store, prices: priceReader(c.d.paths, c.d.env) }).view(row);
}

/**
 * `--llm-budget`: the sandbox's budget replaced (`none` removes it), read by the LLM handler at its next call. Grants
 * approvals made go with the old budget, and its pending budget approvals are answered: the person has decided.
 */
function setLlmBudget(c: ServiceContext, id: number, name: string, text: string): void {
  const budget = parseBudget(text);
  const { store } = c.d;
  store.write(() => {
    const fresh = store.getSandbox(id);
    if (!fresh) return;
    const { llmBudget: _old, ...rest } = fresh.identity;
    store.updateIdentity(id, budget ? { ...rest, llmBudget: budget } : rest);
    for (const a of store.listApprovals({ state: "pending", sandboxId: id })) if (a.kind === "budget") store.decideApproval(a.id, "allowed", "sbx limits --llm-budget");
  });
  store.audit({ sandboxId: id, kind: "lifecycle", action: "llm-budget", detail: { name, budget: budget ? formatBudget(budget) : null } });
}

/**
 * `sbx port NAME [SPEC…] [--rm PORT…]`: a Docker sandbox's loopback ports reachable from the host at 127.0.0.1,
 * shown, or changed: kept in its identity and applied at once when it runs (a host port that cannot be bound
 * refuses the change, and nothing is kept). User-account sandboxes share the host's loopback: nothing to forward.
 */
export async function sandboxPorts(c: ServiceContext, name: string, w: Named & { add?: string[]; remove?: number[] }): Promise<{ name: string; ports: (PortState | (PortForward & { state: "stopped" }))[]; running: boolean; changed: boolean }> {
  const { row, driver } = await c.locate(name, w);
  if (!driver.caps.portForwards) {
    throw new SbxError("usage", `sandbox ${name} is a ${row.backend} sandbox: its servers listen on this machine's own loopback already`, {
      hint: "Connect to 127.0.0.1:PORT from the host; `sbx port` forwards the ports of Docker sandboxes, which have no network of their own.",
    });
  }
  const add = (w.add ?? []).map((s) => {
    const r = parsePortSpec(s);
    if (!r.ok) throw new SbxError("usage", `sbx port: ${r.reason}`, { hint: "e.g. sbx port NAME 3000, or 8080:3000 (the host's 8080 to the sandbox's 3000)" });
    return r.forward;
  });
  const view = (r: Sandbox) => {
    const live = c.d.host?.portStates?.(r) ?? null;
    return { running: live !== null, ports: live ?? portsOf(r.identity).map((p) => ({ ...p, state: "stopped" as const })) };
  };
  if (add.length === 0 && (w.remove ?? []).length === 0) return { name, ...view(row), changed: false };
  const lock = await c.lockLive(row, w.out);
  try {
    const fresh = c.d.store.getSandbox(row.id) ?? row;
    const cur = portsOf(fresh.identity);
    // A removal that names no forward is said, never passed over (a mistyped port would look removed).
    const unknown = (w.remove ?? []).filter((n) => !cur.some((p) => p.port === n || p.host === n));
    if (unknown.length > 0) {
      throw new SbxError("not_found", `sbx port --rm: sandbox ${name} forwards no port ${unknown.join(", ")}; nothing changed`, { hint: `\`sbx port ${name}\` lists what it forwards.` });
    }
    const next = nextPorts(cur, add, w.remove ?? []);
    const changed = JSON.stringify(next) !== JSON.stringify(cur);
    if (!changed) return { name, ...view(fresh), changed };
    const applied = (await c.d.host?.ports?.(fresh, next)) ?? null;
    const failed = (applied ?? []).filter((p) => p.state === "error" && add.some((a) => a.host === p.host));
    if (failed.length > 0) {
      await c.d.host?.ports?.(fresh, cur);
      throw new SbxError("unavailable", `sbx port: ${failed.map((p) => p.error).join("; ")}; nothing changed`, { hint: `Choose another host port: sbx port ${name} OTHER:${failed[0]!.port}` });
    }
    const updated = { ...fresh.identity, ports: next };
    c.d.store.updateIdentity(row.id, updated);
    c.d.store.audit({ sandboxId: row.id, kind: "lifecycle", action: "port", detail: { name, ports: next } });
    return { name, ...view({ ...fresh, identity: updated }), changed };
  } finally {
    lock.release();
  }
}

/**
 * `sbx publish NAME [ENDPOINT…]`: the services of the host (a loopback address and port each) this sandbox's proxy
 * may connect to, shown, or changed and kept in its identity, where the proxy reads them at each request. The
 * host's loopback is reachable no other way. Adding one answers the sandbox's pending approvals for it.
 */
export async function sandboxPublish(c: ServiceContext, name: string, w: Named & { add?: string[]; remove?: string[] }): Promise<{ name: string; published: string[]; changed: boolean; answered: number }> {
  const { repo, row } = await c.locate(name, w);
  const parse = (raw: string) => {
    const r = parsePublished(raw);
    if (!r.ok) throw new SbxError("usage", `sbx publish: ${r.reason}`, { hint: "e.g. sbx publish NAME 5432 (the host's 127.0.0.1:5432), or 127.0.0.2:8443, [::1]:6379" });
    return r.endpoint;
  };
  const add = (w.add ?? []).map(parse);
  const remove = (w.remove ?? []).map(parse);
  if (add.length === 0 && remove.length === 0) return { name, published: publishedOf(row.identity), changed: false, answered: 0 };
  const lock = await c.lockLive(row, w.out);
  try {
    return c.d.store.write(() => {
      const fresh = c.d.store.getSandbox(row.id) ?? row;
      const cur = publishedOf(fresh.identity);
      const unknown = remove.filter((e) => !cur.includes(e));
      if (unknown.length > 0) {
        throw new SbxError("not_found", `sbx publish --remove: sandbox ${name} does not reach ${unknown.join(", ")}; nothing changed`, { hint: `\`sbx publish ${name}\` lists what it reaches.` });
      }
      const next = [...new Set([...cur.filter((e) => !remove.includes(e)), ...add])].sort();
      const changed = JSON.stringify(next) !== JSON.stringify(cur);
      if (changed) {
        c.d.store.updateIdentity(row.id, { ...fresh.identity, publish: next });
        c.d.store.audit({ sandboxId: row.id, kind: "allowlist", action: "publish", detail: { name, added: add, removed: remove, published: next } });
      }
      // What this sandbox was refused for those services, answered.
      const endpoint = (host: string, port: number) => {
        const r = parsePublished(`[${host}]:${port}`);
        return r.ok ? r.endpoint : null;
      };
      const pending = c.d.store.listApprovals({ state: "pending", sandboxId: row.id }).filter((a) => a.kind === "egress" && add.includes(endpoint(a.host, a.port) ?? ""));
      for (const a of pending) c.d.store.decideApproval(a.id, "allowed", "cli:publish");
      return { name, published: next, changed, answered: pending.length };
    });
  } finally {
    lock.release();
  }
}

/**
 * `sbx bridge NAME`: the bridge's per-sandbox switches (what its git/gh may do beyond the default), shown, or changed
 * and kept in its identity, where the bridge reads them at each request (no restart).
 */
export async function sandboxBridge(c: ServiceContext, 
  name: string,
  w: Named & { allow?: BridgeAllow[]; disallow?: BridgeAllow[]; protect?: string[]; unprotect?: string[]; addRepos?: string[]; dropRepos?: string[]; pushTo?: string[]; unpushTo?: string[]; prefix?: string; pushRemote?: string },
): Promise<{ name: string; settings: BridgeSettings; changed: boolean }> {
  const { repo, row, driver } = await c.locate(name, w);
  const asked = [w.allow, w.disallow, w.protect, w.unprotect, w.addRepos, w.dropRepos, w.pushTo, w.unpushTo].some((l) => (l?.length ?? 0) > 0) || w.prefix !== undefined || w.pushRemote !== undefined;
  if (!asked) return { name, settings: bridgeSettingsOf(row.identity), changed: false };
  for (const [flag, p] of [...(w.protect ?? []).map((p) => ["--protect", p]), ...(w.pushTo ?? []).map((p) => ["--allow-push", p])] as [string, string][]) {
    if (!REF_PATTERN.test(p)) {
      throw new SbxError("usage", `${flag} ${p}: a branch or tag name (letters, digits, . _ - /) with * for any part of one segment`, { hint: `e.g. ${flag} 'release/*'` });
    }
  }
  if (w.prefix !== undefined && w.prefix !== "" && !BridgeSettingsSchema.shape.prefix.safeParse(w.prefix).success) {
    throw new SbxError("usage", `--branch-prefix ${w.prefix}: one or more name segments ending in '/'`, { hint: "e.g. --branch-prefix agents/claude/ (an empty value puts back sbx/<name>/)" });
  }
  for (const u of w.addRepos ?? []) {
    if (!/^https:\/\/[^\s@/]+\/[^\s@]+$/.test(u)) {
      throw new SbxError("usage", `--allow-repo ${u}: an https URL of a repository, without credentials`, { hint: "e.g. --allow-repo https://github.com/acme/shared-lib" });
    }
  }
  if (w.pushRemote !== undefined && w.pushRemote !== "") {
    if (!REMOTE_NAME.test(w.pushRemote)) throw new SbxError("usage", `--push-remote ${w.pushRemote}: the name of one of the repo's remotes`, { hint: "e.g. git remote add fork https://github.com/you/proj, then --push-remote fork" });
    // runs (as the host user): git -C <repo> config --get remote.<name>.url
    const url = await driver.hostExec(driver.spec(row)).run(["git", ...HOST_GIT_SAFE, "-C", repo, "config", "--get", `remote.${w.pushRemote}.url`], { env: hostGitEnv(), replaceEnv: true, check: false });
    if (url.exitCode !== 0 || url.stdout.trim() === "") {
      throw new SbxError("usage", `--push-remote ${w.pushRemote}: ${repo} has no remote of that name`, { hint: `Add the fork first: git -C ${repo} remote add ${w.pushRemote} <its URL>` });
    }
  }
  const lock = await c.lockLive(row, w.out);
  try {
    // Read and written in one transaction: an approval decided meanwhile (PolicyService.decide) is not lost.
    return c.d.store.write(() => {
    const fresh = c.d.store.getSandbox(row.id) ?? row;
    const cur = bridgeSettingsOf(fresh.identity);
    const allow = new Set(cur.allow);
    for (const a of w.allow ?? []) allow.add(a);
    for (const a of w.disallow ?? []) allow.delete(a);
    const protect = new Set(cur.protect);
    for (const p of w.protect ?? []) protect.add(p);
    for (const p of w.unprotect ?? []) protect.delete(p);
    const repos = new Set(cur.repos);
    for (const u of w.addRepos ?? []) repos.add(u.replace(/\/+$/, "").replace(/\.git$/, ""));
    for (const u of w.dropRepos ?? []) repos.delete(u.replace(/\/+$/, "").replace(/\.git$/, ""));
    const pushTo = new Set(cur.pushTo);
    for (const p of w.pushTo ?? []) pushTo.add(p);
    for (const p of w.unpushTo ?? []) pushTo.delete(p);
    const prefix = w.prefix === undefined ? cur.prefix : w.prefix === "" ? null : w.prefix;
    const pushRemote = w.pushRemote === undefined ? cur.pushRemote : w.pushRemote === "" ? null : w.pushRemote;
    const next: BridgeSettings = { ...cur, allow: BRIDGE_ALLOWS.filter((a) => allow.has(a)), protect: [...protect].sort(), repos: [...repos].sort(), pushTo: [...pushTo].sort(), prefix, pushRemote };
    const changed = JSON.stringify(next) !== JSON.stringify(cur);
    if (changed) {
      c.d.store.updateIdentity(row.id, { ...fresh.identity, bridge: next });
      c.d.store.audit({ sandboxId: row.id, kind: "lifecycle", action: "bridge", detail: { name, ...next } });
    }
    return { name, settings: next, changed };
    });
  } finally {
    lock.release();
  }
}

/** The most of a service's output one `sbx services NAME logs SVC` answers with (its last bytes). */
export const SERVICE_LOG_MAX_BYTES = 1024 * 1024;

/**
 * `sbx services NAME [logs SVC | restart SVC]`: a sandbox's services as its driver finds them (Docker: containers in
 * its network namespace), one's last lines of output, or a restart (under the sandbox's lock, while it runs: a
 * service lives in its namespace). A kind without services says which has them.
 */
export async function sandboxServices(
  c: ServiceContext,
  name: string,
  w: Named & { action: "list" | "logs" | "restart"; service?: string; tail?: number },
): Promise<{ name: string; services: ServiceView[]; logs?: string; restarted?: string }> {
  const { row, driver } = await c.locate(name, w);
  const ops = driver.services;
  if (ops === undefined) {
    if (w.action === "list") return { name, services: [] };
    throw new SbxError("usage", `sandbox ${name} is a ${row.backend} sandbox, which has no services`, { hint: "Services run beside Docker sandboxes (sbx create --service; sbx help databases)." });
  }
  const spec = driver.spec(row);
  const all = await ops.list(spec);
  if (w.action === "list") return { name, services: all };
  const v = all.find((x) => x.name === w.service);
  if (v === undefined) {
    throw new SbxError("not_found", `sandbox ${name} has no service '${w.service ?? ""}'`, { hint: all.length ? `Its services: ${all.map((x) => x.name).join(", ")}.` : `\`sbx services ${name}\` lists them.` });
  }
  if (w.action === "logs") {
    const text = await ops.logs(spec, v, w.tail ?? 200);
    return { name, services: all, logs: text.length > SERVICE_LOG_MAX_BYTES ? text.slice(-SERVICE_LOG_MAX_BYTES) : text };
  }
  const lock = await c.lockLive(row, w.out);
  try {
    if ((await driver.inspect(spec)).phase !== "running") {
      throw new SbxError("usage", `sandbox ${name} is not running, and its service ${v.name} lives in its network namespace`, { hint: `Start it (\`sbx shell ${name}\`, \`sbx exec ${name} -- true\`): its services start with it.` });
    }
    await ops.restart(spec, v);
    c.d.store.audit({ sandboxId: row.id, kind: "lifecycle", action: "service.restart", detail: { name, service: v.name } });
    return { name, services: await ops.list(spec), restarted: v.name };
  } finally {
    lock.release();
  }
}
