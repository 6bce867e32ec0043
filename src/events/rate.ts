// A per-sandbox budget for notifications: a flood of blocked requests from one sandbox cannot flood the person. Pure.

/** What to do with one more notification of a sandbox: send it, say once that more were held back, or drop it. */
export type RateAnswer = "send" | "held-back" | "drop";

export interface SandboxRate {
  take(sandboxId: number, now: number): RateAnswer;
}

/**
 * At most `limit` notifications per sandbox per `windowMs`; the first one past it in a window is "held-back" (say so,
 * once), the rest "drop". Windows are fixed per sandbox from its first notification in them; state stays bounded.
 */
export function sandboxRate(limit = 5, windowMs = 60_000): SandboxRate {
  const windows = new Map<number, { start: number; sent: number; told: boolean }>();
  return {
    take(id, now) {
      let w = windows.get(id);
      if (w === undefined || now - w.start >= windowMs) {
        w = { start: now, sent: 0, told: false };
        windows.set(id, w);
        if (windows.size > 1000) for (const [k, v] of windows) if (now - v.start >= windowMs) windows.delete(k);
      }
      if (w.sent < limit) {
        w.sent++;
        return "send";
      }
      if (!w.told) {
        w.told = true;
        return "held-back";
      }
      return "drop";
    },
  };
}
