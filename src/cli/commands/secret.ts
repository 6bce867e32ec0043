// sbx secret: store an API key or token host-side for the LLM proxy and bridge (value from stdin, never argv).
import type { Command } from "commander";
import { ExitCode, SbxError } from "../../core/errors";
import type { CliContext, Verb } from "../verb";

/** Runs the verb with an injectable stdin reader (tests pass a string). */
export async function runSecret(ctx: CliContext, args: string[], opts: Record<string, unknown>, readStdin: () => Promise<string>): Promise<number> {
  // Loaded here, not at the top: `sbx --help` and `--version` must not pay for it.
  const { listSecretNames, removeSecret, secretsFile, SecretName, setSecret } = await import("../../secrets/store");
  const [action, name] = args;
  const file = secretsFile(ctx.paths.configDir);
  const needName = () => {
    if (name === undefined) throw new SbxError("usage", `sbx secret ${action}: which secret?`, { hint: `sbx secret ${action} NAME, e.g. ANTHROPIC_API_KEY` });
    const ok = SecretName.safeParse(name);
    if (!ok.success) throw new SbxError("usage", `bad secret name ${JSON.stringify(name)}`, { hint: ok.error.issues[0]!.message });
    return name;
  };
  switch (action) {
    case "set": {
      const n = needName();
      if (ctx.stdinIsTTY) {
        throw new SbxError("usage", "sbx secret set reads the value from stdin, not the terminal", {
          hint: `Pipe it in so it never lands in shell history or argv: \`pbpaste | sbx secret set ${n}\` or \`sbx secret set ${n} < file\`.`,
        });
      }
      const value = (await readStdin()).replace(/\r?\n$/, "");
      setSecret(file, n, value);
      ctx.render.info(`stored ${n} (read at request time: running sandboxes use it from their next request)`);
      return ExitCode.ok;
    }
    case "rm": {
      const n = needName();
      if (!removeSecret(file, n)) throw new SbxError("not_found", `no secret named ${n}`, { hint: "sbx secret list shows the names stored." });
      ctx.render.info(`removed ${n}`);
      return ExitCode.ok;
    }
    case "list": {
      const names = listSecretNames(file);
      if (opts.json) ctx.render.json(names);
      else for (const n of names) ctx.render.out(n);
      return ExitCode.ok;
    }
    default:
      throw new SbxError("usage", `sbx secret: unknown action ${JSON.stringify(action)}`, { hint: "sbx secret set|rm|list NAME" });
  }
}

export const secret: Verb = {
  name: "secret",
  summary: "store an API key or token host-side for the LLM proxy and bridge",
  declare(cmd: Command) {
    cmd
      .argument("<action>", "set | rm | list")
      .argument("[name]", "secret name, e.g. ANTHROPIC_API_KEY, GH_TOKEN, GIT_TOKEN")
      .option("--json", "list: print names as JSON")
      .addHelpText("after", "\nThe value is read from stdin (never argv): printf %s \"$KEY\" | sbx secret set ANTHROPIC_API_KEY\nlist shows names only.");
  },
  run: (ctx, args, opts) => runSecret(ctx, args, opts, () => Bun.stdin.text()),
};
