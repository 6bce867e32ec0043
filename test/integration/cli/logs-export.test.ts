// ocsf-export, end to end: the real daemon with its real egress proxy audits a request it allowed, a tunnel, one it
// refused, an approval answered with `sbx approvals allow`, and what a hostile sandbox sends; `sbx logs --export`, run
// as its own process against the daemon's route, writes each row as one line: OCSF events that validate against the
// schema's requirements (test/support/ocsf-schema.ts), JSONL records that no host or reason can split or forge.
// `--follow` streams until Ctrl-C (130, the last line whole) or until its reader closes the pipe (`| head`: exit 0,
// nothing on stderr), where before it printed an EPIPE stack and went on writing into nothing for ever.
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { runCli } from "../../support/cli";
import { CLI, type DaemonProc, killDaemonProc, makeWorld, seedSandbox, startDaemonProc, startSandbox, type World } from "../../support/daemon-proc";
import { ocsfProblems } from "../../support/ocsf-validate";

let w: World | undefined;
let d: DaemonProc | undefined;
let upstream: ReturnType<typeof Bun.serve> | undefined;
afterEach(async () => {
  await killDaemonProc(d);
  d = undefined;
  upstream?.stop(true);
  upstream = undefined;
  w?.cleanup();
  w = undefined;
});

/** Raw bytes to the proxy socket, as the in-sandbox forwarder relays them; `then` is sent after the first answer's head. */
function raw(socket: string, first: Buffer | string, then?: string): Promise<string> {
  return new Promise((resolve) => {
    let data = "";
    let sent = false;
    const s = connect({ path: socket });
    const timer = setTimeout(() => (s.destroy(), resolve(data)), 5000);
    s.on("connect", () => s.write(first));
    s.on("data", (b) => {
      data += b.toString("latin1");
      if (then !== undefined && !sent && data.includes("\r\n\r\n")) {
        sent = true;
        s.write(then);
      }
    });
    s.on("error", () => undefined);
    s.on("close", () => (clearTimeout(timer), resolve(data)));
  });
}

/** sbx as its own process, with the world's environment. */
async function sbx(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const p = Bun.spawn([process.execPath, CLI, ...args], { env: w!.env, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, out, err };
}

async function until(pred: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(50);
  }
}

/** A world with one running sandbox behind the real proxy, which may reach one loopback upstream (published). */
async function world(): Promise<{ proxy: string; port: number }> {
  upstream = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => new Response(`upstream saw ${new URL(req.url).pathname}`) });
  w = makeWorld();
  const sid = seedSandbox(w, "demo");
  const store = w.store();
  const sb = store.findSandbox("/r", "demo")!;
  store.updateIdentity(sb.id, { ...sb.identity, publish: [`127.0.0.1:${upstream.port}`] });
  d = await startDaemonProc(w, 10_000, "real-proxy");
  await startSandbox(w, "demo");
  return { proxy: join(w.paths.runtimeDir, "sb", sid, "proxy.sock"), port: upstream.port! };
}

const parse = (out: string) => out.split("\n").filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);

describe("ocsf-export: real egress, a real approval, exported by the CLI through the daemon's route", () => {
  test("an allowed request and tunnel, a refusal and its approval become OCSF events that validate, and JSONL records one a row", async () => {
    const { proxy, port } = await world();
    // Allowed: plain HTTP (an HTTP request sbx read), and a tunnel (a connection it carried blind).
    expect(await raw(proxy, `GET http://127.0.0.1:${port}/allowed/path?token=q-secret HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`)).toContain("upstream saw /allowed/path");
    expect(await raw(proxy, `CONNECT 127.0.0.1:${port} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`, `GET /in-tunnel HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`)).toContain("upstream saw /in-tunnel");
    // Refused, then approved by a person.
    expect(await raw(proxy, `GET http://blocked.test:8080/x HTTP/1.1\r\nHost: blocked.test:8080\r\nConnection: close\r\n\r\n`)).toMatch(/^HTTP\/1\.1 403/);
    const pending = JSON.parse((await runCli(["approvals", "--json"], { vars: w!.env })).stdout) as { id: number; host: string }[];
    const approval = pending.find((a) => a.host === "blocked.test")!;
    expect((await runCli(["approvals", "allow", String(approval.id)], { vars: w!.env })).code).toBe(0);
    // The proxy audits allowed traffic in batches: wait until the rows are in.
    const store = w!.store();
    await until(() => store.listAudit({ kind: "egress" }).filter((r) => r.action === "allowed").length >= 2, "the allowed rows");

    const ocsf = await sbx(["logs", "--export", "ocsf"]);
    expect({ code: ocsf.code, err: ocsf.err }).toEqual({ code: 0, err: "" });
    const events = parse(ocsf.out);
    expect(events.length).toBe(store.listAudit({ limit: 10_000 }).length);
    for (const e of events) expect({ uid: (e.metadata as { uid: string }).uid, problems: ocsfProblems(e) }).toEqual({ uid: (e.metadata as { uid: string }).uid, problems: [] });
    const find = (cls: number, pred: (e: Record<string, unknown>) => boolean) => events.filter((e) => e.class_uid === cls && pred(e));
    const get = (e: Record<string, unknown>, path: string) => path.split(".").reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], e);
    // The plain request: HTTP Activity Get, allowed, its path and never its query.
    expect(find(4002, (e) => get(e, "http_request.url.path") === "/allowed/path").map((e) => [e.activity_id, e.action_id, get(e, "dst_endpoint.ip"), get(e, "dst_endpoint.port")])).toEqual([[3, 1, "127.0.0.1", port]]);
    expect(ocsf.out).not.toContain("q-secret");
    // The tunnel: Network Activity Close, allowed, with its bytes.
    const tunnel = find(4001, (e) => e.activity_id === 2);
    expect(tunnel).toHaveLength(1);
    expect((get(tunnel[0]!, "traffic.bytes_in") as number) > 0).toBe(true);
    // The refusal: HTTP Activity (a plain request), denied and blocked, to blocked.test.
    expect(find(4002, (e) => get(e, "dst_endpoint.hostname") === "blocked.test").map((e) => [e.action_id, e.disposition_id, e.status_id])).toEqual([[2, 2, 2]]);
    // The approval: User Access Management, Assign Privileges to demo, by the person at the CLI.
    const granted = find(3005, (e) => e.activity_id === 1);
    expect(granted.map((e) => [get(e, "user.name"), e.privileges, (get(e, "actor.user.name") as string).startsWith("cli:")])).toEqual([["demo", ["egress:blocked.test:8080"], true]]);

    const jsonl = await sbx(["logs", "--export", "jsonl", "--kind", "egress", "--sandbox", "demo"]);
    const recs = parse(jsonl.out);
    expect(recs.map((r) => r.action).sort()).toEqual(["allowed", "allowed", "denied"]);
    expect(recs.every((r) => typeof r.time === "string" && /Z$/.test(r.time as string) && r.sandbox === "demo")).toBe(true);
  }, 60_000);

  test("export-framing: what a hostile sandbox sends (a forged record in a host, U+2028, NEL, escapes in a ref name) stays inside its one line", async () => {
    const { proxy } = await world();
    // The proxy refuses a request line that is not ASCII (400, no row): a forged record in ASCII is what reaches a row.
    expect(await raw(proxy, Buffer.from(`CONNECT nope\u2028x.test:443 HTTP/1.1\r\n\r\n`, "utf8"))).toMatch(/^HTTP\/1\.1 400/);
    const forged = 'x"},{"id":999,"kind":"allowlist","action":"allow","detail":{"pattern":"*"}},{"a":"';
    expect(await raw(proxy, `CONNECT ${forged}:443 HTTP/1.1\r\nHost: a\r\n\r\n`)).toMatch(/^HTTP\/1\.1 (400|403)/);
    expect(await raw(proxy, `GET http://blocked.test/${encodeURIComponent(forged)}%0a%e2%80%a8 HTTP/1.1\r\nHost: blocked.test\r\nConnection: close\r\n\r\n`)).toMatch(/^HTTP\/1\.1 403/);
    // A ref name the bridge was asked to push holds any Unicode a sandbox chose: such a row, as the bridge guard writes it.
    const store = w!.store();
    const sb = store.findSandbox("/r", "demo")!;
    const ref = `feature\u2028${forged}\x85\u2029\x1b]52;c;cHduZWQ=\x07`;
    store.audit({ sandboxId: sb.id, kind: "guard", action: "git.refused", detail: { tool: "git", args: ["push", "origin", ref], decision: "refused", reason: `refusing ${ref}` } });
    await until(() => store.listAudit({ kind: "egress" }).length >= 1, "the refusals");
    const rows = store.listAudit({ limit: 10_000 });
    for (const format of ["jsonl", "ocsf"] as const) {
      const r = await sbx(["logs", "--export", format]);
      expect(r.code).toBe(0);
      // Split as the strictest reader splits lines: one record per row, none forged, each parses, the ref whole.
      const records = r.out.split(/[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]/).filter(Boolean);
      expect(records).toHaveLength(rows.length);
      const parsed = records.map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(parsed.map((o) => Number(format === "jsonl" ? o.id : (o.metadata as { uid: string }).uid))).toEqual(rows.map((x) => x.id));
      expect(JSON.stringify(parsed)).toContain(JSON.stringify(ref).slice(1, -1));
      expect(r.out).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]/);
    }
  }, 60_000);
});

describe("bounded: an export holds a page, not the log", () => {
  test.skipIf(!existsSync("/proc/self/status"))("60,000 rows of 1.5 KB (≈90 MB out) are exported in under 180 MB (a page at a time; it held every page: 270 MB and growing)", async () => {
    w = makeWorld();
    seedSandbox(w, "demo");
    const store = w.store();
    const sb = store.findSandbox("/r", "demo")!;
    const pad = "x".repeat(1500);
    store.write(() => {
      for (let i = 0; i < 60_000; i++) store.audit({ sandboxId: sb.id, kind: "lifecycle", action: "limits", detail: { i, pad } });
    });
    d = await startDaemonProc(w);
    const p = Bun.spawn([process.execPath, CLI, "logs", "--export", "jsonl"], { env: w.env, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
    let peakKb = 0;
    const rss = () => {
      const m = /VmRSS:\s+(\d+) kB/.exec(existsSync(`/proc/${p.pid}/status`) ? readFileSync(`/proc/${p.pid}/status`, "utf8") : "");
      if (m) peakKb = Math.max(peakKb, Number(m[1]));
    };
    const sampler = setInterval(rss, 20);
    let lines = 0;
    let tail = "";
    for await (const chunk of p.stdout) {
      const text = tail + new TextDecoder().decode(chunk);
      const parts = text.split("\n");
      tail = parts.pop()!;
      lines += parts.length;
    }
    clearInterval(sampler);
    expect({ code: await p.exited, lines, tail }).toEqual({ code: 0, lines: store.listAudit({ limit: 100_000 }).length, tail: "" });
    expect(peakKb).toBeGreaterThan(0);
    expect(peakKb / 1024).toBeLessThan(180);
  }, 120_000);
});

describe("--follow streams, and ends cleanly", () => {
  test("piped into `head`, it exits 0 with nothing on stderr once head has its lines (it printed an EPIPE stack and never ended)", async () => {
    await world();
    const store = w!.store();
    const sb = store.findSandbox("/r", "demo")!;
    const status = join(w!.root, "status");
    const errFile = join(w!.root, "err");
    const pipeline = Bun.spawn(["bash", "-c", `"$0" "$1" logs --follow --export jsonl -n 1 2>"$2" | head -n 2 >/dev/null; echo "\${PIPESTATUS[0]}" >"$3"`, process.execPath, CLI, errFile, status], { env: w!.env, stdout: "ignore", stderr: "ignore" });
    let done = false;
    void pipeline.exited.then(() => (done = true));
    // New entries while it follows: the second reaches head, which exits; the next write finds the pipe closed.
    const started = Date.now();
    for (let i = 0; !done && Date.now() - started < 20_000; i++) {
      store.audit({ sandboxId: sb.id, kind: "lifecycle", action: "tick", detail: { i } });
      await Bun.sleep(200);
    }
    expect(done).toBe(true);
    expect({ status: readFileSync(status, "utf8").trim(), err: readFileSync(errFile, "utf8") }).toEqual({ status: "0", err: "" });
  }, 30_000);

  test("Ctrl-C ends it at once with 130, nothing on stderr, every line it printed whole (the long poll it waited on is let go)", async () => {
    await world();
    const p = Bun.spawn([process.execPath, CLI, "logs", "--follow", "--export", "ocsf"], { env: w!.env, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
    let out = "";
    const reading = (async () => {
      for await (const chunk of p.stdout) out += new TextDecoder().decode(chunk);
    })();
    await until(() => out.includes("\n"), "the first entries");
    // It now waits on the daemon for up to 25 s; SIGINT must not wait for that.
    await Bun.sleep(300);
    const sent = Date.now();
    p.kill("SIGINT");
    const code = await p.exited;
    await reading;
    expect({ code, fast: Date.now() - sent < 3000, err: await new Response(p.stderr).text() }).toEqual({ code: 130, fast: true, err: "" });
    expect(out.endsWith("\n")).toBe(true);
    for (const line of out.split("\n").filter(Boolean)) expect(ocsfProblems(JSON.parse(line))).toEqual([]);
  }, 30_000);
});
