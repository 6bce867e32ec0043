// A new sandbox's package mirrors: what the host's npm, pip, Go and cargo settings name, read at create through the
// copy-in door (secrets/host-mirrors.ts), kept in the sandbox's identity, given to each session (secret-env.ts), and
// said once: what was carried, what stayed on the host and the command that does it sbx's way, which hosts they need.
import { compilePolicy, decide } from "../core/egress";
import { mirrorDelivery, mirrorHosts, MirrorsSchema, presetOf, type Mirrors } from "../core/mirrors";
import type { Sandbox } from "../core/schemas";
import type { SandboxSpec } from "../core/spec";
import { hostKeySources, hostSecretsByName } from "../llm/keys";
import { policyFor } from "../policy/service";
import { CopyIn, findingLines } from "../secrets/copy-in";
import { readHostMirrors, scanMirrors } from "../secrets/host-mirrors";
import type { ServiceDeps } from "./requests";

/** The mirrors a sandbox's identity keeps (none: made before mirrors were carried, or the host names none). */
export function mirrorsOf(row: Sandbox): Mirrors | null {
  const r = MirrorsSchema.safeParse(row.identity.mirrors);
  return r.success && r.data.settings.length > 0 ? r.data : null;
}

/**
 * Reads the host's settings now (the daemon's environment, the person's files) for a sandbox about to be made: the
 * mirrors to keep in its identity, and the lines to say (what was left on the host, with the way to do it).
 */
export function hostMirrorsFor(d: Pick<ServiceDeps, "env" | "paths">, name: string): { mirrors: Mirrors | null; lines: string[] } {
  const env = d.env;
  let plan;
  try {
    plan = readHostMirrors({ env: env.raw, home: env.vars.HOME, platform: env.platform, uid: env.uid, outside: [d.paths.sandboxRoot, d.paths.runtimeDir] });
  } catch (e) {
    // The sandbox is made either way: without mirrors, said.
    return { mirrors: null, lines: [`note: package mirror settings were not read: ${(e as Error).message}`] };
  }
  const door = new CopyIn(hostSecretsByName(hostKeySources(env, d.paths.configDir)), { home: env.vars.HOME });
  const mirrors = scanMirrors(plan, door);
  const lines: string[] = [];
  for (const n of plan.notes) lines.push(`note: package mirror: ${n.from}${n.key ? ` ${n.key}` : ""}: ${n.why}${n.hint ? `; instead: ${n.hint.replaceAll("sbx publish NAME", `sbx publish ${name}`)}` : ""}`);
  const found = findingLines(door.findings, door.count);
  if (found.length > 0) lines.push(`note: package mirror settings not carried, they held a secret: ${found.join("; ")}`);
  return { mirrors: mirrors.settings.length > 0 ? mirrors : null, lines };
}

/** `host` or `host:port` (an allowlist pattern) as host and port; a bare one is HTTPS's. */
function hostPort(pattern: string): { host: string; port: number } {
  const m = /^(.*):(\d+)$/.exec(pattern);
  return m && !m[1]!.endsWith(":") ? { host: m[1]!.replace(/^\[|\]$/g, ""), port: Number(m[2]) } : { host: pattern, port: 443 };
}

/**
 * What the person is told once the sandbox exists: each setting carried, and the hosts they need that its allowlist
 * does not allow yet, with the command that allows them.
 */
export function mirrorLines(d: Pick<ServiceDeps, "store">, row: Sandbox, spec: Pick<SandboxSpec, "env" | "options">, seedsHome: boolean): string[] {
  const m = mirrorsOf(row);
  if (m === null) return [];
  const lines: string[] = [];
  const carried = m.settings.map((s) => (spec.env[s.key] !== undefined && s.via === "env" ? `${s.key}: ${row.name}'s own setting kept` : `${s.tool} ${s.key}=${s.value} (${s.from})`));
  lines.push(`package mirrors from this machine, for ${row.name}: ${carried.join("; ")}`);
  // cargo takes crates.io's replacement from a config file only: a container's home gets it when made (docker.ts seed).
  const cargo = mirrorDelivery(m).cargoToml;
  if (cargo !== null && !seedsHome) {
    lines.push(`note: cargo reads a mirror of crates.io from a config file only, which sbx writes into Docker sandboxes alone: inside ${row.name}, put this in ~/.cargo/config.toml: ${cargo.split("\n").filter((l) => l !== "" && !l.startsWith("#")).join(" / ")}`);
  }
  const policy = compilePolicy(policyFor(d.store, row.id));
  const missing = mirrorHosts(m).filter((h) => {
    const { host, port } = hostPort(h.host);
    return !decide(policy, host, port).allow;
  });
  if (missing.length > 0) {
    const presets = [...new Set(missing.map((h) => presetOf(h.tool)))].map((p) => `--preset ${p}`).join(" or ");
    lines.push(`the mirrors' hosts are not allowed for ${row.name} yet: sbx allow ${missing.map((h) => h.host).join(" ")} --sandbox ${row.name} (sbx allow ${presets} offers them too, in place of the public registry)`);
  }
  return lines;
}
