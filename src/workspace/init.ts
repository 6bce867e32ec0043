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

/**
 * The starter for an image that already has what the sandbox needs (`sbx init --from IMAGE`): that image as it is, no
 * package step, so nothing in the build needs a registry or the network once IMAGE is on the machine (the offline base
 * image, a team's dev image). sbx makes it know the user when the container is made, so no user step either.
 */
export function fromDockerfile(image: string): string {
  return [
    `# Sandbox image for sbx (written by \`sbx init --from ${image}\`; edit freely). The sandbox runs as your uid, with`,
    "# your name and home: sbx adds you to the image's passwd when it does not know you. Add what your work needs below",
    "# (apt-get, npm, pip: those steps need the network when the image is built).",
    `FROM ${image}`,
    "",
  ].join("\n");
}

/** Writes `<repo>/Dockerfile` (the starter, or FROM `from` as it is); refuses to overwrite unless `force`. Returns the path written. */
export function writeStarterDockerfile(repo: string, force: boolean, from?: string): string {
  const file = join(repo, "Dockerfile");
  if (existsSync(file) && !force) {
    throw new SbxError("exists", `${file} already exists`, {
      hint: `Keep it (sbx runs any image as your user), or overwrite it with \`sbx init --force${from === undefined ? "" : ` --from ${from}`}\`.`,
    });
  }
  writeFileSync(file, from === undefined ? starterDockerfile() : fromDockerfile(from));
  return file;
}
