// sbx code's pure parts: Dev Containers' attach URI (the documented form, read back whole for any repo path) and the
// VS Code settings without which an attached editor hands the sandbox the host's credentials.
import { describe, expect, test } from "bun:test";
import { KINDS } from "../../../src/core/backend-kind";
import { attachedContainerUri, containerOfUri, missingCredentialSettings, settingsLines, VSCODE_CREDENTIAL_SETTINGS, vscodeSettingsPaths } from "../../../src/core/editors";

describe("attachedContainerUri", () => {
  test("the form `code --folder-uri` takes: hex of {\"containerName\":\"/NAME\"}, then the path", () => {
    // {"containerName":"/test"} in hex, as Dev Containers itself writes it for a container named test.
    expect(attachedContainerUri("test", "/home/user/myproject")).toBe(
      "vscode-remote://attached-container+7b22636f6e7461696e65724e616d65223a222f74657374227d/home/user/myproject",
    );
  });

  test("a repo path with spaces, #, ?, % and non-ASCII stays one path: the container and the path read back exactly", () => {
    for (const path of ["/home/a b/my repo", "/srv/x#y/?z", "/p/100%/ü", "/a/\"quoted\"/b"]) {
      const uri = attachedContainerUri("sbx-0123abcd", path);
      expect(containerOfUri(uri)).toBe("sbx-0123abcd");
      const u = new URL(uri);
      expect(u.search).toBe("");
      expect(u.hash).toBe("");
      expect(decodeURIComponent(u.pathname)).toBe(path);
    }
  });

  test("a relative path is refused (the folder must be the repo's absolute path inside)", () => {
    expect(() => attachedContainerUri("sbx-1", "repo")).toThrow(/absolute/);
  });
});

describe("credential-scope: the VS Code settings that keep the host's credentials out of an attached container", () => {
  test("every credential setting absent, or set otherwise, is missing; all set as sbx needs: none", () => {
    expect(missingCredentialSettings({})).toEqual(Object.keys(VSCODE_CREDENTIAL_SETTINGS));
    expect(missingCredentialSettings(null)).toEqual(Object.keys(VSCODE_CREDENTIAL_SETTINGS));
    expect(missingCredentialSettings({ ...VSCODE_CREDENTIAL_SETTINGS, "dev.containers.gitCredentialHelperConfigLocation": "global" })).toEqual(["dev.containers.gitCredentialHelperConfigLocation"]);
    // "false" as a string is not false: VS Code would read it as set.
    expect(missingCredentialSettings({ ...VSCODE_CREDENTIAL_SETTINGS, "dev.containers.copyGitConfig": "false" })).toEqual(["dev.containers.copyGitConfig"]);
    expect(missingCredentialSettings({ ...VSCODE_CREDENTIAL_SETTINGS, other: 1 })).toEqual([]);
  });

  test("the lines to add are settings.json members a person can paste", () => {
    const keys = Object.keys(VSCODE_CREDENTIAL_SETTINGS);
    expect(JSON.parse(`{${settingsLines(keys).replace(/,\s*$/, "")}}`)).toEqual(VSCODE_CREDENTIAL_SETTINGS);
  });

  test("where VS Code keeps its settings: XDG_CONFIG_HOME on Linux (then Flatpak, Snap), Application Support on a Mac", () => {
    expect(vscodeSettingsPaths("linux", "/home/u", undefined)[0]).toBe("/home/u/.config/Code/User/settings.json");
    expect(vscodeSettingsPaths("linux", "/home/u", "/x/cfg")[0]).toBe("/x/cfg/Code/User/settings.json");
    expect(vscodeSettingsPaths("darwin", "/Users/u", undefined)).toEqual(["/Users/u/Library/Application Support/Code/User/settings.json"]);
  });
});

describe("which kinds an editor can attach to", () => {
  test("Docker: its container; user accounts (Linux, macOS): none, saying why and what to do instead", () => {
    expect(KINDS.docker.editor).toEqual({ attach: "container" });
    for (const kind of ["linux-user", "macos"] as const) {
      const e = KINDS[kind].editor;
      if (e.attach !== null) throw new Error(`${kind} should not attach`);
      expect(e.why).toContain("Remote-SSH");
      expect(e.instead("work")).toContain("sbx shell work");
      expect(e.instead("work")).toContain("sandbox-work/");
    }
  });
});
