// Pure renderers for the macOS backend: the per-UID pf anchor, the sudoers rule, the zsh rc files and the root helper's plist.
import anchorTemplate from "../../../pf/sandbox.anchor.tmpl" with { type: "text" };
import plistTemplate from "../../../launchd/sbx-privileged.plist.tmpl" with { type: "text" };
import { renderShellRc, type HomeFile } from "../provision/provision";
import { MONITOR_ARGV } from "./monitor";
import { BIN } from "./bin";
import { anchorName, guestPrefix, hostGroup, hostTag } from "./naming";

const SU = BIN.su;

function fill(template: string, vars: Record<string, string>): string {
  return template.replace(/\{\{(\w+)\}\}/g, (_, k: string) => {
    const v = vars[k];
    if (v === undefined) throw new Error(`render: template variable {{${k}}} has no value`);
    return v;
  });
}

export interface AnchorInput {
  user: string;
  uid: number;
  /** The sandbox's proxy port on 127.0.0.1, the only destination its sockets may reach. */
  port: number;
}

/** The rules of `com.apple/sbx_<uid>`: pass TCP to 127.0.0.1:<port>, block (and log) every other TCP/UDP of that uid. */
export function renderPfAnchor(input: AnchorInput): string {
  if (!Number.isInteger(input.uid) || input.uid <= 0) throw new Error(`render: bad uid ${input.uid}`);
  if (!Number.isInteger(input.port) || input.port < 1024 || input.port > 65535) {
    throw new Error(`render: proxy port ${input.port} must be an unprivileged TCP port (1024–65535)`);
  }
  if (!/^[a-z0-9_]+$/.test(input.user)) throw new Error(`render: bad user name ${input.user}`);
  return fill(anchorTemplate, {
    anchor: anchorName(input.uid),
    user: input.user,
    uid: String(input.uid),
    port: String(input.port),
  });
}

export interface SudoersInput {
  hostUser: string;
  /** argv prefix of the root helper, absolute paths without whitespace (e.g. [bun, privileged.js]). */
  helperArgv: readonly string[];
}

const SUDOERS_WORD = /^[A-Za-z0-9_./+-]+$/;
/** A helper argument may also hold `=` (`--config=/dev/null`), which sudoers wants escaped. */
const SUDOERS_ARG = /^[A-Za-z0-9_./+=-]+$/;
const sudoersEscape = (a: string) => a.replaceAll("=", "\\=");

/**
 * /etc/sudoers.d/sbx_<host>: the host user may run the one root helper (which validates every request), the one
 * pflog tcpdump command (exact argv), and may
 * run anything as its own guests (members of `sbx_<host>`), never as anyone else. The guests get no sudo at all.
 */
export function renderSudoers(input: SudoersInput): string {
  if (!SUDOERS_WORD.test(input.hostUser)) throw new Error(`render: host user '${input.hostUser}' cannot be named in sudoers safely`);
  if (input.helperArgv.length === 0) throw new Error("render: helper argv is empty");
  for (const a of input.helperArgv) {
    if (a.startsWith("-")) {
      if (!SUDOERS_ARG.test(a)) throw new Error(`render: helper option '${a}' has characters sudoers would misread`);
      continue;
    }
    if (!a.startsWith("/")) throw new Error(`render: helper path ${a} must be absolute`);
    if (!SUDOERS_WORD.test(a)) throw new Error(`render: helper path '${a}' has characters sudoers would misread`);
  }
  const alias = `SBX_${hostTag(input.hostUser).toUpperCase()}_HELPER`;
  const session = alias.replace(/_HELPER$/, "_SESSION");
  return [
    `# sbx: ${input.hostUser} may run sbx's root helper (creates/removes its sandbox users, loads their pf anchors,`,
    `# makes pflog0 where the Mac has none) and read pflog0 with tcpdump, and may run commands as its own sandbox`,
    `# users (group ${hostGroup(input.hostUser)}), never as anyone else. A sandbox's sessions start through \`su -\` as root, the`,
    `# one way to give the sandbox user a login session of its own (pam_launchd: its own bootstrap namespace, so`,
    `# \`open\` and the pasteboard are not the person's); su - keeps nothing of the environment.`,
    `# Written by \`sbx service install\` to /etc/sudoers.d/sbx_${hostTag(input.hostUser)}; validate with \`visudo -cf <file>\`.`,
    `Cmnd_Alias ${alias} = ${input.helperArgv.map(sudoersEscape).join(" ")} *`,
    `Cmnd_Alias ${alias.replace(/_HELPER$/, "_PFLOG")} = ${MONITOR_ARGV.join(" ")}`,
    `Cmnd_Alias ${session} = ${SU} - ${guestPrefix(input.hostUser)}* -f -c *`,
    `Defaults!${alias} env_reset`,
    // As a sandbox user: nothing of the person's environment (macOS keeps SSH_AUTH_SOCK, DISPLAY, XAUTHORITY, EDITOR
    // and more by default), sbx passes what the guest gets; and files only the guest can read.
    `Defaults>%${hostGroup(input.hostUser)} env_reset, !env_keep, !env_check, umask=0077, umask_override`,
    `${input.hostUser} ALL = (root) NOPASSWD: ${alias}, ${alias.replace(/_HELPER$/, "_PFLOG")}, ${session}`,
    `${input.hostUser} ALL = (%${hostGroup(input.hostUser)}) NOPASSWD: ALL`,
    "",
  ].join("\n");
}

export interface ZshRcInput {
  home: string;
  sandbox: string;
  env: Record<string, string>;
  /** Last on PATH: the agent launchers' dir (so an agent the guest installs itself comes first). */
  lastDir?: string;
}

/** The guest's zsh rc files (macOS guests always get /bin/zsh). */
export function renderZshRc(input: ZshRcInput): HomeFile[] {
  return renderShellRc({ shell: "zsh", binDir: `${input.home}/bin`, env: input.env, sandbox: input.sandbox, ...(input.lastDir ? { lastDir: input.lastDir } : {}) });
}

export interface PlistInput {
  label: string;
  /** Root helper argv; the plist appends the reapply-all request. */
  helperArgv: readonly string[];
  log: string;
}

function xmlEscape(s: string): string {
  return s.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;").replaceAll('"', "&quot;");
}

/** /Library/LaunchDaemons/<label>.plist: runs the helper's `reapply-all` at boot and on pf.conf changes. */
export function renderPrivilegedPlist(input: PlistInput): string {
  const args = [...input.helperArgv, JSON.stringify({ op: "reapply-all" })];
  return fill(plistTemplate, {
    label: xmlEscape(input.label),
    args: args.map((a) => `    <string>${xmlEscape(a)}</string>`).join("\n"),
    log: xmlEscape(input.log),
  });
}

export interface SeatbeltInput {
  /** The sandbox's proxy port on the loopback: the one address its sockets may reach. */
  port: number;
  /** Real paths (no symlink in them: /private/tmp, not /tmp) of the unix sockets it may connect to (the bridge). */
  sockets: readonly string[];
  /** The guest's home: its own unix sockets (tmux, agents) may live below it. */
  home: string;
}

/** Mach services a guest must not reach: they act for whoever asks, outside pf's uid rule and the guest's session. */
export const SEATBELT_DENIED_SERVICES = [
  "com.apple.coreservices.launchservicesd", // open(1), LSOpen: starts apps and opens URLs
  "com.apple.lsd.mapdb",
  "com.apple.lsd.modifydb",
  "com.apple.pasteboard.1", // pbcopy / pbpaste
  "com.apple.mDNSResponder", // name lookups: DNS queries sent by another user (_mdnsresponder)
  "com.apple.mDNSResponderHelper",
  "com.apple.dnssd.service",
  "com.apple.SystemConfiguration.DNSConfiguration",
  "com.apple.nehelper", // network extensions and VPN
  "com.apple.nesessionmanager",
  "com.apple.networkd",
  "com.apple.symptomsd",
  "com.apple.usernoted.client", // notifications the person would read
  "com.apple.coreservices.appleevents", // AppleEvents: scripting other apps
  "com.apple.screencapture.interactive",
] as const;

/**
 * Programs a guest must not run: each asks a service to act outside the guest's session and profile (a LaunchAgent, an
 * app, a script in another app, the pasteboard). A copy of one under another path is not denied, but the services they
 * reach are (above), and the daemon's stop boots the guest's launchd domain out.
 */
export const SEATBELT_DENIED_PROGRAMS = ["/bin/launchctl", "/usr/bin/open", "/usr/bin/osascript", "/usr/bin/pbcopy", "/usr/bin/pbpaste", "/usr/bin/screencapture"] as const;

/** A path as an SBPL string: printable, no quote or backslash (sbx's paths never have them; refused rather than escaped). */
function sbplString(s: string, what: string): string {
  if (!/^\/[\x20-\x7e]*$/.test(s) || /["\\]/.test(s)) throw new Error(`render: ${what} '${s}' cannot be written into a Seatbelt profile`);
  return `"${s}"`;
}

/**
 * The Seatbelt (sandbox-exec) profile every guest session runs in, beside pf (which sees only the guest's own TCP and
 * UDP): no network but its proxy port on the loopback and the named unix sockets (so no ICMP, no unix sockets in /tmp,
 * no mDNSResponder); no LaunchServices, pasteboard, DNS or other services that would act for it. Files stay with the
 * uid's permissions (allow default). Pure; passed inline (`sandbox-exec -p`), so no file a guest could change.
 */
export function renderSeatbelt(input: SeatbeltInput): string {
  if (!Number.isInteger(input.port) || input.port < 1024 || input.port > 65535) throw new Error(`render: bad proxy port ${input.port}`);
  const sockets = input.sockets.map((p) => sbplString(p, "socket path"));
  const home = sbplString(input.home, "home");
  return [
    "(version 1)",
    "(allow default)",
    "(deny network*)",
    `(allow network-outbound (remote ip "localhost:${input.port}"))`,
    ...sockets.map((p) => `(allow network-outbound (remote unix-socket (path-literal ${p})))`),
    `(allow network-outbound (remote unix-socket (subpath ${home})))`,
    `(allow network-bind network-inbound (local unix-socket (subpath ${home})))`,
    "(deny mach-lookup",
    ...SEATBELT_DENIED_SERVICES.map((n) => `  (global-name "${n}")`),
    ")",
    "(deny process-exec",
    ...SEATBELT_DENIED_PROGRAMS.map((p) => `  (literal "${p}")`),
    ")",
    "",
  ].join("\n");
}
