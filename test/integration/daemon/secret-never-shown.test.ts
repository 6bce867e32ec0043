// secret-never-shown: a secret bound to a host, really used through the daemon's terminating proxy (a session's curl,
// with the placeholder its session got, to a TLS site that echoes what it was sent, answers what sbx cannot read, and
// is asked outside the secret's methods), leaves secret.used / secret.outside / error rows in the audit and events on
// the feed, and its value, or a recognisable piece of it, is on none of the surfaces a person or another process reads:
// `sbx logs` (text and --json), `sbx secret list` (text and --json), the dashboard (its page, script, /api/state and
// the live feed), the chat bot's messages (its notices and its answer to /status), desktop notifications and the
// daemon's own log; while the secret's name is where it belongs (the audit, the list). The real daemon (a subprocess:
// the production BoundSecrets, proxy guard, dashboard and Zulip bot), the real CLI, a fake Zulip, a loopback TLS site.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { connect as netConnect, createServer as createNetServer, type Server } from "node:net";
import { createServer as createTlsServer, type Server as TlsServer } from "node:tls";
import { join } from "node:path";
import { buildZulipConfig, writeChatConfig } from "../../../src/chat/config";
import { topicFor } from "../../../src/chat/commands";
import { uiLaunch } from "../../../src/client/hosted";
import { issueLeaf, loadCa, makeCa } from "../../../src/tls/x509";
import { CLI, type DaemonProc, killDaemonProc, makeWorld, seedSandbox, startDaemonProc, startSandbox, type World } from "../../support/daemon-proc";
import { startFakeZulip, type FakeZulip } from "../../support/fake-zulip";

const VALUE = "sk_live_Vq3TzN8wKd2Lm5XpRb7Hc4Jy";
/** A recognisable piece of the value that is not the issuer's prefix (every placeholder of it starts `sk_live_`). */
const PIECE = VALUE.slice(8, 20);
const BOT = "sbx-bot@zulip.test";
const KEY = "bot-key-0123456789abcdef";
const ALICE = "alice@example.com";

let w: World;
let d: DaemonProc;
let zulip: FakeZulip;
let site: TlsServer;
let relay: Server;
let relayPort = 0;
let sitePort = 0;
let sid = "";
let notifyLog = "";
/** What the site was sent: each request's first line and Authorization. */
const siteSaw: string[] = [];
/** The dashboard's live feed, as its page reads it, from before the first request. */
let feed = "";
let stopFeed: () => Promise<void> = async () => {};
let cookie = "";
let origin = "";
/** What each session printed (the sandbox's own view). */
const sessionOut: string[] = [];
let placeholder = "";
/** The person's repo (sbx is run from inside it). */
let repo = "";

/** The CLI as a person runs it (async: the test's TLS site answers in this process). */
async function sbx(args: string[], stdin?: string): Promise<{ code: number; out: string; err: string }> {
  const p = Bun.spawn([process.execPath, CLI, ...args], { env: w.env, cwd: repo, stdin: stdin === undefined ? "ignore" : Buffer.from(stdin), stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, out, err };
}

/** A command in a session of the sandbox, with the variables a session gets (its placeholder, sbx's CA to trust). */
async function inside(script: string): Promise<string> {
  const r = await sbx(["exec", "demo", "--", "sh", "-c", script]);
  sessionOut.push(r.out, r.err);
  return r.out;
}

async function until(pred: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(25);
  }
}

/** Every surface, as text: what each shows now. */
async function surfaces(): Promise<Record<string, string>> {
  const get = async (path: string) => (await fetch(`${origin}${path}`, { headers: { cookie } })).text();
  return {
    "sbx logs": (await sbx(["logs", "-n", "500"])).out,
    "sbx logs --json": (await sbx(["logs", "-n", "500", "--json"])).out,
    "sbx secret list": (await sbx(["secret", "list"])).out,
    "sbx secret list --json": (await sbx(["secret", "list", "--json"])).out,
    "dashboard page": await get(""),
    "dashboard script": await get("static/app.js"),
    "dashboard /api/state": await get("api/state"),
    "dashboard live feed": feed,
    chat: JSON.stringify(zulip.messages.filter((m) => m.sender_email === BOT).map((m) => [m.subject, m.content])),
    "desktop notifications": existsSync(notifyLog) ? readFileSync(notifyLog, "utf8") : "",
    "daemon log": d.log(),
  };
}

beforeAll(async () => {
  w = makeWorld();
  // Desktop notifications go to a notify-send that records its argv.
  const bin = join(w.root, "bin");
  mkdirSync(bin, { recursive: true });
  notifyLog = join(w.root, "notify.log");
  writeFileSync(join(bin, "notify-send"), `#!/usr/bin/env bun\nrequire("node:fs").appendFileSync(${JSON.stringify(notifyLog)}, JSON.stringify(process.argv.slice(2)) + "\\n");\n`, { mode: 0o755 });
  w.env.PATH = `${bin}:${w.env.PATH}`;

  // The site: api.test's certificate from a CA the daemon trusts the standard way (NODE_EXTRA_CA_CERTS). It echoes the
  // Authorization it was sent (head and body), and on /v1/bad answers a header named after it that sbx cannot read.
  const world = await makeCa("world test CA");
  const leaf = await issueLeaf(await loadCa(world.certPem, world.keyPem), ["api.test"]);
  writeFileSync(join(w.root, "world-ca.pem"), world.certPem);
  w.env.NODE_EXTRA_CA_CERTS = join(w.root, "world-ca.pem");
  site = createTlsServer({ cert: leaf.certPem, key: leaf.keyPem }, (s) => {
    let head = "";
    s.on("data", (b: Buffer) => {
      head += b.toString("latin1");
      if (!head.includes("\r\n\r\n")) return;
      const auth = /\r\nauthorization: ([^\r]*)/i.exec(head)?.[1] ?? "none";
      siteSaw.push(`${head.split("\r\n", 1)[0]} | ${auth}`);
      const token = auth.replace(/^Bearer /, "");
      const body = `you sent ${auth}\n`;
      const path = head.split(" ")[1] ?? "";
      s.end(
        path.startsWith("/v1/bad")
          ? `HTTP/1.1 200 OK\r\nx-${token}: a\x01b\r\nContent-Length: 2\r\n\r\nok`
          : `HTTP/1.1 200 OK\r\nX-Echo: ${auth}\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
        "latin1",
      );
    });
    s.on("error", () => s.destroy());
  });
  await new Promise<void>((r) => site.listen(0, "127.0.0.1", () => r()));
  sitePort = (site.address() as { port: number }).port;

  repo = realpathSync(mkdirSync(join(w.root, "repo"), { recursive: true }) ?? join(w.root, "repo"));
  for (const argv of [["git", "init", "-q", "-b", "main", repo], ["git", "-C", repo, "-c", "user.name=p", "-c", "user.email=p@x", "commit", "-q", "--allow-empty", "-m", "first"]]) {
    if (Bun.spawnSync(argv).exitCode !== 0) throw new Error(argv.join(" "));
  }
  zulip = startFakeZulip({ accounts: { [BOT]: KEY, [ALICE]: "alice-key" }, heartbeatMs: 200 });
  writeChatConfig(w.paths.configDir, buildZulipConfig({ site: zulip.site, email: BOT, apiKey: KEY, stream: "sandboxes", allowSenders: [ALICE] }));
  sid = seedSandbox(w, "demo", undefined, repo);
  // The site is a service of the host's loopback: published for this sandbox, and its name allowed.
  const store = w.store();
  const row = store.findSandbox(repo, "demo")!;
  store.updateIdentity(row.id, { ...row.identity, publish: [`127.0.0.1:${sitePort}`] });
  store.addAllow(row.id, `api.test:${sitePort}`, "test");
  d = await startDaemonProc(w, 15_000, "real-proxy", "secrets", "notify");

  // As the person does it: the value on stdin, never on a command line.
  const set = await sbx(["secret", "set", "API_TOKEN", "--host", "api.test", "--header", "Authorization: Bearer {}", "--method", "GET", "--path", "/v1/**"], VALUE);
  if (set.code !== 0) throw new Error(`sbx secret set: ${set.err}`);
  await startSandbox(w, "demo");

  // The sandbox's forwarder: a loopback port whose connections go to its proxy's socket.
  const proxySock = join(w.paths.runtimeDir, "sb", sid, "proxy.sock");
  relay = createNetServer((c) => {
    const u = netConnect({ path: proxySock });
    c.pipe(u).pipe(c);
    c.on("error", () => u.destroy());
    u.on("error", () => c.destroy());
  });
  await new Promise<void>((r) => relay.listen(0, "127.0.0.1", () => r()));
  relayPort = (relay.address() as { port: number }).port;

  // The dashboard, signed in, its live feed open before anything happens.
  await until(() => zulip.registrations() >= 1, "the bot to register");
  const launch = await uiLaunch(w.client, 60_000);
  origin = launch.origin;
  const login = await fetch(launch.url, { redirect: "manual" });
  cookie = (login.headers.get("set-cookie") ?? "").split(";")[0]!;
  const sse = await fetch(`${origin}api/events`, { headers: { cookie } });
  const reader = sse.body!.getReader();
  const reading = (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      feed += new TextDecoder().decode(value);
    }
  })().catch(() => undefined);
  stopFeed = async () => {
    await reader.cancel().catch(() => undefined);
    await reading;
  };
  await until(() => feed.includes("event: hello"), "the feed to open");

  // The uses, from inside: in scope (the echo), with the placeholder in the query too, an answer sbx cannot read,
  // outside its methods, a Host header that disagrees (a denial, so a chat notice), and a host that is not allowed.
  const curl = `curl -sS -m 15 -x http://127.0.0.1:${relayPort}`;
  const base = `https://api.test:${sitePort}`;
  placeholder = (await inside('printf %s "$API_TOKEN"')).trim();
  await inside(`${curl} -i -H "Authorization: Bearer $API_TOKEN" "${base}/v1/echo?key=$API_TOKEN"`);
  await inside(`${curl} -i ${base}/v1/echo-added`);
  await inside(`${curl} -i -H "Authorization: Bearer $API_TOKEN" ${base}/v1/bad`);
  await inside(`${curl} -i -X DELETE -H "Authorization: Bearer $API_TOKEN" ${base}/v1/echo`);
  await inside(`${curl} -i -H "Host: other.test" -H "Authorization: Bearer $API_TOKEN" ${base}/v1/echo`);
  await inside(`${curl} -i http://blocked.test:8080/`);
  await until(() => zulip.messages.filter((m) => m.sender_email === BOT).length >= 1, "a chat notice");
  // The person asks the bot for the sandbox's status in its topic.
  zulip.say(ALICE, "sandboxes", topicFor({ name: "demo", repo }), "/status");
  await until(() => zulip.messages.filter((m) => m.sender_email === BOT && m.content.includes("**demo** is")).length >= 1, "the bot's /status answer");
  await until(() => feed.includes("blocked.test"), "the feed to show the refusal");
}, 90_000);

afterAll(async () => {
  await stopFeed();
  await killDaemonProc(d);
  relay?.close();
  site?.close();
  await zulip?.stop();
  w?.cleanup();
});

describe("secret-never-shown: a bound secret's value is on no surface a person or another process reads", () => {
  test("the secret was really used: the site got the value, the sandbox its placeholder back, the audit has each kind of row", async () => {
    expect(placeholder).toMatch(new RegExp(`^sk_live_[A-Za-z0-9]{${VALUE.length - 8}}$`));
    expect(siteSaw.filter((l) => l.includes(`Bearer ${VALUE}`)).length).toBeGreaterThanOrEqual(3);
    expect(siteSaw.some((l) => l.startsWith("GET /v1/echo?key=") && l.includes(VALUE))).toBe(true);
    // Outside its methods: the placeholder went as it is.
    expect(siteSaw.some((l) => l.startsWith("DELETE /v1/echo") && l.endsWith(`Bearer ${placeholder}`))).toBe(true);
    const seen = sessionOut.join("\n");
    expect(seen).toContain(`you sent Bearer ${placeholder}`);
    expect(seen).toContain("HTTP/1.1 502");
    expect(seen).not.toContain(PIECE);
    const logs = (await sbx(["logs", "-n", "500", "--json"])).out.trim().split("\n").map((l) => JSON.parse(l) as { action: string; detail: Record<string, unknown> });
    const actions = new Set(logs.map((e) => e.action));
    for (const a of ["secret.bound", "secret.used", "secret.outside", "error", "allowed", "denied"]) expect({ a, present: actions.has(a) }).toEqual({ a, present: true });
    expect(logs.find((e) => e.action === "error")!.detail.message).toContain(`x-${placeholder}`);
  });

  test("no surface holds the value, nor a 12-character piece of it", async () => {
    const all = await surfaces();
    expect(Object.entries(all).filter(([, text]) => text.length === 0).map(([where]) => where)).toEqual([]);
    expect(Object.entries(all).filter(([, text]) => text.includes(VALUE) || text.includes(PIECE)).map(([where]) => where)).toEqual([]);
  });

  test("the secret's name is where it belongs: each use in the logs (text and --json), the list", async () => {
    const all = await surfaces();
    expect(all["sbx logs"]).toMatch(/secret\.used .*secret=API_TOKEN/);
    expect(all["sbx logs"]).toMatch(/secret\.outside .*secret=API_TOKEN/);
    expect(all["sbx logs --json"]).toContain('"secret":"API_TOKEN"');
    expect(all["sbx secret list"]).toContain("API_TOKEN");
    expect(JSON.parse(all["sbx secret list --json"]!)).toMatchObject([{ name: "API_TOKEN", stored: true, bindings: [{ name: "API_TOKEN", hosts: ["api.test"] }] }]);
    // The dashboard and chat show the connections and refusals, with the host, not the secret's uses.
    expect(all["dashboard live feed"]).toContain("api.test");
    expect(all["dashboard /api/state"]).toContain("api.test");
    expect(all.chat).toContain("blocked.test");
  });
});
