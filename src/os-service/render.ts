// Pure renderers for the controller's service definitions: systemd user unit, systemd system unit, launchd LaunchAgent plist.

export const SYSTEMD_UNIT_NAME = "sbx.service";
export const LAUNCHD_LABEL = "dev.sbx.daemon";

export interface ServiceSpec {
  /** The daemon's argv, e.g. [bun, /opt/sbx/src/cli/main.ts, daemon]. */
  argv: string[];
  /** Only what the daemon needs to find its tools (PATH, DOCKER_HOST); never secrets. */
  env: Record<string, string>;
  /** Where launchd writes the daemon's stdout and stderr (systemd uses the journal). */
  logPath: string;
  /** Working directory (the user's home). */
  home: string;
}

/** systemd's quoting: bare when safe, else double quotes; `%` is a specifier and `$` a variable, both doubled. */
export function systemdQuote(arg: string): string {
  const escaped = arg.replace(/%/g, "%%").replace(/\$/g, "$$$$");
  if (/^[A-Za-z0-9_@+=:,./-]+$/.test(escaped.replace(/%%|\$\$/g, ""))) return escaped;
  return `"${escaped.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

function environmentLines(env: Record<string, string>): string[] {
  return Object.keys(env)
    .sort()
    .map((k) => `Environment=${systemdQuote(`${k}=${env[k]}`)}`);
}

const DESCRIPTION = "sbx controller: per-sandbox proxies, bridges and ref sync";

/** Pure: the user unit (`~/.config/systemd/user/sbx.service`) for the Docker backend run as the user. */
/** Both units: private files, restart on exit, and SIGTERM to the daemon only (it stops its guards and sessions itself, then the rest is killed). */
const RESTART_AND_STOP = [
  "UMask=0077",
  "Restart=always",
  "RestartSec=2",
  "KillMode=mixed",
  "KillSignal=SIGTERM",
  "TimeoutStopSec=20",
];

export function renderSystemdUserUnit(s: ServiceSpec): string {
  return [
    "# Written by `sbx service install`; `sbx service uninstall` removes it.",
    "[Unit]",
    `Description=${DESCRIPTION}`,
    "",
    "[Service]",
    "Type=simple",
    `ExecStart=${s.argv.map(systemdQuote).join(" ")}`,
    `WorkingDirectory=${systemdQuote(s.home)}`,
    ...environmentLines(s.env),
    ...RESTART_AND_STOP,
    "",
    "[Install]",
    "WantedBy=default.target",
    "",
  ].join("\n");
}

/** Pure: the system unit for the Linux-user backend, run by root; state in /var/lib/sbx, sockets in /run/sbx. */
export function renderSystemdSystemUnit(s: ServiceSpec): string {
  return [
    "# Written by `sbx service install --system`; `sbx service uninstall --system` removes it.",
    "[Unit]",
    `Description=${DESCRIPTION} (system, Linux-user backend)`,
    // Firewall rules (nft) go back before any sandbox runs: after the network stack, before users log in.
    "After=network-pre.target nftables.service",
    "Before=systemd-user-sessions.service",
    "",
    "[Service]",
    "Type=simple",
    `ExecStart=${s.argv.map(systemdQuote).join(" ")}`,
    `WorkingDirectory=${systemdQuote(s.home)}`,
    ...environmentLines({ ...s.env, HOME: s.home, XDG_STATE_HOME: "/var/lib", XDG_RUNTIME_DIR: "/run", XDG_CACHE_HOME: "/var/cache", XDG_CONFIG_HOME: "/etc" }),
    "StateDirectory=sbx",
    "StateDirectoryMode=0700",
    "RuntimeDirectory=sbx",
    "RuntimeDirectoryMode=0700",
    "RuntimeDirectoryPreserve=yes",
    "CacheDirectory=sbx",
    ...RESTART_AND_STOP,
    "",
    "[Install]",
    "WantedBy=multi-user.target",
    "",
  ].join("\n");
}

function xml(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/** Pure: the LaunchAgent (`~/Library/LaunchAgents/dev.sbx.daemon.plist`): started at login, restarted if it dies. */
export function renderLaunchAgentPlist(s: ServiceSpec): string {
  const str = (v: string) => `<string>${xml(v)}</string>`;
  const env = Object.keys(s.env)
    .sort()
    .map((k) => `\t\t<key>${xml(k)}</key>\n\t\t${str(s.env[k]!)}`)
    .join("\n");
  return `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<!-- Written by \`sbx service install\`; \`sbx service uninstall\` removes it. -->
<plist version="1.0">
<dict>
\t<key>Label</key>
\t${str(LAUNCHD_LABEL)}
\t<key>ProgramArguments</key>
\t<array>
${s.argv.map((a) => `\t\t${str(a)}`).join("\n")}
\t</array>
\t<key>WorkingDirectory</key>
\t${str(s.home)}
\t<key>EnvironmentVariables</key>
\t<dict>
${env}
\t</dict>
\t<key>RunAtLoad</key>
\t<true/>
\t<key>KeepAlive</key>
\t<true/>
\t<key>ThrottleInterval</key>
\t<integer>5</integer>
\t<key>Umask</key>
\t<integer>63</integer>
\t<key>ProcessType</key>
\t<string>Interactive</string>
\t<key>StandardOutPath</key>
\t${str(s.logPath)}
\t<key>StandardErrorPath</key>
\t${str(s.logPath)}
</dict>
</plist>
`;
}
