// Pure: the ports a Docker sandbox forwards to the host (`sbx port`, `--port`, devcontainer forwardPorts): a port of
// the sandbox's own loopback, reachable from the host at 127.0.0.1:<host>, or at another address of the host only
// when the person wrote that address (`0.0.0.0:8080:3000`, as docker's -p reads it). Kept in the sandbox's identity.
import { canonicalIp, classify } from "./addresses";

export interface PortForward {
  /** The port a server listens on inside the sandbox. */
  port: number;
  /** The host's port it is reachable at. */
  host: number;
  /** The host address it listens on, when the person named one other than 127.0.0.1 (canonical, no brackets). */
  bind?: string;
}

/** The address a forward listens on. */
export const bindOf = (f: Pick<PortForward, "bind">): string => f.bind ?? "127.0.0.1";

/** `127.0.0.1:3000`, `[::1]:3000`: where the host reaches a forward. */
export function hostEndpoint(f: Pick<PortForward, "bind" | "host">): string {
  const a = bindOf(f);
  return `${a.includes(":") ? `[${a}]` : a}:${f.host}`;
}

/** Whether other machines may reach it (an address that is not loopback: the person asked for that). */
export function reachableBeyondLoopback(f: Pick<PortForward, "bind">): boolean {
  return f.bind !== undefined && classify(f.bind) !== "loopback";
}

/** A forward as it runs: listening, or why not. */
export interface PortState extends PortForward {
  state: "forwarding" | "error";
  error?: string;
}

const isPort = (n: number) => Number.isInteger(n) && n >= 1 && n <= 65535;

/**
 * `3000` (the same port on the host), `8080:3000` (host 8080 → sandbox 3000), or `ADDR:8080:3000` (the host's ADDR:
 * `0.0.0.0`, `192.168.1.5`, `[::]`), as docker's -p reads them. Without an address, 127.0.0.1.
 */
export function parsePortSpec(s: string): { ok: true; forward: PortForward } | { ok: false; reason: string } {
  const text = s.trim();
  const withAddress = /^(\[[^\]]*\]|\d+\.\d+\.\d+\.\d+):(\d{1,5}):(\d{1,5})$/.exec(text);
  const m = withAddress ? [text, withAddress[2], withAddress[3]] : /^(?:(\d{1,5}):)?(\d{1,5})$/.exec(text);
  if (!m) return { ok: false, reason: `'${s}' is not a port (3000), a host:sandbox pair (8080:3000) or ADDRESS:host:sandbox (0.0.0.0:8080:3000)` };
  const port = Number(m[2]);
  const host = m[1] === undefined ? port : Number(m[1]);
  if (!isPort(port) || !isPort(host)) return { ok: false, reason: `'${s}': ports are 1-65535` };
  if (!withAddress) return { ok: true, forward: { port, host } };
  const bind = canonicalIp(withAddress[1]!.replace(/^\[(.*)\]$/, "$1"));
  if (bind === null) return { ok: false, reason: `'${s}': ${withAddress[1]} is not an IP address (e.g. 0.0.0.0, 192.168.1.5, [::])` };
  return { ok: true, forward: bind === "127.0.0.1" ? { port, host } : { port, host, bind } };
}

/** The forwards an identity holds (anything malformed left out). */
export function portsOf(identity: Record<string, unknown>): PortForward[] {
  const raw = identity.ports;
  if (!Array.isArray(raw)) return [];
  return raw.filter(
    (p): p is PortForward =>
      !!p && typeof p === "object" && isPort((p as PortForward).port) && isPort((p as PortForward).host) && ((p as PortForward).bind === undefined || canonicalIp(String((p as PortForward).bind)) === (p as PortForward).bind),
  );
}

/** `list` with `add` put in (a host port taken again moves to the new sandbox port) and `remove` (sandbox or host ports) taken out, sorted. */
export function nextPorts(list: readonly PortForward[], add: readonly PortForward[], remove: readonly number[]): PortForward[] {
  const kept = list.filter((p) => !remove.includes(p.port) && !remove.includes(p.host) && !add.some((a) => a.host === p.host));
  return [...kept, ...add].sort((a, b) => a.host - b.host);
}
