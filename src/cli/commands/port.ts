// sbx port: show or change which of a Docker sandbox's own ports are reachable from the host at 127.0.0.1
import type { Command } from "commander";
import { SbxError } from "../../core/errors";
import { sandboxArgument } from "../completion/offers";
import type { Verb } from "../verb";

const collect = (v: string, prev: string[] = []) => [...prev, v];

export const port: Verb = {
  name: "port",
  summary: "reach a sandbox's own server from the host (127.0.0.1:PORT; another address only when you name it)",
  declare(cmd: Command) {
    cmd
      .addArgument(sandboxArgument("<name>", "sandbox name"))
      .argument("[ports...]", "PORT (the same port on the host), HOST:PORT (the host's HOST to the sandbox's PORT), or ADDRESS:HOST:PORT")
      .option("--rm <port>", "stop forwarding one (the sandbox's or the host's port); repeatable", collect)
      .option("--repo <path>", "the repo the sandbox belongs to")
      .option("--json", "print JSON")
      .addHelpText(
        "after",
        [
          "",
          "A Docker sandbox has no network of its own: a server it runs on its 127.0.0.1 (or ::1) is reached from the",
          "host through sbx, at the host's 127.0.0.1, while the sandbox runs. Another address of this machine only when you",
          "write it (ADDRESS:HOST:PORT, e.g. 0.0.0.0:8080:3000): then other machines that reach yours reach the sandbox's server.",
          "Forwards are kept with the sandbox and come back when it starts; `sbx create --port 3000` and",
          "devcontainer.json's forwardPorts set them at create.",
          "",
          "Examples:",
          "  sbx port web                  what it forwards",
          "  sbx port web 3000             http://127.0.0.1:3000 on the host reaches the sandbox's port 3000",
          "  sbx port web 8080:3000        the host's 8080 to its 3000",
          "  sbx port web 0.0.0.0:8080:3000   every address of this machine (your network too), port 8080, to its 3000",
          "  sbx port web --rm 3000",
        ].join("\n"),
      );
  },
  async run(ctx, args, opts) {
    const name = args[0] ?? "";
    const add = args.slice(1) as string[];
    const { parsePortSpec, hostEndpoint, reachableBeyondLoopback } = await import("../../core/ports");
    for (const s of add) {
      const r = parsePortSpec(s);
      if (!r.ok) throw new SbxError("usage", `sbx port: ${r.reason}`, { hint: "e.g. sbx port NAME 3000, or 8080:3000 (the host's 8080 to the sandbox's 3000)" });
    }
    const remove = ((opts.rm as string[] | undefined) ?? []).map((s) => {
      const n = Number(s);
      if (!Number.isInteger(n) || n < 1 || n > 65535) throw new SbxError("usage", `sbx port --rm: '${s}' is not a port`, { hint: "Give the sandbox's or the host's port number, as `sbx port NAME` lists them." });
      return n;
    });
    const { daemon, outOf, whereOf } = await import("../../client/sandboxes");
    const r = await (await daemon(ctx)).lifecycle("port", { ...whereOf(ctx, opts.repo as string | undefined), name, add, remove }, outOf(ctx));
    // Said every time a forward others can reach is made, so it never happens unseen.
    const wide = r.changed ? r.ports.filter((p) => reachableBeyondLoopback(p) && add.some((s) => { const f = parsePortSpec(s); return f.ok && f.forward.host === p.host; })) : [];
    for (const p of wide) ctx.render.info(`note: ${hostEndpoint(p)} is not loopback: other machines that reach this one reach sandbox ${name}'s port ${p.port} (sbx port ${name} --rm ${p.host} stops it)`);
    if (opts.json) {
      ctx.render.json(r);
      return 0;
    }
    if (r.ports.length === 0) {
      ctx.render.out(`${name}: forwards no port${r.changed ? " now" : ""} (sbx port ${name} 3000 forwards one)`);
      return 0;
    }
    ctx.render.table(
      ["HOST", "SANDBOX PORT", "STATE"],
      r.ports.map((p) => [hostEndpoint(p), String(p.port), p.state === "forwarding" ? "forwarding" : p.state === "stopped" ? "when it runs" : `not forwarded: ${p.error ?? "unknown"}`]),
    );
    return 0;
  },
};
