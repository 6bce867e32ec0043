// sbx's certificate authority on the host: made once, its key 0600 in a 0700 dir under sbx's state (outside every mount
// and every sandbox's reach), its certificate the one thing sandboxes are given to trust; and the leaf certificates it
// signs for the hosts secrets are bound to, kept per host until near their end.
import { chmodSync, existsSync, lstatSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import type { SecureContext } from "node:tls";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { SbxError } from "../core/errors";
import { issueLeaf, loadCa, makeCa, type Ca } from "./x509";
import { leafContext } from "./leaf-context";

/** A leaf is made again once less than this is left of it (it lasts LEAF_DAYS). */
const LEAF_RENEW_MS = 24 * 3_600_000;
/** Leaves kept at most (hosts secrets are bound to are few; past this the oldest go). */
const MAX_LEAVES = 256;

export interface AuthorityFiles {
  dir: string;
  cert: string;
  key: string;
}

export function authorityFiles(stateDir: string): AuthorityFiles {
  const dir = join(stateDir, "tls");
  return { dir, cert: join(dir, "ca.pem"), key: join(dir, "ca.key") };
}

/** Writes a file atomically with `mode`. */
function writeAtomic(file: string, text: string, mode: number): void {
  const tmp = `${file}.${randomBytes(6).toString("hex")}.tmp`;
  writeFileSync(tmp, text, { mode });
  chmodSync(tmp, mode);
  renameSync(tmp, file);
}

/** The key must be ours alone: a regular file, 0600, owned by who runs sbx; anything else is refused, never used. */
function checkKey(file: string, uid: number): void {
  const st = lstatSync(file);
  if (!st.isFile() || (st.mode & 0o077) !== 0 || st.uid !== uid) {
    throw new SbxError("config", `${file} is not a private file of yours (mode ${(st.mode & 0o777).toString(8)}, owner ${st.uid})`, {
      hint: `Remove ${file} and its ca.pem beside it; sbx makes a new CA (sandboxes trust the new one from their next start).`,
    });
  }
}

export class Authority {
  private readonly leaves = new Map<string, { ctx: Promise<SecureContext>; renewAt: number }>();

  private constructor(
    private readonly ca: Ca,
    /** The CA certificate (PEM): what sandboxes trust. */
    readonly certPem: string,
    private readonly now: () => number,
  ) {}

  /** The CA in `stateDir`, made on first use. */
  static async open(stateDir: string, o: { uid?: number; now?: () => number } = {}): Promise<Authority> {
    const f = authorityFiles(stateDir);
    const uid = o.uid ?? process.getuid?.() ?? 0;
    mkdirSync(f.dir, { recursive: true, mode: 0o700 });
    chmodSync(f.dir, 0o700);
    if (!existsSync(f.key) || !existsSync(f.cert)) {
      const made = await makeCa("sbx sandbox CA");
      writeAtomic(f.key, made.keyPem, 0o600);
      writeAtomic(f.cert, made.certPem, 0o644);
    }
    checkKey(f.key, uid);
    const certPem = readFileSync(f.cert, "utf8");
    return new Authority(await loadCa(certPem, readFileSync(f.key, "utf8")), certPem, o.now ?? Date.now);
  }

  /** A TLS context with a leaf for `host`, kept until a day before its end. */
  contextFor(host: string): Promise<SecureContext> {
    const now = this.now();
    const kept = this.leaves.get(host);
    if (kept && kept.renewAt > now) return kept.ctx;
    if (this.leaves.size >= MAX_LEAVES) this.leaves.delete(this.leaves.keys().next().value!);
    const ctx = issueLeaf(this.ca, [host], new Date(now)).then((l) => {
      entry.renewAt = l.notAfter.getTime() - LEAF_RENEW_MS;
      return leafContext(`${l.certPem}${this.certPem}`, l.keyPem);
    });
    const entry = { ctx, renewAt: Number.POSITIVE_INFINITY };
    // A failure is not kept: the next connection tries again.
    ctx.catch(() => this.leaves.delete(host));
    this.leaves.delete(host);
    this.leaves.set(host, entry);
    return ctx;
  }
}
