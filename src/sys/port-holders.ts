// Who holds a loopback port sbx needs, and taking it back from a sandbox's guest that squats it (Linux: /proc).
//
// A user-account sandbox's proxy port (and, on Linux, its DNS stub's UDP port of the same number) is how its guest gets
// out; guests share the host's network namespace, so while that sandbox is stopped (or the daemon is down) any other
// guest may bind the port. A start then finds who holds it: another sandbox's guest is ended (its process only, and
// every process of that guest if it takes the port again), and the port taken back, said in the audit log; anything
// else (the person's own server, a system service) is never ended: the start is refused naming the process and user.
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { SbxError } from "../core/errors";
import { printable } from "../core/printable";
import type { Exec } from "./exec";

export type PortProto = "tcp" | "udp";

/** One socket that stops a bind of 127.0.0.1:<port>: its address, owner, inode, and the processes that hold it. */
export interface PortHolder {
  address: string;
  uid: number;
  inode: number;
  pids: number[];
  /** The first holder's argv, printable and bounded (what the process chose: never printed raw). */
  command: string;
}

/** Addresses whose sockets a bind of 127.0.0.1:<port> collides with (the any-address, dual-stack `::` included). */
const COLLIDES = new Set(["127.0.0.1", "0.0.0.0", "::", "::ffff:127.0.0.1", "::ffff:0.0.0.0"]);

/** Pure: a `/proc/net/*` address (`0100007F` or 32 hex digits, each 32-bit word in host order, here little-endian). */
export function procNetAddress(hex: string): string {
  const word = (h: string) => [6, 4, 2, 0].map((i) => Number.parseInt(h.slice(i, i + 2), 16));
  if (hex.length === 8) return word(hex).join(".");
  const bytes = [0, 8, 16, 24].flatMap((i) => word(hex.slice(i, i + 8)));
  if (bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff) return `::ffff:${bytes.slice(12).join(".")}`;
  if (bytes.every((b) => b === 0)) return "::";
  const groups = [0, 2, 4, 6, 8, 10, 12, 14].map((i) => ((bytes[i]! << 8) | bytes[i + 1]!).toString(16));
  return groups.join(":").replace(/(^|:)0(:0)+(:|$)/, "::");
}

/**
 * Pure: the sockets of one `/proc/net/{tcp,tcp6,udp,udp6}` table that collide with a bind of 127.0.0.1:<port>: TCP
 * listeners (state 0A), and any UDP socket bound there.
 */
export function parseProcNet(text: string, proto: PortProto, port: number): { address: string; uid: number; inode: number }[] {
  const out: { address: string; uid: number; inode: number }[] = [];
  for (const line of text.split("\n").slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 10) continue;
    const [addr = "", portHex = ""] = f[1]!.split(":");
    if (Number.parseInt(portHex, 16) !== port) continue;
    if (proto === "tcp" && f[3] !== "0A") continue;
    const address = procNetAddress(addr);
    if (!COLLIDES.has(address)) continue;
    out.push({ address, uid: Number(f[7]), inode: Number(f[9]) });
  }
  return out;
}

/** Reads a file, or "" when it cannot be read (gone, not ours, no /proc). */
function read(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}

/** The pids whose descriptors hold each socket inode (every process this user may look at). */
function socketPids(inodes: ReadonlySet<number>): Map<number, number[]> {
  const out = new Map<number, number[]>();
  let pids: string[] = [];
  try {
    pids = readdirSync("/proc").filter((p) => /^\d+$/.test(p));
  } catch {
    return out;
  }
  for (const pid of pids) {
    let fds: string[] = [];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      let link = "";
      try {
        link = readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      const m = /^socket:\[(\d+)\]$/.exec(link);
      if (!m || !inodes.has(Number(m[1]))) continue;
      const l = out.get(Number(m[1])) ?? [];
      if (!l.includes(Number(pid))) l.push(Number(pid));
      out.set(Number(m[1]), l);
    }
  }
  return out;
}

/** Who holds 127.0.0.1:<port> (TCP listening, or UDP bound), from /proc; empty where there is no /proc to read. */
export function portHolders(proto: PortProto, port: number): PortHolder[] {
  const rows = [`/proc/net/${proto}`, `/proc/net/${proto}6`].flatMap((f) => parseProcNet(read(f), proto, port));
  const pids = socketPids(new Set(rows.map((r) => r.inode)));
  return rows.map((r) => {
    const held = (pids.get(r.inode) ?? []).sort((x, y) => x - y);
    const argv = held.length > 0 ? read(`/proc/${held[0]}/cmdline`).split("\0").filter(Boolean).join(" ") : "";
    return { ...r, pids: held, command: printable(argv.length > 120 ? `${argv.slice(0, 120)}…` : argv) };
  });
}

/** Whether an error is a bind that failed because the address is in use. */
export function inUse(e: unknown): boolean {
  const err = e as NodeJS.ErrnoException | undefined;
  return err?.code === "EADDRINUSE" || /EADDRINUSE|address already in use|errno 98\b/i.test(err?.message ?? String(e));
}

export interface ClaimOptions<T> {
  proto: PortProto;
  port: number;
  /** What the port is, for messages: "sandbox b's proxy port". */
  what: string;
  /** The sandbox whose start needs it (for the hint). */
  sandbox: string;
  /** Binds it; throws when it cannot (an in-use error is what claimPort handles). */
  bind: () => T | Promise<T>;
  /** The sandbox whose guest account has `uid` (a name, or "a removed sandbox"), or null when it is no guest of sbx's. */
  guestOf: (uid: number) => Promise<string | null>;
  /** runs: getent passwd <uid> (the holder's user name for messages); pkill -KILL -u <uid> (a guest that took it again). */
  exec: Exec;
  /** Tells where the person looks (the audit log, the daemon's log) what was taken back from whom. */
  reclaimed: (detail: Record<string, unknown>) => void;
  /** Kills a process (tests may watch); default SIGKILL. */
  kill?: (pid: number) => void;
  /** How often to try (each round ends the squatter first). */
  rounds?: number;
}

async function userName(exec: Exec, uid: number): Promise<string> {
  const r = await exec.run(["getent", "passwd", String(uid)], { check: false });
  return r.exitCode === 0 ? r.stdout.split(":")[0]! : `uid ${uid}`;
}

/**
 * Who holds 127.0.0.1:<port>, in words for a message ("pid 123 (python3 -m http.server) of user alice", and whose
 * sandbox's account that user is); null when /proc shows no holder.
 * runs: getent passwd <uid>
 */
export async function holdersText(proto: PortProto, port: number, exec: Exec, guestOf?: (uid: number) => Promise<string | null>): Promise<string | null> {
  const hs = portHolders(proto, port);
  if (hs.length === 0) return null;
  const parts = await Promise.all(
    hs.map(async (h) => {
      const sandbox = guestOf ? await guestOf(h.uid) : null;
      const who = `user ${await userName(exec, h.uid)}${sandbox !== null ? ` (sandbox ${sandbox}'s account)` : ""}`;
      return h.pids.length > 0 ? `pid ${h.pids.join(", ")} (${h.command || "?"}) of ${who}` : `a process of ${who}`;
    }),
  );
  return [...new Set(parts)].join("; ");
}

/**
 * Binds a port a sandbox holds; when something else holds it, finds who. Another sandbox's guest is ended and the port
 * taken back (said through `reclaimed`); the second time the same guest takes it, every process of that guest is
 * ended. Anything that is not a guest is left alone and the bind refused with the process, its user and what to do.
 */
export async function claimPort<T>(o: ClaimOptions<T>): Promise<T> {
  const rounds = o.rounds ?? 6;
  const kill = o.kill ?? ((pid: number) => process.kill(pid, "SIGKILL"));
  const seen = new Map<number, number>();
  let last: unknown;
  for (let round = 0; round < rounds; round++) {
    try {
      return await o.bind();
    } catch (e) {
      if (!inUse(e)) throw e;
      last = e;
    }
    const holders = portHolders(o.proto, o.port);
    const where = `127.0.0.1:${o.port}${o.proto === "udp" ? "/udp" : ""} (${o.what})`;
    if (holders.length === 0) {
      // Gone meanwhile, or a process this daemon may not look at.
      await Bun.sleep(50 * (round + 1));
      continue;
    }
    const named = await Promise.all(holders.map(async (h) => ({ ...h, user: await userName(o.exec, h.uid), sandbox: await o.guestOf(h.uid) })));
    const others = named.filter((h) => h.sandbox === null);
    if (others.length > 0) {
      const h = others[0]!;
      const who = h.pids.length > 0 ? `pid ${h.pids.join(", ")} (${h.command || "?"}) of user ${h.user}` : `a process of user ${h.user}`;
      throw new SbxError("unavailable", `${where} is held by ${who}`, {
        hint: h.pids.length > 0
          ? `sbx ends only a sandbox's own processes. Stop that one (\`kill ${h.pids.join(" ")}\`), then start sandbox ${o.sandbox} again.`
          : `Find it with \`ss -lnp 'sport = :${o.port}'\` and stop it, then start sandbox ${o.sandbox} again.`,
      });
    }
    for (const h of named) {
      const again = (seen.get(h.uid) ?? 0) + 1;
      seen.set(h.uid, again);
      // A guest that takes it again has a process waiting to: all of that guest's processes go.
      if (again > 1) await o.exec.run(["pkill", "-KILL", "-u", String(h.uid)], { check: false });
      for (const pid of h.pids) {
        try {
          kill(pid);
        } catch {
          /* gone already */
        }
      }
      o.reclaimed({ port: o.port, proto: o.proto, heldBy: h.sandbox, user: h.user, uid: h.uid, pids: h.pids, command: h.command, everyProcess: again > 1 });
    }
    await Bun.sleep(20 * (round + 1));
  }
  throw new SbxError("unavailable", `cannot take back 127.0.0.1:${o.port}${o.proto === "udp" ? "/udp" : ""} (${o.what}): ${(last as Error)?.message ?? "in use"}`, {
    hint: `Something keeps taking it; \`ss -lnp 'sport = :${o.port}'\` shows what. Stop it, then start sandbox ${o.sandbox} again.`,
  });
}
