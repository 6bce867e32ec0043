// The egress proxy's decisions as events, and the transparent path's name map as the proxy reads it: pure types, kept
// here so the proxy (which makes them) and the policy room and the feed (which record and show them) share them
// without importing one another.
import type { BlockReason, PolicySource } from "./egress";

/** The sandbox a proxy serves, as its events name it. */
export interface EgressSandbox {
  id: number;
  name: string;
}

/** How a request reached the proxy: named by the client (proxy variables), or caught by the transparent path. */
export type EgressPath = "proxy" | "transparent";

export type EgressEvent =
  | {
      type: "denied";
      sandbox: EgressSandbox;
      path: EgressPath;
      method: string;
      host: string;
      port: number;
      reason: BlockReason;
      detail: string;
      /** The pattern that would allow it (the host, `host:port`, or the refused address). */
      suggest: string | null;
      at: number;
    }
  | {
      type: "closed";
      sandbox: EgressSandbox;
      path: EgressPath;
      method: string;
      host: string;
      port: number;
      address: string;
      /** The parent proxy it went through (its URL, never credentials), when one carried it. */
      via?: string;
      source: PolicySource;
      pattern: string;
      /** A request's path (plain HTTP, or one read inside a terminated connection), never its query; none for a tunnel. */
      target?: string;
      bytesUp: number;
      bytesDown: number;
      durationMs: number;
      at: number;
    }
  | { type: "error"; sandbox: EgressSandbox; path: EgressPath; method: string; host: string; port: number; address: string | null; via?: string; message: string; at: number }
  | {
      type: "secret";
      sandbox: EgressSandbox;
      path: EgressPath;
      method: string;
      host: string;
      port: number;
      /** The request's path, never its query (which may hold the value or its placeholder). */
      target: string;
      /** The secret's name; never its value. */
      name: string;
      /** `used`: swapped in, or its header added; `outside`: its placeholder went, unswapped, where it may not go. */
      action: "used" | "outside";
      reason: string | null;
      at: number;
    };

/** The transparent path's name map, as the proxy and the DNS stub read it (policy/name-map.ts keeps it). */
export interface TransparentNames {
  /** The address that stands for a name (given out now when it has none), or null when the map is full. */
  addressOf(name: string): string | null;
  /** The name an address stands for, or null when it was never given out. */
  nameOf(address: string): string | null;
}
