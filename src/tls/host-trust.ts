// A company's CAs (issue 39): the certificate authorities this host trusts beyond its distribution's roots, found where
// systems keep them (Linux: update-ca-certificates' /usr/local/share/ca-certificates, NODE_EXTRA_CA_CERTS,
// SSL_CERT_FILE; macOS: the System keychain's added roots), carried, when the config's `trust` says so, into every
// sandbox's trust set-up (sandboxes/secret-env.ts) and into what sbx's proxy verifies upstreams against.
//
// Never the other way: nothing a sandbox can write becomes trusted on the host. A trust file is read only when it, and
// every directory on its real path, belongs to root or the person and is writable by no one else, and its real path
// is in none of the places sandboxes write (sbx's sandbox trees, runtime and state dirs, the shared temp dirs, the
// container engine's volumes): a symlink into a sandbox's tree is refused, and said.
import { X509Certificate } from "node:crypto";
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, sep } from "node:path";
import type { Exec } from "../sys/exec";

/** A CA found on the host, or one a trust file holds. */
export interface HostCa {
  /** Where it came from: a file, or "the System keychain". */
  from: string;
  subject: string;
  pem: string;
}

/** Why a trust file was not read (said by doctor and the daemon's log). */
export interface TrustRefusal {
  from: string;
  why: string;
}

export interface TrustGuard {
  /** Roots a sandbox writes under (sbx's sandbox trees, runtime and state dirs): no trust file is read from there. */
  forbidden: readonly string[];
  /** The person's uid: besides root, the only owner a trust file or its directories may have. */
  uid: number;
}

/** Directories every sandbox kind can write into on any host, whatever sbx's own paths are. */
const SHARED_WRITABLE = ["/tmp", "/var/tmp", "/dev/shm", "/var/lib/docker", "/private/tmp", "/private/var/tmp"];

/** Where systems keep the bundle of their roots, most common first (not extra CAs, however they got there). */
export const SYSTEM_BUNDLES: readonly string[] = ["/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem", "/etc/ssl/certs/ca-bundle.crt"];

/** Pure: each CERTIFICATE block of a PEM text. */
export function pemBlocks(text: string): string[] {
  return text.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
}

/** Pure: the certificate authorities of a PEM text (a block that does not parse, or is not a CA, is left out and counted). */
export function casOf(text: string, from: string): { cas: HostCa[]; skipped: number } {
  const cas: HostCa[] = [];
  let skipped = 0;
  for (const pem of pemBlocks(text)) {
    try {
      const c = new X509Certificate(pem);
      if (!c.ca) {
        skipped++;
        continue;
      }
      cas.push({ from, subject: c.subject.replace(/\n/g, ", "), pem: `${pem}\n` });
    } catch {
      skipped++;
    }
  }
  return { cas, skipped };
}

function under(path: string, root: string): boolean {
  const r = root.endsWith(sep) ? root : `${root}${sep}`;
  return path === root || path.startsWith(r);
}

/**
 * Why a trust file may not be read, or null: its real path is in a place a sandbox writes, or it or a directory above
 * it belongs to someone other than root and the person, or is writable by its group or others (a sticky dir's entries
 * as well: anyone can put one there).
 */
export function trustFileRefusal(file: string, g: TrustGuard): string | null {
  let real: string;
  try {
    real = realpathSync(file);
  } catch (e) {
    return `cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`;
  }
  const roots = [...g.forbidden, ...SHARED_WRITABLE].flatMap((r) => {
    try {
      return [r, realpathSync(r)];
    } catch {
      return [r];
    }
  });
  const inside = roots.find((r) => under(real, r));
  if (inside) return `${real === file ? "it is" : `it leads to ${real}, which is`} under ${inside}, where sandboxes write: nothing a sandbox can write is trusted on the host`;
  for (let p = real; ; p = dirname(p)) {
    const st = statSync(p);
    if (st.uid !== 0 && st.uid !== g.uid) return `${p} belongs to uid ${st.uid}, neither root nor you: whoever that is could change what is trusted`;
    // Writable by others: a file, or a directory whose entries others could replace (a sticky one keeps each
    // entry its owner's, and the owners were just checked).
    const shared = (st.mode & 0o022) !== 0 && !(st.isDirectory() && (st.mode & 0o1000) !== 0);
    if (shared) return `${p} can be written by ${(st.mode & 0o002) !== 0 ? "anyone" : "its group"}: whoever can could change what is trusted`;
    if (p === dirname(p)) break;
  }
  if (!lstatSync(real).isFile()) return "it is not a regular file";
  return null;
}

/** Reads trust files under the guard: the CAs they hold, and what was refused and why. */
export function readTrustFiles(files: readonly string[], g: TrustGuard): { cas: HostCa[]; refused: TrustRefusal[] } {
  const cas: HostCa[] = [];
  const refused: TrustRefusal[] = [];
  for (const f of files) {
    const why = trustFileRefusal(f, g);
    if (why) {
      refused.push({ from: f, why });
      continue;
    }
    let text: string;
    try {
      text = readFileSync(realpathSync(f), "utf8");
    } catch (e) {
      refused.push({ from: f, why: `cannot be read (${(e as Error).message})` });
      continue;
    }
    const got = casOf(text, f);
    if (got.cas.length === 0) refused.push({ from: f, why: got.skipped > 0 ? "none of its certificates is a CA" : "it holds no PEM certificate" });
    cas.push(...got.cas);
  }
  return { cas, refused };
}

/**
 * The files where this host keeps CAs beyond its distribution's roots. runs (macOS): security find-certificate -a -p
 * /Library/Keychains/System.keychain (its added roots; the system roots are in another keychain).
 */
export async function hostCaSources(o: { platform: string; env: Readonly<Record<string, string | undefined>>; exec: Exec }): Promise<{ files: string[]; keychain: HostCa[] }> {
  const files: string[] = [];
  const add = (f: string | undefined) => {
    if (f && f.startsWith("/") && !SYSTEM_BUNDLES.includes(f) && !files.includes(f)) files.push(f);
  };
  add(o.env.NODE_EXTRA_CA_CERTS);
  add(o.env.SSL_CERT_FILE);
  if (o.platform === "darwin") {
    // A keychain that cannot be read adds nothing (doctor says what it found; the daemon logs nothing for a Mac without added roots).
    const r = await o.exec.run(["security", "find-certificate", "-a", "-p", "/Library/Keychains/System.keychain"], { check: false, timeoutMs: 10_000 }).catch(() => null);
    return { files, keychain: r?.exitCode === 0 ? casOf(r.stdout, "the System keychain").cas : [] };
  }
  const dir = "/usr/local/share/ca-certificates";
  const walk = (d: string, depth: number) => {
    if (depth > 3 || !existsSync(d)) return;
    for (const e of readdirSync(d, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p, depth + 1);
      else if (e.name.endsWith(".crt")) add(p);
    }
  };
  walk(dir, 0);
  return { files, keychain: [] };
}

/**
 * The company CAs the config's `trust` names, read now (doctor) or kept by the daemon (`CompanyTrust`): "host" is what
 * hostCaSources finds; a list is those files.
 */
export async function companyCas(trust: "host" | readonly string[] | undefined, o: { platform: string; env: Readonly<Record<string, string | undefined>>; exec: Exec; guard: TrustGuard }): Promise<{ cas: HostCa[]; refused: TrustRefusal[] }> {
  if (trust === undefined) return { cas: [], refused: [] };
  if (trust === "host") {
    const src = await hostCaSources(o);
    const read = readTrustFiles(src.files, o.guard);
    return { cas: [...read.cas, ...src.keychain], refused: read.refused };
  }
  return readTrustFiles(trust, o.guard);
}

/** Pure: CAs as one PEM text, each once. */
export function pemOf(cas: readonly HostCa[]): string {
  return [...new Set(cas.map((c) => c.pem.trim()))].map((p) => `${p}\n`).join("");
}

/**
 * The daemon's company CAs: what the config's `trust` names, read again at most every `ttlMs` (a CA added to the
 * host or the config is picked up by new sessions within it), refusals logged once each.
 */
export class CompanyTrust {
  private kept: { at: number; stamp: string; pem: string } | null = null;
  private loading: Promise<string> | null = null;
  private readonly told = new Set<string>();

  constructor(
    private readonly o: {
      trust: () => "host" | readonly string[] | undefined;
      platform: string;
      env: Readonly<Record<string, string | undefined>>;
      exec: Exec;
      guard: TrustGuard;
      log?: (message: string, fields: Record<string, unknown>) => void;
      ttlMs?: number;
      now?: () => number;
      /** What says the config changed (its file's mtime): a change is read at once, not after the time to live. */
      stamp?: () => string;
    },
  ) {}

  private now(): number {
    return this.o.now?.() ?? Date.now();
  }

  /** The CAs as one PEM text ("" for none), read again when the last read is older than the time to live. */
  current(): Promise<string> {
    if (this.kept && this.kept.stamp === (this.o.stamp?.() ?? "") && this.now() - this.kept.at < (this.o.ttlMs ?? 30_000)) return Promise.resolve(this.kept.pem);
    this.loading ??= this.load().finally(() => {
      this.loading = null;
    });
    return this.loading;
  }

  /** What was last read, at once ("" before the first read); a read is started when it is stale. */
  pemNow(): string {
    void this.current();
    return this.kept?.pem ?? "";
  }

  private async load(): Promise<string> {
    const stamp = this.o.stamp?.() ?? "";
    let trust: "host" | readonly string[] | undefined;
    try {
      trust = this.o.trust();
    } catch (e) {
      this.o.log?.("the config's trust could not be read", { err: (e as Error).message });
      trust = undefined;
    }
    const r = await companyCas(trust, this.o);
    for (const x of r.refused) {
      const k = `${x.from}\0${x.why}`;
      if (this.told.has(k)) continue;
      this.told.add(k);
      this.o.log?.("a trust file was not read", { file: x.from, why: x.why });
    }
    const pem = pemOf(r.cas);
    this.kept = { at: this.now(), stamp, pem };
    return pem;
  }
}

/**
 * What the host tools the daemon runs for sandboxes (the bridge's git and gh) trust, at each call: the host's own
 * settings (SSL_CERT_FILE, SSL_CERT_DIR) as they are, or, while the config's `trust` adds company CAs, a bundle of the
 * host's roots (SSL_CERT_FILE's, else the system's) and those CAs, kept in `file` (sbx's state dir, where no sandbox
 * writes) and named to them as SSL_CERT_FILE: a company's forge behind its CA works through the bridge as on the host.
 */
export function hostToolsTls(o: { env: Readonly<Record<string, string | undefined>>; company: () => string; file: string }): () => Record<string, string> {
  const base: Record<string, string> = {};
  for (const k of ["SSL_CERT_FILE", "SSL_CERT_DIR"]) if (o.env[k]) base[k] = o.env[k]!;
  let kept = "";
  return () => {
    const pem = o.company();
    if (pem === "") return base;
    const roots = base.SSL_CERT_FILE ?? SYSTEM_BUNDLES.find((f) => existsSync(f));
    let text: string;
    try {
      text = `${roots ? readFileSync(roots, "utf8").trimEnd() : ""}\n${pem}`;
    } catch {
      return base; // the host's roots cannot be read: its tools as they are
    }
    if (text !== kept || !existsSync(o.file)) {
      mkdirSync(dirname(o.file), { recursive: true, mode: 0o700 });
      // Whole or not at all: a call under way reads the old bundle or the new one.
      const tmp = `${o.file}.${process.pid}.tmp`;
      writeFileSync(tmp, text, { mode: 0o644 });
      renameSync(tmp, o.file);
      kept = text;
    }
    return { ...base, SSL_CERT_FILE: o.file };
  };
}
