// One-time decision links: a random 256-bit token bound to one approval of one sandbox, valid once and for a while.
// Kept in the daemon's memory only (a restart voids every link; the approval still waits in `sbx approvals`), keyed
// by the token's SHA-256 so that a lookup's timing says nothing about the tokens held.
import { createHash } from "node:crypto";
import { randomSecret } from "../ui/auth";

/** What a link may decide: this approval, of this sandbox (sandbox ids are never given again). */
export interface LinkTarget {
  approvalId: number;
  sandboxId: number;
}

export type LinkState = "unused" | "used" | "expired" | "unknown";

interface Entry {
  target: LinkTarget;
  expiresAt: number;
  used: boolean;
}

const digest = (token: string) => createHash("sha256").update(token, "utf8").digest("hex");

export class DecisionLinks {
  private readonly byDigest = new Map<string, Entry>();
  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
    /** The most links held; past it the oldest is forgotten (its link then says "unknown"). */
    private readonly max = 1000,
  ) {}

  issue(target: LinkTarget): { token: string; expiresAt: number } {
    const token = randomSecret();
    const expiresAt = this.now() + this.ttlMs;
    this.byDigest.set(digest(token), { target: { ...target }, expiresAt, used: false });
    while (this.byDigest.size > this.max) this.byDigest.delete(this.byDigest.keys().next().value!);
    return { token, expiresAt };
  }

  /** What a token is bound to and whether it can still be used; changes nothing (a GET, a link preview). */
  peek(token: string): { state: LinkState; target: LinkTarget | null } {
    const e = this.byDigest.get(digest(token));
    if (!e) return { state: "unknown", target: null };
    if (e.used) return { state: "used", target: e.target };
    return { state: this.now() >= e.expiresAt ? "expired" : "unused", target: e.target };
  }

  /** Marks the token used and returns its target; null (and nothing marked) unless it was unused and unexpired. */
  redeem(token: string): { state: LinkState; target: LinkTarget | null } {
    const p = this.peek(token);
    if (p.state !== "unused") return p;
    this.byDigest.get(digest(token))!.used = true;
    return p;
  }

  size(): number {
    return this.byDigest.size;
  }
}
