// Runs INSIDE a sandbox (on sbx's Bun) for the bounded soak: the ordinary work of a second sandbox, timed. A GET through
// the proxy every 100 ms, a `git ls-remote origin` through the bridge every 2 s, for SECONDS; one JSON line per sample
// ({at, kind, ms, ok}). Built-ins only.
//
//   bun bounded-worker.ts URL SECONDS
export {};
const [url, seconds] = process.argv.slice(2);
const until = Date.now() + Number(seconds) * 1000;
const out = (o: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(o)}\n`);

async function gets(): Promise<void> {
  while (Date.now() < until) {
    const t0 = performance.now();
    let ok = false;
    try {
      const r = await fetch(url!, { proxy: process.env.HTTP_PROXY, signal: AbortSignal.timeout(10_000) } as RequestInit);
      ok = r.ok && (await r.text()) === "ok\n";
    } catch {}
    out({ at: Date.now(), kind: "proxy", ms: performance.now() - t0, ok });
    await Bun.sleep(100);
  }
}

async function bridge(): Promise<void> {
  while (Date.now() < until) {
    const t0 = performance.now();
    const code = await Bun.spawn(["git", "ls-remote", "origin"], { stdout: "ignore", stderr: "ignore" }).exited;
    out({ at: Date.now(), kind: "bridge", ms: performance.now() - t0, ok: code === 0 });
    await Bun.sleep(2000);
  }
}

await Promise.all([gets(), bridge()]);
