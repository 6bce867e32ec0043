// The proxy's own endpoints, answered on the sandbox's proxy itself (origin-form): `/health`; `/sbx/names`, where the
// sandbox's DNS stub asks for the address that stands for a name; `/sbx/transparent`, the forwarder's long poll for
// the ports its transparent path listens on. (`/sbx/egress…`, the sandbox's own view of its policy, is the policy's:
// policy/egress-desk.ts, served through the daemon's origin handler.)
import { askableName } from "../core/dns";
import { PORTS_MAX_HELD } from "../core/bounds";
import type { PolicyLists } from "../core/egress";
import type { TransparentNames } from "../core/egress-events";
import { transparentPortsOf } from "../core/transparent";

export const HEALTH_PATH = "/health";
/** Where the sandbox's DNS stub asks for the address of a name: `GET /sbx/names?name=NAME`. */
export const NAMES_PATH = "/sbx/names";
/**
 * Where a container's forwarder learns which ports its transparent path listens on: `GET /sbx/transparent?known=P,…`
 * answers at once when the set differs from `known`, else when it changes (`sbx allow host:port`), else after a minute.
 */
export const TRANSPARENT_PATH = "/sbx/transparent";
const PORTS_HOLD_MS = 55_000;
const PORTS_POLL_MS = 250;
/** Long polls held at once per sandbox (its forwarder needs one); more are answered at once, so none can pile up. */
const MAX_PORTS_HELD = PORTS_MAX_HELD;

/** An endpoint's answer, before it is written (refusal.ts's `answer`). */
export interface OwnAnswer {
  status: number;
  body: string;
  contentType: string;
  /** Cache-Control: no-store. */
  noStore?: boolean;
}

/** An endpoint: its answer now, or later (a long poll: null once `signal` aborts, the client having gone). */
export type Endpoint = (method: string, url: URL, signal: AbortSignal) => OwnAnswer | Promise<OwnAnswer | null>;

export interface SbxEndpointsOptions {
  sandboxName: string;
  /** The sandbox's policy now (the transparent ports follow its allowlist). */
  policy: () => PolicyLists;
  /** The transparent path's name map; without it `/sbx/names` and `/sbx/transparent` answer 404. */
  names?: TransparentNames;
}

const json = (status: number, body: unknown, noStore = true): OwnAnswer => ({ status, body: JSON.stringify(body), contentType: "application/json", noStore });

/** Waits `ms`, or less when `signal` aborts (a long poll's client gone frees its hold at once). */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

/** Whether `target` is `path` itself or `path?…`. */
function at(target: string, path: string): boolean {
  return target === path || target.startsWith(`${path}?`);
}

export class SbxEndpoints {
  private portsHeld = 0;

  constructor(private readonly o: SbxEndpointsOptions) {}

  /** The endpoint for an origin-form request, or null when it is none of these (the origin handler's, then). */
  match(method: string, target: string): Endpoint | null {
    if ((method === "GET" || method === "HEAD") && at(target, HEALTH_PATH)) return () => json(200, { ok: true, sandbox: this.o.sandboxName }, false);
    if (at(target, NAMES_PATH)) return (m, url) => this.name(m, url);
    if (at(target, TRANSPARENT_PATH)) return (_m, url, signal) => this.ports(url, signal);
    return null;
  }

  /** `GET /sbx/names?name=NAME`: the address that stands for a name (the DNS stub inside asks), given out now if new. */
  private name(method: string, url: URL): OwnAnswer {
    if (!this.o.names) return json(404, { error: "not-found", message: "this sandbox has no transparent path" });
    if (method !== "GET") return json(405, { error: "method", message: "GET only" });
    const host = askableName((url.searchParams.get("name") ?? "").toLowerCase().replace(/\.$/, ""));
    if (host === null) return json(400, { error: "name", message: "not a host name" });
    const address = this.o.names.addressOf(host);
    if (address === null) return json(507, { error: "full", message: "this sandbox was given as many names as it may have" });
    return json(200, { name: host, address });
  }

  /** `GET /sbx/transparent?known=…`: the transparent ports now, once they differ from what the forwarder knows. */
  private async ports(url: URL, signal: AbortSignal): Promise<OwnAnswer | null> {
    if (!this.o.names) return { status: 404, body: "sbx proxy: this sandbox has no transparent path.\n", contentType: "text/plain; charset=utf-8" };
    const known = (url.searchParams.get("known") ?? "").slice(0, 400);
    const started = Date.now();
    let holding = false;
    try {
      for (;;) {
        if (signal.aborted) return null;
        const ports = transparentPortsOf(this.o.policy());
        if (ports.join(",") !== known || Date.now() - started >= PORTS_HOLD_MS || (!holding && this.portsHeld >= MAX_PORTS_HELD)) return json(200, { ports });
        if (!holding) {
          holding = true;
          this.portsHeld++;
        }
        await pause(PORTS_POLL_MS, signal);
      }
    } finally {
      if (holding) this.portsHeld--;
    }
  }
}
