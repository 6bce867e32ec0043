// The host side of package mirrors: where npm, pip, Go and cargo keep this person's settings, each file read by the
// copy-in door's rules (secrets/copy-in.ts readSettingsFile: no link, theirs or root's, outside every sandbox's tree),
// core/mirrors.ts's readers over them, and every value carried scanned by a CopyIn (a hit is left on the host, said).
import { join } from "node:path";
import {
  cargoMirrors,
  goMirrors,
  mergePlans,
  npmMirrors,
  pipMirrors,
  type HostText,
  type MirrorNote,
  type MirrorPlan,
  type Mirrors,
} from "../core/mirrors";
import { readSettingsFile, type CopyIn, type SettingsReadRules } from "./copy-in";

export interface HostMirrorSource {
  /** The environment the settings' variables are read from (the daemon's, or the CLI's for a preset). */
  env: Readonly<Record<string, string | undefined>>;
  home: string;
  platform: NodeJS.Platform;
  /** The host user's uid: their files (and root's) are read. */
  uid: number;
  /** Trees a sandbox writes (sbx's sandbox root and runtime dir): never read from. */
  outside: readonly string[];
}

/** The files each tool reads, in its order (later wins), as absolute paths. Pure. */
export function settingsPaths(s: Pick<HostMirrorSource, "env" | "home" | "platform">): { npm: string; pip: string[]; go: string | null; cargo: string[] } {
  const env = s.env;
  const abs = (p: string | undefined) => (p && p.startsWith("/") ? p : undefined);
  const xdg = abs(env.XDG_CONFIG_HOME) ?? join(s.home, ".config");
  const mac = s.platform === "darwin";
  const npmUser = Object.entries(env).find(([k]) => k.toLowerCase() === "npm_config_userconfig")?.[1];
  const pipConfigFile = env.PIP_CONFIG_FILE;
  const pip =
    pipConfigFile === "/dev/null" || pipConfigFile === "os.devnull"
      ? []
      : [
          ...(env.XDG_CONFIG_DIRS ?? "/etc/xdg").split(":").filter((d) => d.startsWith("/")).map((d) => join(d, "pip", "pip.conf")),
          "/etc/pip.conf",
          join(s.home, ".pip", "pip.conf"),
          mac ? join(s.home, "Library", "Application Support", "pip", "pip.conf") : join(xdg, "pip", "pip.conf"),
          ...(abs(pipConfigFile) ? [pipConfigFile!] : []),
        ];
  const goenv = env.GOENV === "off" ? null : (abs(env.GOENV) ?? (mac ? join(s.home, "Library", "Application Support", "go", "env") : join(xdg, "go", "env")));
  const cargoHome = abs(env.CARGO_HOME) ?? join(s.home, ".cargo");
  return { npm: abs(npmUser) ?? join(s.home, ".npmrc"), pip, go: goenv, cargo: [join(cargoHome, "config"), join(cargoHome, "config.toml")] };
}

/** `~/…` for a path under home. */
function shownPath(home: string, p: string): string {
  const h = home.replace(/\/+$/, "");
  return p.startsWith(`${h}/`) ? `~/${p.slice(h.length + 1)}` : p;
}

/**
 * What the host's settings name, read now: the plan (settings as core/mirrors.ts judged them) and notes, with a note
 * for each file left unread (a link, another account's, in a sandbox's tree). Reads only; scans nothing (scanMirrors).
 */
export function readHostMirrors(s: HostMirrorSource): MirrorPlan {
  const paths = settingsPaths(s);
  const notes: MirrorNote[] = [];
  const read = (tool: MirrorNote["tool"], p: string): HostText | null => {
    const rules: SettingsReadRules = { root: p.startsWith(`${s.home.replace(/\/+$/, "")}/`) ? s.home : "/", owners: [s.uid, 0], outside: s.outside };
    const r = readSettingsFile(p, rules);
    const shown = shownPath(s.home, p);
    if ("missing" in r) return null;
    if ("refused" in r) {
      notes.push({ tool, from: shown, key: "", why: `not read: ${r.refused}`, hint: null });
      return null;
    }
    return { shown, text: r.text };
  };
  const npm = npmMirrors(read("npm", paths.npm), s.env);
  const pip = pipMirrors(paths.pip.map((p) => read("pip", p)).filter((x): x is HostText => x !== null), s.env);
  const go = goMirrors(paths.go === null ? null : read("go", paths.go), s.env);
  // cargo reads `config` when it is there (beside a `config.toml` it warns), else `config.toml`.
  const cargoText = paths.cargo.map((p) => read("cargo", p)).find((x) => x !== null) ?? null;
  let cargoValue: { shown: string; value: unknown } | null = null;
  if (cargoText?.text != null) {
    try {
      cargoValue = { shown: cargoText.shown, value: Bun.TOML.parse(cargoText.text) };
    } catch {
      notes.push({ tool: "cargo", from: cargoText.shown, key: "", why: "not read: not valid TOML", hint: null });
    }
  }
  const cargo = cargoMirrors(cargoValue, s.env);
  const all = mergePlans(npm, pip, go, cargo);
  return { settings: all.settings, notes: [...notes, ...all.notes] };
}

/**
 * The settings that may go in: each value through the door (a host secret in any form, a credential's shape, a
 * password or key in an address); one that hits stays on the host and the door says where (`door.findings`).
 */
export function scanMirrors(plan: MirrorPlan, door: CopyIn): Mirrors {
  return { settings: plan.settings.filter((st) => door.text(st.from, st.key, st.value) !== null) };
}
