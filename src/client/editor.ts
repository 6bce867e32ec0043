// `sbx code NAME`: a Docker sandbox opened in VS Code through Dev Containers' "attach to running container", at the
// repo's path (the same inside as here), without handing the sandbox the credentials an attached VS Code brings.
import { existsSync, readFileSync } from "node:fs";
import { dockerContainerName, KINDS } from "../core/backend-kind";
import { attachedContainerUri, DEV_CONTAINERS_EXTENSION, missingCredentialSettings, settingsLines, vscodeSettingsPaths } from "../core/editors";
import { SbxError } from "../core/errors";
import { stripJsonc } from "../core/jsonc";
import { printable } from "../core/printable";
import type { Env } from "../sys/env";
import type { Exec } from "../sys/exec";
import type { DaemonClient } from "./client";
import { outOf, whereOf, type VerbContext } from "./sandboxes";

export interface CodeRequest {
  name: string;
  repoFlag: string | undefined;
  /** Only print the URI: open nothing, start nothing, refuse nothing for the settings (they are said). */
  print: boolean;
}

/** What `sbx code --json` prints. */
export interface CodeResult {
  sandbox: string;
  backend: string;
  container: string;
  /** The folder opened: the repo's path, the same inside the sandbox as on the host. */
  path: string;
  uri: string;
  /** VS Code was asked to open it (`code --folder-uri`). */
  opened: boolean;
  /** The `code` command used, or null (not on PATH, or --print). */
  code: string | null;
  /** VS Code's settings file read, and the credential settings it lacks. */
  settings: { file: string | null; missing: string[] };
}

/** The user settings VS Code has here: the first settings.json that exists, parsed (null: none; an unreadable one is said). */
export function readVscodeSettings(env: Pick<Env, "vars" | "platform">): { file: string | null; settings: unknown } {
  for (const file of vscodeSettingsPaths(env.platform, env.vars.HOME, env.vars.XDG_CONFIG_HOME)) {
    if (!existsSync(file)) continue;
    try {
      return { file, settings: JSON.parse(stripJsonc(readFileSync(file, "utf8"))) };
    } catch (e) {
      throw new SbxError("config", `VS Code's settings (${file}) could not be read: ${(e as Error).message}`, {
        hint: "Fix the file (VS Code: Preferences: Open User Settings (JSON)), then run it again.",
      });
    }
  }
  return { file: null, settings: {} };
}

/** Why the settings are needed and what to add, for the refusal and for --print's warning. */
function settingsAdvice(file: string | null, missing: readonly string[], env: Pick<Env, "vars" | "platform">): string {
  const where = file ?? vscodeSettingsPaths(env.platform, env.vars.HOME, env.vars.XDG_CONFIG_HOME)[0]!;
  return `Add to ${where} (VS Code: Preferences: Open User Settings (JSON)):\n${settingsLines(missing)}\nsbx help editors says why.`;
}

/**
 * Opens sandbox `name` in VS Code, or (`print`) only says its URI. A user-account sandbox is refused with what works
 * instead; without VS Code's credential settings the open is refused (the URI alone is still printed with --print).
 * Returns the result and the exit code: 0, or 69 when `code` is not on PATH (the URI is printed for opening by hand).
 * runs: code --list-extensions; code --folder-uri vscode-remote://attached-container+<hex>/<repo>
 */
export async function openInCode(
  ctx: VerbContext & { render: VerbContext["render"] & { out(line: string): void } },
  client: DaemonClient,
  req: CodeRequest,
): Promise<{ result: CodeResult; exitCode: number }> {
  const where = whereOf(ctx, req.repoFlag);
  const found = (await client.lifecycle("list", { here: where }, outOf(ctx))).sandboxes.find((s) => s.name === req.name);
  if (!found) {
    throw new SbxError("not_found", `no sandbox '${req.name}' in this repo`, { hint: `\`sbx create ${req.name}\` makes it; \`sbx list\` shows the sandboxes there are.` });
  }
  const reach = KINDS[found.backend].editor;
  if (reach.attach === null) {
    throw new SbxError("not_available", `sbx code opens Docker sandboxes; ${req.name} ${reach.why}`, {
      hint: `Instead: ${reach.instead(req.name)} (sbx help editors)`,
    });
  }
  const container = dockerContainerName(found.id);
  const uri = attachedContainerUri(container, found.repo);
  const { file, settings } = readVscodeSettings(ctx.env);
  const missing = missingCredentialSettings(settings);
  const result: CodeResult = { sandbox: req.name, backend: found.backend, container, path: found.repo, uri, opened: false, code: null, settings: { file, missing } };
  // Said with sbx's own text, a validated name and the host's repo path: nothing the sandbox wrote.
  const info = (line: string) => ctx.render.info(line);

  if (req.print) {
    if (missing.length > 0) info(`sbx: opened as it is, VS Code would hand sandbox ${req.name} your git credentials (${missing.join(", ")} not set). ${settingsAdvice(file, missing, ctx.env)}`);
    if (found.phase !== "running") info(`sbx: sandbox ${req.name} is not running: VS Code attaches only to a running container (\`sbx code ${req.name}\` starts it)`);
    return { result, exitCode: 0 };
  }
  if (missing.length > 0) {
    throw new SbxError("policy_denied", `not opening ${req.name}: VS Code's Dev Containers would copy your ~/.gitconfig into the sandbox and set its git (and gh, and Docker) up to use your credentials`, {
      hint: `${settingsAdvice(file, missing, ctx.env)} (\`sbx code --print ${req.name}\` gives the URI alone.)`,
      data: { missing },
    });
  }
  const code = Bun.which("code", { PATH: ctx.env.vars.PATH });
  if (code === null) {
    info(`sbx: VS Code's \`code\` command is not on PATH. Open the URI below with \`code --folder-uri URI\` once it is (in VS Code: Shell Command: Install 'code' command in PATH), or in VS Code run "Dev Containers: Attach to Running Container…", pick ${container} and open ${found.repo}.`);
    return { result, exitCode: 69 };
  }
  result.code = code;
  await checkDevContainers(ctx.exec, code, ctx.env);
  // VS Code attaches to a running container only: the sandbox starts the way every start goes (guards up first).
  await client.lifecycle("start", { name: req.name, ...where }, outOf(ctx));
  // Dev Containers forwards the SSH agent `code` runs with into the container, and no setting turns that off.
  const env = { ...ctx.env.raw };
  delete env.SSH_AUTH_SOCK;
  const r = await ctx.exec.run([code, "--folder-uri", uri], { env, replaceEnv: true, check: false, timeoutMs: 60_000 });
  if (r.exitCode !== 0) {
    throw new SbxError("exec_failed", `\`code --folder-uri\` failed (exit ${r.exitCode}): ${printable(r.stderr.trim()).slice(0, 500)}`, { hint: `Open it by hand: code --folder-uri '${uri}'` });
  }
  result.opened = true;
  info(`opened sandbox ${req.name} in VS Code (container ${container}, ${found.repo}); an attached VS Code also opens ways to your machine no setting closes (sbx help editors)`);
  if (ctx.env.raw.SSH_AUTH_SOCK) {
    info("sbx: `code` was started without your SSH agent; a VS Code that was already running forwards the agent it started with into the sandbox (sbx help editors)");
  }
  return { result, exitCode: 0 };
}

/** Refuses when VS Code lacks Dev Containers (it would say only that no extension resolves the URI). runs: code --list-extensions */
async function checkDevContainers(exec: Exec, code: string, env: Pick<Env, "raw">): Promise<void> {
  const r = await exec.run([code, "--list-extensions"], { env: { ...env.raw }, replaceEnv: true, check: false, timeoutMs: 60_000 });
  if (r.exitCode !== 0) return; // could not ask: VS Code says it if the extension is missing
  const have = r.stdout.split("\n").map((l) => l.trim().toLowerCase());
  if (!have.includes(DEV_CONTAINERS_EXTENSION)) {
    throw new SbxError("not_available", "VS Code has no Dev Containers extension, which opens a running container", {
      hint: `code --install-extension ${DEV_CONTAINERS_EXTENSION}, then run it again.`,
    });
  }
}
