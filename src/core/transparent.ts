// The transparent path's addresses, as pure functions: the loopback range whose addresses stand for names, one per name.
//
// A sandbox's DNS stub answers every name with an address of this range (`127.77.0.0/16`), kept for as long as the
// sandbox lives; a connection to one on a transparent port is carried to the egress proxy under that name. The range
// is loopback on every backend, so nothing outside the host could ever be reached by it, and each sandbox has its own
// map: inside a container it is the container's own loopback, and a user-account guest's connections to it are
// redirected by its uid to its own listener.

/** The range whose addresses stand for names. */
export const NAME_RANGE = "127.77.0.0/16";
/** The stub's own address in it (a container's resolv.conf names it). */
export const STUB_ADDRESS = "127.77.0.1";
import { parsePattern } from "./allowlist";

/** Ports carried to the proxy without the sandbox naming them. */
export const TRANSPARENT_PORTS: readonly number[] = [80, 443];
/** How many ports a container's forwarder listens on for the transparent path (80 and 443 among them). */
export const MAX_TRANSPARENT_PORTS = 32;
/** How many names one sandbox may be given an address for (a query for one more gets SERVFAIL). */
export const MAX_NAMES = 16_384;

/** The first index handed out: .0.0 is the range's own, .0.1 the stub's. */
const FIRST = 2;

/** Pure: whether a sandbox's spec has the transparent path (its driver's options say so; off when they do not). */
export function transparentOn(spec: { options: { driver: string; transparent?: boolean } }): boolean {
  return spec.options.transparent === true;
}

/** Pure: the address of the i-th name given out (0-based). */
export function nameAddressAt(i: number): string {
  if (!Number.isInteger(i) || i < 0 || i >= MAX_NAMES) throw new Error(`name index out of range: ${i}`);
  const n = i + FIRST;
  return `127.77.${n >> 8}.${n & 0xff}`;
}

/** Pure: whether an address is in the range that stands for names (its exact dotted form, as a socket reports it). */
export function isNameAddress(address: string): boolean {
  const m = /^127\.77\.(\d{1,3})\.(\d{1,3})$/.exec(address.startsWith("::ffff:") ? address.slice(7) : address);
  if (!m) return false;
  const n = Number(m[1]) * 256 + Number(m[2]);
  return Number(m[1]) <= 255 && Number(m[2]) <= 255 && n >= FIRST && n < FIRST + MAX_NAMES;
}

/**
 * Pure: the ports a container's transparent path listens on: 80 and 443, and each port an allowlist entry of the
 * sandbox (or the global list) names (`sbx allow host:8443`), in order, at most MAX_TRANSPARENT_PORTS. A Linux guest
 * needs no list: every TCP port of a named address is redirected, and the allowlist decides.
 */
export function transparentPortsOf(lists: { sandbox: readonly string[]; global: readonly string[] }): number[] {
  const ports = new Set<number>(TRANSPARENT_PORTS);
  for (const raw of [...lists.sandbox, ...lists.global]) {
    const p = parsePattern(raw);
    if (p.ok && p.pattern.port !== null) ports.add(p.pattern.port);
  }
  return [...ports].sort((a, b) => a - b).slice(0, MAX_TRANSPARENT_PORTS);
}
