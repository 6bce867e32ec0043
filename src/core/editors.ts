// Pure: what `sbx code` needs to open a sandbox in VS Code: Dev Containers' "attach to running container" URI, and the
// VS Code settings without which attaching hands the host's credentials to the sandbox.

/**
 * The URI Dev Containers opens for an attached container: `vscode-remote://attached-container+<hex>/<path>`, where
 * <hex> is the UTF-8 of `{"containerName":"/<name>"}` in lowercase hex (the form `code --folder-uri` takes; Docker names
 * a container with a leading slash). Each path segment is percent-encoded, so a repo path with spaces, `#` or `?` stays
 * one path.
 */
export function attachedContainerUri(container: string, path: string): string {
  if (!path.startsWith("/")) throw new Error(`attachedContainerUri: path must be absolute: ${path}`);
  const json = JSON.stringify({ containerName: `/${container}` });
  const hex = Array.from(new TextEncoder().encode(json), (b) => b.toString(16).padStart(2, "0")).join("");
  const encoded = path
    .split("/")
    .map((s) => encodeURIComponent(s))
    .join("/");
  return `vscode-remote://attached-container+${hex}${encoded}`;
}

/** Pure: the container name a URI made by attachedContainerUri names (tests read it back this way), or null. */
export function containerOfUri(uri: string): string | null {
  const m = /^vscode-remote:\/\/attached-container\+([0-9a-f]+)\//.exec(uri);
  if (!m) return null;
  const bytes = new Uint8Array(m[1]!.match(/../g)!.map((h) => Number.parseInt(h, 16)));
  try {
    const v = JSON.parse(new TextDecoder().decode(bytes)) as { containerName?: unknown };
    return typeof v.containerName === "string" && v.containerName.startsWith("/") ? v.containerName.slice(1) : null;
  } catch {
    return null;
  }
}

/** The extension that resolves `attached-container+` authorities. */
export const DEV_CONTAINERS_EXTENSION = "ms-vscode-remote.remote-containers";

/**
 * VS Code user settings that keep the host's credentials out of a container Dev Containers attaches to. By default it
 * copies ~/.gitconfig in, configures a git credential helper that asks the host's own (so git in the sandbox hands out
 * the host's GitHub token), a Docker credential helper, and signs the container's GitHub CLI in with a token. A
 * sandbox holds no credential (no-secret-inside); an attached editor must not put them there. What no setting closes
 * (the SSH agent, the socket the helpers talk over, a GPG agent, the X11 display) is said in docs/help/editors.md;
 * for the SSH agent sbx starts `code` without SSH_AUTH_SOCK.
 */
export const VSCODE_CREDENTIAL_SETTINGS: Readonly<Record<string, boolean | string>> = {
  "dev.containers.copyGitConfig": false,
  "dev.containers.gitCredentialHelperConfigLocation": "none",
  "dev.containers.dockerCredentialHelper": false,
  "dev.containers.githubCLILoginWithToken": false,
};

/** Pure: the credential settings (VSCODE_CREDENTIAL_SETTINGS) a parsed settings.json lacks or sets otherwise. */
export function missingCredentialSettings(settings: unknown): string[] {
  const s = settings !== null && typeof settings === "object" && !Array.isArray(settings) ? (settings as Record<string, unknown>) : {};
  return Object.entries(VSCODE_CREDENTIAL_SETTINGS)
    .filter(([k, v]) => s[k] !== v)
    .map(([k]) => k);
}

/** Pure: the lines to add to settings.json for `keys`, as a person pastes them. */
export function settingsLines(keys: readonly string[]): string {
  return keys.map((k) => `  ${JSON.stringify(k)}: ${JSON.stringify(VSCODE_CREDENTIAL_SETTINGS[k])},`).join("\n");
}

/**
 * Pure: where VS Code keeps its user settings.json on this OS, in the order looked at: the usual install, then the
 * Flatpak and Snap ones (Linux). `configHome` is $XDG_CONFIG_HOME when set (absolute), else undefined.
 */
export function vscodeSettingsPaths(platform: NodeJS.Platform, home: string, configHome: string | undefined): string[] {
  if (platform === "darwin") return [`${home}/Library/Application Support/Code/User/settings.json`];
  return [
    `${configHome ?? `${home}/.config`}/Code/User/settings.json`,
    `${home}/.var/app/com.visualstudio.code/config/Code/User/settings.json`,
    `${home}/snap/code/current/.config/Code/User/settings.json`,
  ];
}
