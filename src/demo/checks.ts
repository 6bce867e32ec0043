// The claims `sbx demo` checks once its sandbox runs, in order: the allowed site through the proxy, a refused one with
// its approval and allow, no way around the proxy (direct TCP, DNS), a push with the host's token, the token found
// nowhere inside, a secret-shaped push refused, the agent's commit seen on the host with no fetch, an npm install from a private
// registry on the host's loopback whose token the host binds to host.sbx.internal.
import { join } from "node:path";
import { agent, agentFailure, containerState, git, SANDBOX, sbx, step, why, type Ctx } from "./commands";
import type { DemoSite } from "./site";
import { clip, type Step } from "./steps";
import type { Upstream } from "./upstream";
import { GREETING, PACKAGE, type Registry } from "./registry";

/** One check: its id, what it tries and expects, and the run that records its step. */
export type Check = [id: string, tried: string, expected: string, run: () => Promise<void>];

export interface CheckWorld {
  c: Ctx;
  /** Where each finished step is kept. */
  steps: Step[];
  note: (line: string) => void;
  /** The site to allow, and the one not on the list. */
  allowed: DemoSite;
  other: DemoSite;
  upstream: Upstream;
  /** The upstream's token, which only the host knows. */
  token: string;
  /** In the repo's README: the file scan found it, so the scan ran. */
  canary: string;
  /** The private npm registry on the host's loopback, its token (only the host knows it), and why npm is missing if it is. */
  registry: Registry;
  npmToken: string;
  noNpm: string | undefined;
  /** The sandbox's container once created (null when none carries its labels). */
  before: { id: string; started: string; image: string } | null;
}

/** The checks, in order; each records its step when run. */
export function demoChecks(w: CheckWorld): Check[] {
  const { c, steps, note, allowed, other, upstream, token, canary, before, registry, npmToken, noNpm } = w;
  const root = c.root;
  const plan: Check[] = [];
  const add = (id: string, tried: string, expected: string, fn: () => Promise<Omit<Step, "id" | "tried" | "expected">>) =>
    plan.push([id, tried, expected, async () => step(c, steps, { id, tried, expected, ...(await fn()) })]);

  // 2. The allowed site, through the proxy.
  add("allowed-site", `curl ${allowed.url} (through the proxy)`, "HTTP 200 from the site", async () => {
    note(`the demo site runs on this machine's loopback, which no allowlist reaches: the demo publishes that one service (sbx publish ${SANDBOX} ${allowed.pattern})`);
    const a = await sbx(c, ["publish", SANDBOX, allowed.pattern]);
    if (a.exitCode !== 0) return { happened: `sbx publish ${SANDBOX} ${allowed.pattern} failed: ${why(a)}`, pass: false };
    const hits = allowed.hits();
    const { r, kv } = await agent(c, "fetch", allowed.url);
    const ok = kv.http_code === "200" && (kv.body ?? "").includes("allowed site") && allowed.hits() > hits;
    return { happened: ok ? `200 "${clip(kv.body ?? "", 60)}" via ${kv.proxy}` : agentFailure(r, kv), pass: ok };
  });

  // 3. A site not on the list: 403 with the header, the approval, sbx allow, success without restart.
  add("blocked-site", `curl ${other.url} (not on the list)`, "refused with 403 and an X-Sbx-Blocked header", async () => {
    const { r, kv } = await agent(c, "blocked", other.url, other.pattern);
    const ok = kv.http_code !== "200" && /\b403\b/.test(kv.status ?? "") && /x-sbx-blocked/i.test(kv.header ?? "") && other.hits() === 0;
    return {
      happened: ok ? `${kv.status}; ${kv.header}; "${clip(kv.text ?? "", 150)}"` : agentFailure(r, kv),
      pass: ok,
    };
  });
  add("approval-pending", "sbx approvals (on the host)", `a pending approval for ${other.pattern} from sandbox ${SANDBOX}`, async () => {
    const r = await sbx(c, ["approvals", "--json"]);
    let rows: Array<{ id: number; sandbox: string; host: string; port: number; count: number; reason: string }> = [];
    try {
      rows = JSON.parse(r.stdout);
    } catch {
      return { happened: `no JSON from sbx approvals: ${why(r)}`, pass: false };
    }
    const hit = rows.find((a) => a.sandbox === SANDBOX && a.host === other.ip && a.port === other.port);
    return { happened: hit ? `approval #${hit.id}: ${hit.host}:${hit.port} (${hit.reason}, seen ${hit.count}x)` : `${rows.length} pending, none for ${other.pattern}`, pass: hit !== undefined };
  });
  add("allow-then-reach", `sbx approvals allow <that approval> (it publishes ${other.pattern} for ${SANDBOX}), then curl again`, "HTTP 200, same container, no restart", async () => {
    const pending = await sbx(c, ["approvals", "--json"]);
    let rows: Array<{ id: number; sandbox: string; host: string; port: number }> = [];
    try {
      rows = JSON.parse(pending.stdout);
    } catch {
      return { happened: `no JSON from sbx approvals: ${why(pending)}`, pass: false };
    }
    const hit = rows.find((x) => x.sandbox === SANDBOX && x.host === other.ip && x.port === other.port);
    if (!hit) return { happened: `no pending approval for ${other.pattern} to allow`, pass: false };
    const a = await sbx(c, ["approvals", "allow", String(hit.id)]);
    if (a.exitCode !== 0) return { happened: `sbx approvals allow ${hit.id} failed: ${why(a)}`, pass: false };
    const { r, kv } = await agent(c, "fetch", other.url);
    const after = await containerState(c);
    const same = before !== null && after !== null && after.id === before.id && after.started === before.started;
    const ok = kv.http_code === "200" && other.hits() > 0 && same;
    return {
      happened: kv.http_code === "200" ? `200 "${clip(kv.body ?? "", 50)}"; container ${same ? "not restarted" : "RESTARTED or replaced"}` : agentFailure(r, kv),
      pass: ok,
    };
  });

  // 4. Around the proxy: direct TCP and DNS.
  add("direct-tcp", `curl --noproxy '*' ${allowed.url} (straight, not through the proxy)`, "fails; the sandbox has no route out", async () => {
    const { r, kv } = await agent(c, "direct", allowed.url);
    const ok = kv.direct_exit !== undefined && kv.direct_exit !== "0" && kv.routes === "0";
    return { happened: kv.direct_exit !== undefined ? `curl exit ${kv.direct_exit}; interfaces: ${kv.interfaces}; routes out: ${kv.routes}` : agentFailure(r, kv), pass: ok };
  });
  add("dns", "getent hosts sbx-demo-probe.example.com (and a reserved .invalid name)", "only sbx's stub answers: a sandbox-local 127.77.x.y, no query leaves; .invalid fails", async () => {
    const { r, kv } = await agent(c, "dns");
    const ok = (kv.nameservers ?? "").trim() === "127.77.0.1" && /^127\.77\.\d+\.\d+$/.test(kv.answer ?? "") && kv.getent_exit !== undefined && kv.getent_exit !== "0";
    return { happened: kv.nameservers !== undefined ? `nameserver ${kv.nameservers.trim()}; answer ${kv.answer || "none"}; .invalid: getent exit ${kv.getent_exit}` : agentFailure(r, kv), pass: ok };
  });

  // 5. A push through the shim and bridge, with the token added on the host.
  let sha = "";
  add("push", `git commit && git push origin agent-work:sbx/${SANDBOX}/agent-work (its own branch prefix; through the shim and bridge)`, "the token-demanding upstream accepts it", async () => {
    const { r, kv } = await agent(c, "push");
    sha = kv.sha ?? "";
    const up = await git(c, root, ["--git-dir", join(root, "upstream", "demo.git"), "rev-parse", "--verify", "-q", `refs/heads/sbx/${SANDBOX}/agent-work`]);
    const authed = upstream.requests.some((q) => q.authorized && q.method === "POST" && q.path.endsWith("git-receive-pack"));
    const ok = kv.push_exit === "0" && sha !== "" && up.stdout.trim() === sha && authed;
    return {
      happened: ok ? `pushed ${sha.slice(0, 12)}; upstream has it (the request carried the host's token)` : kv.push_exit !== undefined ? `push exit ${kv.push_exit}: ${clip(kv.push_output ?? "", 160)}` : agentFailure(r, kv),
      pass: ok,
    };
  });
  add("token-absent", "look for the upstream token inside: env, /proc/*/cmdline and environ, every readable file", "found nowhere", async () => {
    const ev = await sbx(c, ["shell", SANDBOX, "--", "bash", "agent.sh", "evidence"]);
    const evOk = ev.exitCode === 0 && ev.stdout.includes("----- end");
    const inEvidence = (ev.stdout + ev.stderr).includes(token);
    // Patterns on stdin, never argv: the canary proves the scan read them and reached the workspace.
    const scan = await sbx(c, ["shell", SANDBOX, "--", "grep", "-rasoF", "-D", "skip", "--exclude-dir=proc", "--exclude-dir=sys", "--exclude-dir=dev", "-f", "-", "/"], {
      stdin: `${canary}\n${token}\n`,
      timeoutMs: 300_000,
    });
    const sawCanary = scan.stdout.includes(canary);
    const inFiles = scan.stdout.split("\n").filter((l) => l.includes(token)).map((l) => l.slice(0, l.indexOf(":")));
    const ok = evOk && !inEvidence && sawCanary && inFiles.length === 0;
    const parts = [
      evOk ? (inEvidence ? "FOUND in env/argv" : "not in env, argv or environ") : `could not read env/argv (${why(ev)})`,
      !sawCanary ? `file scan inconclusive (it did not find the canary: ${why(scan)})` : inFiles.length ? `FOUND in ${inFiles.slice(0, 3).join(", ")}` : "in no file (the scan found the README's canary, so it ran)",
    ];
    return { happened: parts.join("; "), pass: ok };
  });
  add("secret-scan", "commit a key-shaped string (AKIA…) and push it", "the bridge refuses the push", async () => {
    const { r, kv } = await agent(c, "leak");
    const up = await git(c, root, ["--git-dir", join(root, "upstream", "demo.git"), "rev-parse", "--verify", "-q", "refs/heads/leaky"]);
    const refused = kv.push_exit !== undefined && kv.push_exit !== "0";
    const ok = refused && up.exitCode !== 0 && /secret|key|refus/i.test(kv.push_output ?? "");
    return { happened: kv.push_exit !== undefined ? `push exit ${kv.push_exit}: ${clip(kv.push_output ?? "", 160)}` : agentFailure(r, kv), pass: ok };
  });

  // 6. The host sees the agent's commit with no fetch (ref sync).
  add("host-sees-commit", "git rev-parse sandbox-demo/agent-work in the host repo (no git fetch run)", "the agent's commit", async () => {
    if (!sha) return { happened: "no commit to look for (the push step made none)", pass: false };
    const until = Date.now() + 10_000;
    let got = "";
    while (Date.now() < until) {
      const r = await git(c, c.repo, ["rev-parse", "--verify", "-q", `refs/remotes/sandbox-${SANDBOX}/agent-work`]);
      got = r.stdout.trim();
      if (got === sha) break;
      await Bun.sleep(200);
    }
    return { happened: got === sha ? `sandbox-${SANDBOX}/agent-work = ${sha.slice(0, 12)}` : got ? `it points at ${got.slice(0, 12)}, not ${sha.slice(0, 12)}` : `no ref sandbox-${SANDBOX}/agent-work after 10 s`, pass: got === sha };
  });

  // 7. A private registry on the host's loopback that needs a token: npm inside installs from it; the token stays out.
  const regUrl = `http://host.sbx.internal:${registry.port}/`;
  add("private-registry", `sbx publish ${SANDBOX} ${registry.pattern}; npm install ${PACKAGE} --registry ${regUrl} (NPM_TOKEN bound on the host to host.sbx.internal)`, "installed; the registry got the token, the sandbox only a placeholder (npm's config, env, files)", () =>
    privateInstall(c, registry, npmToken, noNpm, regUrl),
  );
  return plan;
}

/** The private-registry step: publish the registry, npm install inside, then look for the token where npm wrote. */
async function privateInstall(c: Ctx, registry: Registry, npmToken: string, noNpm: string | undefined, regUrl: string): Promise<Omit<Step, "id" | "tried" | "expected">> {
  if (noNpm !== undefined) return { happened: `not run: ${noNpm}`, pass: false };
  const p = await sbx(c, ["publish", SANDBOX, registry.pattern]);
  if (p.exitCode !== 0) return { happened: `sbx publish ${SANDBOX} ${registry.pattern} failed: ${why(p)}`, pass: false };
  const seen = registry.requests.length;
  const { r, kv } = await agent(c, "npm", regUrl, PACKAGE);
  const asked = registry.requests.slice(seen);
  const installed = kv.npm_exit === "0" && kv.installed === GREETING;
  const authed = asked.length > 0 && asked.every((q) => q.auth === "token");
  const placeholderLine = new RegExp(`^//host\\.sbx\\.internal:${registry.port}/:_authToken=\\S+`).test(kv.npmrc ?? "");
  const inOutput = (r.stdout + r.stderr).includes(npmToken);
  // What npm wrote (the app, its node_modules and lock, npm's cache), searched for the token: patterns on stdin, never argv.
  const scan = await sbx(c, ["shell", SANDBOX, "--", "bash", "-c", 'grep -rlaF -f - "$1" "$HOME/.npm" 2>/dev/null; echo "grep_exit=$?"', "_", kv.app ?? "/nonexistent"], { stdin: `${npmToken}\n` });
  const scanned = /grep_exit=1\b/.test(scan.stdout);
  const ok = installed && authed && placeholderLine && !inOutput && scanned;
  const parts = [
    installed ? `installed ${PACKAGE} ("${clip(kv.installed ?? "", 60)}")` : kv.npm_exit !== undefined ? `npm exit ${kv.npm_exit}: ${clip(kv.npm_output ?? "", 160)}` : agentFailure(r, kv),
    authed ? `the registry saw the token on all ${asked.length} requests` : `the registry saw ${asked.map((q) => q.auth).join(",") || "no request"}`,
    placeholderLine ? "npm's config inside holds a placeholder" : `npm's config inside: ${clip(kv.npmrc ?? "none", 80)}`,
    inOutput ? "the token FOUND in the sandbox's env or output" : scanned ? "the token in no env, output or file npm wrote" : `the file scan did not run (${why(scan)})`,
  ];
  return { happened: parts.join("; "), pass: ok };
}
