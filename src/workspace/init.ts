// `sbx init`: writes the starter Dockerfile (templates/Dockerfile) into a repo, never over an existing one unless forced.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SbxError } from "../core/errors";

/** The starter Dockerfile's text, read from the templates dir shipped with sbx. */
export function starterDockerfile(): string {
  return readFileSync(new URL("../../templates/Dockerfile", import.meta.url), "utf8");
}

/** The user-creation part of the starter (everything from its `# --- sbx user` marker), for images built on another base. */
export function userRecipe(dockerfile = starterDockerfile()): string {
  const i = dockerfile.indexOf("# --- sbx user");
  if (i < 0) throw new SbxError("internal", "templates/Dockerfile lost its '# --- sbx user' marker");
  return dockerfile.slice(i);
}

/** Writes `<repo>/Dockerfile`; refuses to overwrite unless `force`. Returns the path written. */
export function writeStarterDockerfile(repo: string, force: boolean): string {
  const file = join(repo, "Dockerfile");
  if (existsSync(file) && !force) {
    throw new SbxError("exists", `${file} already exists`, {
      hint: "Keep it (sbx runs any image as your user), or overwrite it with `sbx init --force`.",
    });
  }
  writeFileSync(file, starterDockerfile());
  return file;
}
