// Pure: the ports a Docker sandbox forwards to the host (`sbx port`, `--port`, devcontainer forwardPorts): a port of
// the sandbox's own loopback, reachable from the host at 127.0.0.1:<host>. Kept in the sandbox's identity.

export interface PortForward {
  /** The port a server listens on inside the sandbox. */
  port: number;
  /** The host's 127.0.0.1 port it is reachable at. */
  host: number;
}

/** A forward as it runs: listening, or why not. */
export interface PortState extends PortForward {
  state: "forwarding" | "error";
  error?: string;
}

const isPort = (n: number) => Number.isInteger(n) && n >= 1 && n <= 65535;

/** `3000` (the same port on the host) or `8080:3000` (host 8080 → sandbox 3000), as docker's -p reads them. */
export function parsePortSpec(s: string): { ok: true; forward: PortForward } | { ok: false; reason: string } {
  const m = /^(?:(\d{1,5}):)?(\d{1,5})$/.exec(s.trim());
  if (!m) return { ok: false, reason: `'${s}' is not a port (3000) or a host:sandbox pair (8080:3000)` };
  const port = Number(m[2]);
  const host = m[1] === undefined ? port : Number(m[1]);
  if (!isPort(port) || !isPort(host)) return { ok: false, reason: `'${s}': ports are 1-65535` };
  return { ok: true, forward: { port, host } };
}

/** The forwards an identity holds (anything malformed left out). */
export function portsOf(identity: Record<string, unknown>): PortForward[] {
  const raw = identity.ports;
  if (!Array.isArray(raw)) return [];
  return raw.filter((p): p is PortForward => !!p && typeof p === "object" && isPort((p as PortForward).port) && isPort((p as PortForward).host));
}

/** `list` with `add` put in (a host port taken again moves to the new sandbox port) and `remove` (sandbox or host ports) taken out, sorted. */
export function nextPorts(list: readonly PortForward[], add: readonly PortForward[], remove: readonly number[]): PortForward[] {
  const kept = list.filter((p) => !remove.includes(p.port) && !remove.includes(p.host) && !add.some((a) => a.host === p.host));
  return [...kept, ...add].sort((a, b) => a.host - b.host);
}
