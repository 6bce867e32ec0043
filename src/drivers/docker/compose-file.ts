// Reads the compose files a devcontainer.json names (`dockerComposeFile`), bounded, for core/compose.ts to plan from:
// each must be a regular file inside the repo (links followed), at most COMPOSE_MAX_BYTES, one YAML document; Bun's
// YAML parser refuses excessive aliasing itself, and the document is walked within COMPOSE_BOUNDS before anything
// reads it. Paths the files name (build contexts, env_file) must stay inside the repo too; an env_file is read bounded.
import { existsSync, openSync, readSync, closeSync, fstatSync, realpathSync, constants } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import { boundedCopy, COMPOSE_BOUNDS, composePlan, mergeCompose, type ComposeContext, type ComposePlan } from "../../core/compose";
import { SbxError } from "../../core/errors";

/** The most of one compose file sbx reads. */
export const COMPOSE_MAX_BYTES = 256 * 1024;
/** The most of one env_file sbx reads. */
export const ENV_FILE_MAX_BYTES = 64 * 1024;

/** Whether `real` is the repo's root `root` or under it. */
function under(root: string, real: string): boolean {
  return real === root || real.startsWith(`${root}/`);
}

/** A path resolved from `base`, existing, inside the repo (links followed); a config error naming `what` otherwise. */
export function insideRepo(repo: string, base: string, p: string, what: string, file: string): string {
  const abs = isAbsolute(p) ? p : resolve(base, p);
  let real: string;
  try {
    real = realpathSync(abs);
  } catch {
    throw new SbxError("config", `${file}: ${what} ${JSON.stringify(p)} does not exist (${abs})`, { hint: "Fix the path, or pass --service yourself." });
  }
  if (!under(realpathSync(repo), real)) {
    throw new SbxError("config", `${file}: ${what} ${JSON.stringify(p)} leads outside the repo (${real})`, {
      hint: "sbx reads nothing of your machine for a compose file but the repo: a path outside it (your home, a key, another project) is never read or sent.",
    });
  }
  return real;
}

/** A regular file's text, at most `max` bytes (opened once, not following a last link, read by descriptor). */
export function readBounded(path: string, max: number, what: string): string {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    throw new SbxError("config", `${what} ${path} cannot be read: ${(e as Error).message}`, { hint: "Fix the path." });
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new SbxError("config", `${what} ${path} is not a regular file`, { hint: "Name a file of the repo." });
    if (st.size > max) throw new SbxError("config", `${what} ${path} is ${st.size} bytes; sbx reads at most ${max}`, { hint: "Keep it smaller." });
    const buf = Buffer.alloc(Math.min(st.size, max) + 1);
    let n = 0;
    for (;;) {
      const r = readSync(fd, buf, n, buf.length - n, null);
      if (r === 0) break;
      n += r;
      if (n > max) throw new SbxError("config", `${what} ${path} grew past ${max} bytes while read`, { hint: "Keep it smaller." });
    }
    return buf.subarray(0, n).toString("utf8");
  } finally {
    closeSync(fd);
  }
}

/** One compose file parsed (Bun's YAML; a stack overflow from deep nesting or excessive aliasing is a config error). */
export function parseComposeText(text: string, file: string): unknown {
  let doc: unknown;
  try {
    doc = Bun.YAML.parse(text);
  } catch (e) {
    throw new SbxError("config", `${file} is not YAML sbx can read: ${(e as Error).message.slice(0, 200)}`, { hint: "Fix the compose file (one document, no deep nesting or alias bombs)." });
  }
  if (Array.isArray(doc) && /^---/m.test(text)) throw new SbxError("config", `${file} holds more than one YAML document`, { hint: "Keep one document per compose file." });
  // Walked within bounds before anything else reads it (an alias stands for its node wherever it is used).
  return boundedCopy(doc, file);
}

/**
 * The plan of a devcontainer.json's compose setup: `dockerComposeFile` (a path or up to COMPOSE_BOUNDS.files of them,
 * relative to devcontainer.json, merged in order), `service` and `runServices`.
 */
export function planFromCompose(
  repo: string,
  devcontainerFile: string,
  o: { dockerComposeFile: unknown; service: unknown; runServices: unknown },
  knownSecrets: readonly string[],
): ComposePlan & { files: string[] } {
  const rel = (p: string) => (p.startsWith(`${repo}/`) ? p.slice(repo.length + 1) : p);
  const names = typeof o.dockerComposeFile === "string" ? [o.dockerComposeFile] : Array.isArray(o.dockerComposeFile) ? o.dockerComposeFile : null;
  if (names === null || names.length === 0 || !names.every((n): n is string => typeof n === "string" && n.length > 0 && n.length < 4096)) {
    throw new SbxError("config", `${devcontainerFile}: dockerComposeFile is not a path or a list of paths`, { hint: "Fix devcontainer.json." });
  }
  if (names.length > COMPOSE_BOUNDS.files) throw new SbxError("config", `${devcontainerFile}: ${names.length} compose files; sbx reads at most ${COMPOSE_BOUNDS.files}`, { hint: "Merge them." });
  if (typeof o.service !== "string" || o.service === "") {
    throw new SbxError("config", `${devcontainerFile}: dockerComposeFile needs service, the compose service that is the sandbox itself`, { hint: 'Add "service": "app" (the one you work in).' });
  }
  let run: string[] | undefined;
  if (o.runServices !== undefined) {
    if (!Array.isArray(o.runServices) || !o.runServices.every((s) => typeof s === "string")) throw new SbxError("config", `${devcontainerFile}: runServices is not a list of service names`, { hint: "Fix devcontainer.json." });
    run = o.runServices as string[];
  }
  const files = names.map((n) => insideRepo(repo, dirname(devcontainerFile), n, "dockerComposeFile", rel(devcontainerFile)));
  const docs = files.map((f) => parseComposeText(readBounded(f, COMPOSE_MAX_BYTES, "compose file"), rel(f)));
  const first = files[0]!;
  const ctx: ComposeContext = {
    file: rel(first) + (files.length > 1 ? ` (+${files.length - 1})` : ""),
    // Compose resolves a file's relative paths from the project dir: the first file's.
    inside: (p, key) => insideRepo(repo, dirname(first), p, key, rel(first)),
    readEnvFile: (p, key) => readBounded(p, ENV_FILE_MAX_BYTES, key),
    exists: (p) => existsSync(isAbsolute(p) ? p : resolve(dirname(first), p)),
    knownSecrets,
  };
  const merged = mergeCompose(docs);
  return { ...composePlan(merged, o.service, run, ctx), files: files.map(rel) };
}
