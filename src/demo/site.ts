// The demo's HTTPS test sites: tiny Bun servers on loopback addresses, with the run's self-signed certificate.
import type { SiteCert } from "./cert";

export interface DemoSite {
  /** The loopback address it listens on. */
  ip: string;
  port: number;
  url: string;
  /** `ip:port`, the allowlist pattern that names exactly this site. */
  pattern: string;
  /** How many requests reached it (the proxy let them through). */
  hits(): number;
  stop(): Promise<void>;
}

/** Starts an HTTPS site on `ip` (any port) that answers every request with `greeting`. */
export function startSite(ip: string, cert: SiteCert, greeting: string): DemoSite {
  let hits = 0;
  const server = Bun.serve({
    hostname: ip,
    port: 0,
    tls: { cert: cert.certPem, key: cert.keyPem },
    fetch() {
      hits++;
      return new Response(`${greeting}\n`, { headers: { "content-type": "text/plain" } });
    },
  });
  const port = server.port ?? 0;
  return {
    ip,
    port,
    url: `https://${ip}:${port}/`,
    pattern: `${ip}:${port}`,
    hits: () => hits,
    stop: () => server.stop(true),
  };
}
