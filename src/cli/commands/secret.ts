// sbx secret: store an API key or token host-side for the LLM proxy and bridge (typed hidden at a terminal, else from stdin; never argv).
import type { Command } from "commander";
import { ExitCode, SbxError } from "../../core/errors";
import type { CliContext, Verb } from "../verb";

/** Where a value comes from: stdin when it is not a terminal; a hidden prompt when it is (null: the person cancelled). */
export interface SecretInput {
  stdin(): Promise<string>;
  hidden(prompt: string): Promise<string | null>;
}

/** Exit status of a prompt cancelled with Ctrl-C: the shell's 128 + SIGINT. */
export const CANCELLED = 130;

/** Runs the verb with injectable input (tests pass strings or a fake terminal). */
export async function runSecret(ctx: CliContext, args: string[], opts: Record<string, unknown>, input: SecretInput): Promise<number> {
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
        const typed = await input.hidden(`value for ${n} (hidden as you type or paste; Enter stores it, Ctrl-C cancels): `);
        if (typed === null) {
          ctx.render.info(`cancelled: ${n} was not stored`);
          return CANCELLED;
        }
        if (typed === "") {
          throw new SbxError("usage", `empty value: ${n} was not stored`, {
            hint: `Run \`sbx secret set ${n}\` again and type or paste the value before Enter (\`sbx secret rm ${n}\` removes a secret).`,
          });
        }
        setSecret(file, n, typed);
        ctx.render.info(`stored ${n} (${[...typed].length} characters; read at request time: running sandboxes use it from their next request)`);
        return ExitCode.ok;
      }
      const value = (await input.stdin()).replace(/\r?\n$/, "");
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
      .addHelpText(
        "after",
        `
The value never goes on the command line (it would land in shell history and argv):
  sbx secret set ANTHROPIC_API_KEY                      at a terminal: asks for it and shows nothing you type
                                                        or paste; Enter stores it, Ctrl-C cancels (exit 130)
  printf %s "$KEY" | sbx secret set ANTHROPIC_API_KEY   in a script: reads stdin (one trailing newline dropped)
An empty value is refused. Secrets live in <config dir>/secrets.json (mode 0600): read at request time, so a
running sandbox uses a new value from its next request. list shows names only; rm removes one.`,
      );
  },
  async run(ctx, args, opts) {
    const { processPromptTty, readHidden } = await import("../../client/hidden-input");
    return runSecret(ctx, args, opts, { stdin: () => Bun.stdin.text(), hidden: (prompt) => readHidden(processPromptTty(), prompt) });
  },
};
