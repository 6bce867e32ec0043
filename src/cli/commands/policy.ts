// sbx policy: a sandbox's egress policy as one thing. `check` is a dry run of the proxy's own decision for a host, or for
// one request (a method and path) where rules judge requests: what decided it, from which list, and what to run to
// change it. `show NAME` is its level and everything it may reach, each with why; `set NAME --level L` changes the level.
// Each subcommand is one entry of SUBCOMMANDS.
import type { Command } from "commander";
import { ExitCode, SbxError } from "../../core/errors";
import type { CliContext, Verb } from "../verb";

/** Pure: `host`, `host:port`, `[v6]:port` or a URL (whose path, as written, is the request's) as a check names them. */
export function checkTarget(text: string, path: string | undefined): { host: string; port: number; target?: string } {
  const bad = () => new SbxError("usage", `sbx policy check ${text}: not HOST, HOST:PORT or a URL`, { hint: "e.g. sbx policy check api.github.com --method GET --path /repos/acme/x, or sbx policy check https://api.github.com/repos/acme/x" });
  const url = /^(https?):\/\/(\[[^\]]+\]|[^/?#:]+)(?::(\d{1,5}))?([/?][^#]*)?$/i.exec(text);
  if (url) {
    const port = url[3] ? Number(url[3]) : url[1]!.toLowerCase() === "https" ? 443 : 80;
    if (path !== undefined && url[4] !== undefined) throw new SbxError("usage", "the URL has a path already: drop --path", { hint: `sbx policy check ${text}` });
    const target = path ?? (url[4] === undefined ? undefined : url[4].startsWith("?") ? `/${url[4]}` : url[4]);
    return { host: url[2]!.replace(/^\[(.*)\]$/, "$1"), port, ...(target !== undefined ? { target } : {}) };
  }
  const m = /^(\[[^\]]+\]|[^:\s[\]]+)(?::(\d{1,5}))?$/.exec(text);
  if (!m) throw bad();
  const port = m[2] ? Number(m[2]) : 443;
  if (!(port >= 1 && port <= 65535)) throw bad();
  return { host: m[1]!.replace(/^\[(.*)\]$/, "$1"), port, ...(path !== undefined ? { target: path } : {}) };
}

/** `sbx policy check HOST[:PORT]|URL [--method M --path P] [--sandbox NAME]`. */
async function check(ctx: CliContext, args: string[], opts: Record<string, unknown>): Promise<number> {
  const [text] = args;
  if (text === undefined) throw new SbxError("usage", "sbx policy check: which host?", { hint: "e.g. sbx policy check api.github.com --sandbox demo" });
  if (opts.level !== undefined) throw new SbxError("usage", "--level changes a sandbox's level: that is `sbx policy set NAME --level L`", { hint: "sbx policy check HOST --sandbox NAME judges with the level it has" });
  const t = checkTarget(text, typeof opts.path === "string" ? opts.path : undefined);
  const method = typeof opts.method === "string" ? opts.method.toUpperCase() : t.target !== undefined ? "GET" : undefined;
  if (method !== undefined && t.target === undefined) throw new SbxError("usage", "--method judges a request: give its path too (--path /x, or a URL)", { hint: `sbx policy check ${text} --method ${method} --path /` });
  const { daemon } = await import("../../client/sandboxes");
  const { whereOf } = await import("../../client/where");
  const r = await (await daemon(ctx)).policyCheck({
    ...whereOf(ctx, typeof opts.repo === "string" ? opts.repo : undefined),
    ...(typeof opts.sandbox === "string" ? { sandbox: opts.sandbox } : {}),
    host: t.host,
    port: t.port,
    ...(method !== undefined ? { method } : {}),
    ...(t.target !== undefined ? { target: t.target } : {}),
  });
  if (opts.json) ctx.render.json(r);
  else {
    const what = r.method && r.path ? `${r.method} ${r.path} on ${r.host}:${r.port}` : r.method ? `${r.method} ${t.target} on ${r.host}:${r.port}` : `${r.host}:${r.port}`;
    ctx.render.out(`${r.allowed ? "allowed" : "refused"}: ${what} (${r.scope})`);
    ctx.render.out(`  why: ${r.detail}`);
    if (r.decidedBy) ctx.render.out(`  decided by: the ${r.decidedBy.source} ${r.decidedBy.kind} "${r.decidedBy.text}"`);
    if (r.judged) ctx.render.out("  each request to this host is judged by its rules (sbx's proxy ends its TLS to see them)");
    if (r.fix) ctx.render.out(`  to change it: ${r.fix}`);
  }
  return r.allowed ? ExitCode.ok : ExitCode.noPerm;
}

interface Subcommand {
  usage: string;
  summary: string;
  run(ctx: CliContext, args: string[], opts: Record<string, unknown>): Promise<number>;
}

/** `sbx policy show NAME` / `sbx policy set NAME --level L`: the same answer, changed or not. */
async function showOrSet(ctx: CliContext, args: string[], opts: Record<string, unknown>, set: boolean): Promise<number> {
  const name = args[0];
  if (opts.method !== undefined || opts.path !== undefined || opts.sandbox !== undefined) throw new SbxError("usage", "--method, --path and --sandbox are check's", { hint: `sbx policy ${set ? "set NAME --level L" : "show NAME"} names the sandbox itself` });
  if (name === undefined || args.length > 1) throw new SbxError("usage", `sbx policy ${set ? "set" : "show"} takes one sandbox name`, { hint: set ? "e.g. sbx policy set demo --level balanced" : "e.g. sbx policy show demo" });
  const { levelNamed } = await import("../../core/levels");
  if (set && typeof opts.level !== "string") throw new SbxError("usage", "sbx policy set needs --level", { hint: "e.g. sbx policy set demo --level locked (or balanced, open)" });
  if (!set && opts.level !== undefined) throw new SbxError("usage", "--level changes the level: that is `sbx policy set`", { hint: `sbx policy set ${name} --level ${String(opts.level)}` });
  const level = set ? levelNamed(String(opts.level), "--level") : undefined;
  const { daemon, whereOf } = await import("../../client/sandboxes");
  const v = await (await daemon(ctx)).level({ ...whereOf(ctx, typeof opts.repo === "string" ? opts.repo : undefined), name, ...(level ? { level } : {}) });
  if (opts.json) {
    ctx.render.json(v);
    return ExitCode.ok;
  }
  if (set) ctx.render.out(v.changed ? `${v.name}: level ${v.level}; its next request is judged by it (no restart)` : `${v.name}: level ${v.level} already`);
  ctx.render.out(`${v.name}: ${v.level === null ? "no level" : `level ${v.level}`}: ${v.about}`);
  const until = (e: { expiresAt?: number | null | undefined; once?: boolean | undefined }) => (e.once ? "once" : e.expiresAt ? `until ${ctx.render.when(e.expiresAt)}` : "for good");
  const rows: string[][] = [
    ...(v.open ? [["* (any public host, any port)", v.level ?? "", "level open"]] : []),
    ...v.allows.map((p) => [p.pattern, v.level === null ? "built-in" : `level ${v.level}`, p.why]),
    ...v.sandbox.map((e) => [e.pattern, `sandbox ${v.name}`, `${until(e)}, by ${e.addedBy}`]),
    ...v.global.map((e) => [e.pattern, "global", `${until(e)}, by ${e.addedBy}`]),
    ...v.published.map((p) => [p, "published", "a service of the host (sbx publish)"]),
  ];
  if (rows.length === 0) ctx.render.out("it may reach nothing but sbx's own routes (the LLM proxy, the git/gh bridge, sbx-egress)");
  else ctx.render.table(["ALLOWS", "FROM", "WHY"], rows, { ALLOWS: "wrap", WHY: "wrap" });
  ctx.render.info("never, whatever the level: the host's loopback and own addresses, private, link-local, CGNAT and metadata addresses (unless you allow one exact address)");
  return ExitCode.ok;
}

const SUBCOMMANDS: Record<string, Subcommand> = {
  check: { usage: "check HOST|URL", summary: "a dry run: what the proxy would do with a host or request, what decided it, and what changes it (exit 0 allowed, 77 refused)", run: check },
  show: { usage: "show NAME", summary: "its level and everything it may reach, each with why", run: (ctx, a, o) => showOrSet(ctx, a, o, false) },
  set: { usage: "set NAME --level L", summary: "change its level (locked, balanced, open); takes effect on its next request", run: (ctx, a, o) => showOrSet(ctx, a, o, true) },
};

export const policy: Verb = {
  name: "policy",
  summary: "a sandbox's egress policy: a dry run of a host or request (check), its level and what it may reach (show, set)",
  declare(cmd: Command) {
    cmd
      .argument("<subcommand>", Object.keys(SUBCOMMANDS).join(" | "))
      .argument("[target]", "check: HOST, HOST:PORT or a URL (https://host/path); show, set: the sandbox name")
      .option("--method <M>", "check: the request's method (default GET when a path is given)")
      .option("--path <path>", "check: the request's path, as the client sends it")
      .option("--sandbox <name>", "check: with this sandbox's lists (default: the global list alone)")
      .option("--level <level>", "set: locked | balanced | open")
      .option("--repo <path>", "the repo the sandbox belongs to (when two repos have one of that name)")
      .option("--json", "print JSON")
      .addHelpText(
        "after",
        [
          "",
          ...Object.values(SUBCOMMANDS).map((s) => `  sbx policy ${s.usage.padEnd(20)} ${s.summary}`),
          "",
          "  sbx policy check api.github.com --sandbox demo",
          "  sbx policy check api.github.com --method DELETE --path /repos/acme/app --sandbox demo",
          "  sbx policy check https://registry.npmjs.org/left-pad --sandbox demo --json",
          "  sbx policy show demo",
          "  sbx policy set demo --level balanced",
          "check runs the proxy's own decision on the lists as they are now, so what it says is what the next request gets;",
          "the one thing it cannot know is what a name resolves to (a private or host address is refused when the proxy",
          "connects, unless that exact address is allowed). Exit status: 0 allowed, 77 refused.",
          "",
          "Levels (sbx create --policy LEVEL, or `policy` in the config for every new sandbox):",
          "  locked    sbx's own routes only (the LLM proxy, the git/gh bridge, sbx-egress), and what you allow",
          "  balanced  the agent's API and login hosts, the package registries the repo uses, the forge of its remotes",
          "  open      every public host and address, on any port",
          "No level ever reaches the host's loopback or own addresses, nor private, link-local or metadata ones.",
          "Your own entries (sbx allow, sbx publish) apply on top of any level. See `sbx help egress`.",
        ].join("\n"),
      );
  },
  async run(ctx, args, opts) {
    const [sub, ...rest] = args;
    const s = sub !== undefined && Object.hasOwn(SUBCOMMANDS, sub) ? SUBCOMMANDS[sub] : undefined;
    if (!s) {
      throw new SbxError("usage", sub === undefined ? "sbx policy needs a subcommand" : `sbx policy: unknown action ${JSON.stringify(sub)}`, {
        hint: `Use ${Object.values(SUBCOMMANDS).map((x) => `\`sbx policy ${x.usage}\``).join(", ")}.`,
      });
    }
    return s.run(ctx, rest, opts);
  },
};
