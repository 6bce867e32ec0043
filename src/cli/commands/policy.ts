// sbx policy: what the egress policy would do, and why. `check` is a dry run of the proxy's own decision for a host, or
// for one request (a method and path) where rules judge requests: what decided it, from which list, and what to run to
// change it.
import type { Command } from "commander";
import { ExitCode, SbxError } from "../../core/errors";
import type { Verb } from "../verb";

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

export const policy: Verb = {
  name: "policy",
  summary: "say what the egress policy would do with a host or request, and why (a dry run)",
  declare(cmd: Command) {
    cmd
      .argument("<action>", "check")
      .argument("[target]", "HOST, HOST:PORT or a URL (https://host/path)")
      .option("--method <M>", "check: the request's method (default GET when a path is given)")
      .option("--path <path>", "check: the request's path, as the client sends it")
      .option("--sandbox <name>", "check: with this sandbox's lists (default: the global list alone)")
      .option("--repo <path>", "the repo the sandbox belongs to (when two repos have one of that name)")
      .option("--json", "print the verdict as JSON")
      .addHelpText(
        "after",
        `
  sbx policy check api.github.com --sandbox demo
  sbx policy check api.github.com --method DELETE --path /repos/acme/app --sandbox demo
  sbx policy check https://registry.npmjs.org/left-pad --sandbox demo --json
It runs the proxy's own decision on the lists as they are now, so what it says is what the next request gets; the
one thing it cannot know is what a name resolves to (a private or host address is refused when the proxy connects,
unless that exact address is allowed). Exit status: 0 allowed, 77 refused.`,
      );
  },
  async run(ctx, args, opts) {
    const [action, text] = args;
    if (action !== "check") throw new SbxError("usage", `sbx policy: unknown action ${JSON.stringify(action)}`, { hint: "sbx policy check HOST[:PORT] [--method M --path P] [--sandbox NAME]" });
    if (text === undefined) throw new SbxError("usage", "sbx policy check: which host?", { hint: "e.g. sbx policy check api.github.com --sandbox demo" });
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
  },
};
