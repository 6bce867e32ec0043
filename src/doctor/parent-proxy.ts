// sbx doctor's parent proxy lines: the company proxy the daemon goes out through (as people see it, never its
// credentials), where that was read, and whether it carries a CONNECT to a host sbx itself needs; and, when image
// builds reach it only through sbx's per-build relay, whether that relay can be opened where build steps reach it.
import { buildRelayWanted, noProxySurprises, type ParentSettings } from "../core/parent-proxy";
import { leaseBuildProxy } from "../sys/build-relay";
import { dialParent, ParentRouter, TUNNEL_OPEN } from "../sys/parent";
import type { Check } from "./check";

/** What the doctor asks the parent to open (sbx's own LLM upstream; nothing is sent inside the tunnel). */
export const PARENT_PROBE = { host: "api.anthropic.com", port: 443 };

export interface ParentCheckInput {
  settings: ParentSettings | null;
  /** What was set and cannot be used (core/parent-proxy.ts). */
  problems: readonly string[];
  /** Stored secrets by name (the config's `proxy.credentials`). */
  secrets: Readonly<Record<string, string>>;
  probe?: { host: string; port: number };
  timeoutMs?: number;
}

/**
 * runs: a TCP connection to the parent and `CONNECT api.anthropic.com:443` on it (closed once it answers); nothing
 * when no parent is set.
 */
export async function checkParentProxy(i: ParentCheckInput): Promise<Check> {
  const name = "parent proxy";
  if (i.settings === null) {
    if (i.problems.length > 0) return { name, status: "warn", detail: `set but not used: ${i.problems.join("; ")}`, fix: "Name an http:// proxy (HTTPS_PROXY=http://proxy:3128), or set `proxy` in the config file" };
    return { name, status: "ok", detail: "none: the daemon connects straight out (HTTPS_PROXY, HTTP_PROXY or the config file's `proxy` name one)" };
  }
  const s = i.settings;
  const router = new ParentRouter(s, (n) => i.secrets[n] ?? null);
  const probe = i.probe ?? PARENT_PROBE;
  const shown = s.https && s.http && s.https.shown !== s.http.shown ? `${s.https.shown} for TLS, ${s.http.shown} for plain HTTP` : (s.https ?? s.http)!.shown;
  const where = `${shown}, from ${s.source === "config" ? "the config file" : "the environment"}${s.noProxy ? `; NO_PROXY ${s.noProxy}` : ""}`;
  const notes = [...i.problems, ...noProxySurprises(s.noProxy)];
  const endpoint = s.https ?? s.http!;
  if (s.source === "environment" && endpoint.credentials?.kind === "inline") {
    notes.push("its URL holds credentials, which a daemon run as a service never gets (sbx writes no secret into a unit file): put them in a stored secret named by the config file's proxy.credentials");
  }
  const route = router.route("https", probe.host) ?? router.route("http", probe.host);
  if (route === null) return { name, status: notes.length > 0 ? "warn" : "ok", detail: `${where} (NO_PROXY sends ${probe.host} straight out, so it was not tried)${notes.length ? `; ${notes.join("; ")}` : ""}` };
  const outcome = await new Promise<{ ok: true } | { ok: false; message: string; status: number | null }>((resolve) => {
    const { socket } = dialParent(route, probe.host, probe.port);
    const timer = setTimeout(() => socket.destroy(new Error(`no answer within ${i.timeoutMs ?? 5000} ms`)), i.timeoutMs ?? 5000);
    socket.once(TUNNEL_OPEN, () => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ ok: true });
    });
    socket.once("error", (e: Error & { status?: number | null }) => {
      clearTimeout(timer);
      resolve({ ok: false, message: e.message, status: e.status ?? null });
    });
  });
  const tried = `CONNECT ${probe.host}:${probe.port}`;
  if (outcome.ok) return { name, status: notes.length > 0 ? "warn" : "ok", detail: `${where}: ${tried} went through${notes.length ? `; ${notes.join("; ")}` : ""}` };
  const fix =
    outcome.status === 407
      ? 'Give sbx the proxy\'s credentials: sbx secret set PROXY_LOGIN (user:password), and in the config file "proxy": {"url": …, "credentials": "PROXY_LOGIN"}'
      : outcome.status !== null
        ? `Ask whoever runs the proxy to let ${probe.host} through; sbx judges each sandbox's hosts itself, the proxy only carries them`
        : "Check the proxy's address and port (what your browser or `curl -x` uses here)";
  return { name, status: "fail", detail: `${where}: ${tried} failed: ${outcome.message}`, fix };
}

/**
 * sbx doctor's image-build line, only when builds reach the parent through a per-build relay (it wants a login, or it
 * is on this machine's loopback): whether the engine names a gateway on its default bridge and a relay can listen
 * there, as a build would open one (sys/build-relay.ts), closed at once. Null (no line) when builds need no relay.
 * Runs: the engine's bridge gateway (`gateway`); a listener on it, opened and closed; nothing is sent anywhere.
 */
export async function checkBuildRelay(i: { settings: ParentSettings | null; secrets: Readonly<Record<string, string>>; gateway: () => Promise<string | null> }): Promise<Check | null> {
  if (!buildRelayWanted(i.settings)) return null;
  const name = "image builds";
  let gateway: string | null = null;
  const lease = await leaseBuildProxy(new ParentRouter(i.settings!, (n) => i.secrets[n] ?? null), async () => (gateway = await i.gateway()));
  await lease.release();
  if (lease.notes.length === 0) {
    return { name, status: "ok", detail: `build steps reach the parent proxy through a per-build relay on ${gateway ?? "the engine's bridge gateway"} (one password per build; never the proxy's login)` };
  }
  return {
    name,
    status: "warn",
    detail: lease.notes.join("; "),
    fix: "Run sbx beside a local Docker engine whose default bridge network has a gateway on this machine (docker network inspect bridge), or give the parent proxy to the engine itself (dockerd's proxy settings)",
  };
}
