// sbx-egress: what this sandbox may reach, what it was refused and why, and asking the user for a host with a reason.
// It talks to the sandbox's own proxy (the address in HTTP_PROXY), which answers for this sandbox only; it can change
// nothing by itself: an ask waits for the person. Bun built-ins only.
//
//   sbx-egress [status] [--json]                what is allowed, the latest refusals, what is waiting
//   sbx-egress ask HOST[:PORT] --why TEXT [--wait [SECONDS]]
//                                               ask for a host; with --wait, until the person answers (at most 600 s)
const USAGE = `usage: sbx-egress [status] [--json]
       sbx-egress ask HOST[:PORT] --why "what it is for" [--wait [SECONDS]] [--json]

Shows what this sandbox may reach and what it was refused (with the reason), or asks the person who runs it to allow
a host; the request shows up in their \`sbx approvals\`, dashboard and chat. With --wait it waits for the answer and
exits 0 when allowed, 1 when denied, 2 when nobody answered in time (default 120 s, at most 600).`;

function fail(msg: string, code = 64): never {
  process.stderr.write(`sbx-egress: ${msg}\n`);
  process.exit(code);
}

function base(): string {
  const p = process.env.HTTP_PROXY ?? process.env.http_proxy;
  if (!p) fail("no HTTP_PROXY in this environment: run it inside an sbx sandbox", 69);
  const u = new URL(p);
  return `http://${u.host}/sbx/egress`;
}

async function call(path: string, init?: RequestInit): Promise<{ status: number; body: Record<string, unknown> }> {
  let r: Response;
  try {
    // Straight to the proxy itself (127.0.0.1 is in NO_PROXY), never proxied.
    r = await fetch(`${base()}${path}`, init);
  } catch (e) {
    fail(`the sandbox's proxy does not answer (${(e as Error).message}); the sandbox may be stopping`, 69);
  }
  const body = (await r.json().catch(() => ({}))) as Record<string, unknown>;
  return { status: r.status, body };
}

const clean = (s: unknown) => String(s ?? "").replace(/[\u0000-\u001f\u007f-\u009f]/g, "?");

async function status(asJson: boolean): Promise<void> {
  const { status: code, body } = await call("");
  if (code !== 200) fail(clean(body.message ?? `HTTP ${code}`), 69);
  if (asJson) {
    process.stdout.write(`${JSON.stringify(body)}\n`);
    return;
  }
  const a = body.allowlist as { sandbox: string[]; global: string[]; builtin: string[]; published: string[]; level?: { name: string; patterns: string[]; open: boolean } | null };
  const out: string[] = [`sandbox ${clean(body.sandbox)} may reach:`];
  // Its policy level (older daemons send none): `open` reaches every public host; never private or host addresses.
  const level = a.level ? (a.level.open ? ["every public host and address (no private, loopback or metadata ones)"] : a.level.patterns) : [];
  for (const [label, list] of [["its own list", a.sandbox], ["every sandbox's", a.global], [`level ${clean(a.level?.name ?? "")}`, level], ["built in", a.builtin], ["services of the host", a.published]] as const) {
    if (list.length) out.push(`  ${label}: ${list.map(clean).join(", ")}`);
  }
  const blocked = body.blocked as Array<{ host?: string; port?: number; reason?: string; detail?: string }>;
  out.push(blocked.length ? "refused lately (newest first):" : "refused lately: nothing");
  for (const b of blocked.slice(0, 10)) out.push(`  ${clean(b.host)}:${clean(b.port)} — ${clean(b.reason)}${b.detail ? `: ${clean(b.detail)}` : ""}`);
  const pending = body.pending as Array<{ id: number; host: string; port: number; count: number }>;
  if (pending.length) out.push(`waiting for the person: ${pending.map((p) => `#${p.id} ${clean(p.host)}:${p.port}`).join(", ")}`);
  out.push("to ask for a host: sbx-egress ask HOST[:PORT] --why \"what it is for\" [--wait]");
  process.stdout.write(`${out.join("\n")}\n`);
}

async function ask(args: string[], asJson: boolean): Promise<void> {
  let target: string | undefined;
  let why = "";
  let wait: number | null = null;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--why") why = args[++i] ?? fail("--why needs a text");
    else if (a.startsWith("--why=")) why = a.slice(6);
    else if (a === "--wait") wait = /^\d+$/.test(args[i + 1] ?? "") ? Number(args[++i]) : 120;
    else if (a.startsWith("--wait=")) wait = Number(a.slice(7));
    else if (a.startsWith("-")) fail(`unknown option ${a}\n${USAGE}`);
    else if (target === undefined) target = a;
    else fail(`one host at a time\n${USAGE}`);
  }
  if (!target) fail(`ask needs a host\n${USAGE}`);
  if (why.trim().length < 3) fail('say why with --why "…": the person deciding reads it');
  if (wait !== null && !(wait >= 0 && wait <= 600)) fail("--wait takes 0 to 600 seconds");
  const m = /^(?:\[([^\]]+)\]|([^:]+))(?::(\d+))?$/.exec(target);
  if (!m) fail(`'${target}' is not HOST or HOST:PORT`);
  const host = m[1] ?? m[2]!;
  const port = m[3] === undefined ? 443 : Number(m[3]);
  const r = await call("/ask", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ host, port, why }) });
  if (r.status !== 200) fail(clean(r.body.message ?? `HTTP ${r.status}`), r.status === 429 ? 75 : 65);
  let v = r.body as { id: number; state: string; host: string; port: number; note?: string };
  if (!asJson) process.stderr.write(`sbx-egress: asked for ${clean(v.host)}:${v.port} (request #${v.id}); the person sees it in sbx approvals, the dashboard and chat\n`);
  // Said before it waits: a name on a private address is asked for with that address (one approval allows both).
  if (!asJson && typeof v.note === "string") process.stderr.write(`sbx-egress: ${clean(v.note)}\n`);
  if (wait !== null && v.state === "pending") {
    const until = Date.now() + wait * 1000;
    while (v.state === "pending" && Date.now() < until) {
      const left = Math.max(0, Math.ceil((until - Date.now()) / 1000));
      const w = await call(`/approvals/${v.id}?wait=${Math.min(left, 60)}`);
      // 429: the sandbox already waits on as many requests as the daemon holds at once; ask again after a pause.
      if (w.status === 429) {
        await Bun.sleep(Math.min(1000, Math.max(0, until - Date.now())));
        continue;
      }
      if (w.status !== 200) fail(clean(w.body.message ?? `HTTP ${w.status}`), 69);
      v = w.body as typeof v;
    }
  }
  if (asJson) process.stdout.write(`${JSON.stringify(v)}\n`);
  else process.stdout.write(`${v.state === "allowed" ? "allowed" : v.state === "denied" ? "denied" : "waiting"}\n`);
  if (wait !== null) process.exit(v.state === "allowed" ? 0 : v.state === "denied" ? 1 : 2);
}

const argv = process.argv.slice(2);
const asJson = argv.includes("--json");
const rest = argv.filter((a) => a !== "--json");
if (rest.includes("--help") || rest.includes("-h")) {
  process.stdout.write(`${USAGE}\n`);
} else if (rest.length === 0 || rest[0] === "status") {
  await status(asJson);
} else if (rest[0] === "ask") {
  await ask(rest.slice(1), asJson);
} else {
  fail(`unknown command '${rest[0]}'\n${USAGE}`);
}
export {};
