// How the gate's ssh reaches an ssh remote behind the host's parent proxy: the host and port ssh will really connect to
// (the remote URL as git 2.39 reads it, then the host's own ssh config, `ssh -G`), and a ProxyCommand that sbx fixes to
// exactly that host:port (ssh-parent-connect.ts through the daemon's relay, sys/parent-relay.ts `tunnel`). Never ssh's
// `%h`/`%p`: OpenSSH 9.2 puts %h (a HostName from ssh's config included) unquoted into `$SHELL -c`.
import { join } from "node:path";
import { normalizeHost } from "../core/allowlist";
import { BUN_NO_CWD_CONFIG } from "../sys/bun-args";
import type { Gate } from "./gate-git";
import { gitEnv } from "./gate-git";

/** An ssh remote as git hands it to ssh: `[user@]host` and `-p port` when the URL has one. */
export interface SshRemote {
  user: string | null;
  host: string;
  port: number | null;
}

/**
 * Pure: the user, host and port git 2.39 gives ssh for an ssh remote URL (connect.c: `ssh://` URLs are
 * percent-decoded whole, the authority ends at the first `/` after an optional `[…]`, the user is up to the last `@`,
 * `:port` only when all digits and below 65536, `host:` is the host; scp-like `user@host:path` has no port), or null
 * when it is neither form or its host is not one sbx can name (ssh gets a host, never an option or a shell word).
 */
export function parseSshRemote(url: string): SshRemote | null {
  let authority: string;
  const ssh = /^ssh:\/\//i.exec(url);
  if (ssh) {
    let rest: string;
    try {
      rest = decodeURIComponent(url.slice(ssh[0].length));
    } catch {
      return null;
    }
    // An IPv6 address in brackets holds no '/': the authority ends at the first one.
    const slash = rest.indexOf("/");
    if (slash < 0) return null;
    authority = rest.slice(0, slash);
  } else {
    const scp = /^([A-Za-z0-9._-]+@[A-Za-z0-9.-]+):(?!\/\/)/.exec(url);
    if (!scp) return null;
    authority = scp[1]!;
  }
  const at = authority.lastIndexOf("@");
  const user = at >= 0 ? authority.slice(0, at) : null;
  const hostPort = authority.slice(at + 1);
  let port: number | null = null;
  let host: string;
  const v6 = /^\[([^\]]*)\](?::([0-9]*))?$/.exec(hostPort);
  if (v6) {
    host = v6[1]!;
    if (v6[2]) port = Number(v6[2]);
  } else {
    const m = /^([^:]*)(?::([0-9]*))?$/.exec(hostPort);
    if (!m) return null;
    host = m[1]!;
    if (m[2]) port = Number(m[2]);
  }
  if (port !== null && (port < 1 || port > 65535)) return null;
  if (sshHostName(host) === null) return null;
  return { user, host, port };
}

/**
 * Pure: `host` as sbx names it to the parent (core/allowlist.ts's normal form), or null unless it is plainly a host
 * name or address: letters, digits, `.`, `-` (`:` in an IPv6 address), never first a `-`. Everything else (shell
 * metacharacters, `%` tokens, blanks, control characters, a leading `-`) is refused, not quoted: the ProxyCommand is
 * quoted besides (sshProxyOption), but a host sbx cannot name plainly is not one it asks a parent for.
 */
export function sshHostName(host: string): string | null {
  if (!/^[A-Za-z0-9][A-Za-z0-9.-]*$/.test(host) && !/^[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*$/.test(host)) return null;
  return normalizeHost(host);
}

/** What the host's own ssh config says of a destination (`ssh -G`). */
export interface SshResolved {
  hostname: string | null;
  port: number | null;
  /** The user's own ProxyCommand or ProxyJump for it, if any (`none` is none). */
  ownProxy: string | null;
}

/** Pure: reads `ssh -G`'s output (one `keyword value` a line, keywords lower-case). */
export function parseSshG(out: string): SshResolved {
  const r: SshResolved = { hostname: null, port: null, ownProxy: null };
  for (const line of out.split("\n")) {
    const sp = line.indexOf(" ");
    if (sp <= 0) continue;
    const key = line.slice(0, sp);
    const value = line.slice(sp + 1).trim();
    if (key === "hostname") r.hostname = value;
    else if (key === "port" && /^[0-9]{1,5}$/.test(value)) r.port = Number(value);
    else if ((key === "proxycommand" || key === "proxyjump") && value !== "" && value.toLowerCase() !== "none") r.ownProxy ??= `${key} ${value}`;
  }
  return r;
}

/** Pure: a word for POSIX sh, single-quoted. */
export function shellWord(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * Pure: the `-o ProxyCommand=…` argument for the gate's ssh command line (which git runs with `sh -c`), running
 * `helper host port`. Two readers: git's shell, which takes the quoted argument whole, then ssh, which expands its `%`
 * tokens in the value (so every `%` is written `%%`) and runs it with `$SHELL -c` (the gate sets SHELL=/bin/sh), which
 * takes each quoted word whole. `host` and `port` are sbx's, fixed here: never ssh's `%h`/`%p`.
 */
export function sshProxyOption(helper: readonly string[], host: string, port: number): string {
  if ([...helper, host].some((w) => /[\x00-\x1f\x7f]/.test(w))) throw new Error("a ProxyCommand word holds a control character");
  const command = [...helper, host, String(port)].map(shellWord).join(" ").replace(/%/g, "%%");
  return `-o ${shellWord(`ProxyCommand=${command}`)}`;
}

/** How this process runs the ProxyCommand helper: its own Bun, the helper's source beside this file. */
export function defaultSshHelper(execPath: string = process.execPath): string[] {
  return [execPath, ...BUN_NO_CWD_CONFIG, join(import.meta.dir, "ssh-parent-connect.ts")];
}

/** What an ssh call to a remote is given to go through the parent: more for its ssh command line, its environment, and its end. */
export interface SshThroughParent {
  sshOption: string;
  env: Record<string, string>;
  release(): void;
}

/**
 * Where the gate's ssh to `url` goes: through the parent (a one-call tunnel to exactly the host and port ssh would reach,
 * as the host's ssh config resolves them), straight out (no parent, NO_PROXY, or the user's own ProxyCommand/ProxyJump
 * for that host), or refused with why (a host sbx cannot name plainly).
 * runs: sh -c '<the host's ssh command> -G "$@"' sh [-p port] [user@]host (the gate's environment; nothing connects)
 */
export async function sshRoute(g: Gate, url: string): Promise<{ kind: "direct" } | { kind: "parent"; through: SshThroughParent } | { kind: "refused"; why: string }> {
  if (!g.parent?.tunnel || !g.ssh) return { kind: "direct" };
  const remote = parseSshRemote(url);
  if (remote === null) return { kind: "refused", why: `the ssh remote ${JSON.stringify(url)} names what is not a plain host name or address (letters, digits, '.', '-'; an IPv6 address in brackets), so sbx does not ask the parent proxy for it` };
  const target = remote.user !== null ? `${remote.user}@${remote.host}` : remote.host;
  const r = await g.exec.run(["sh", "-c", `${g.ssh.command} -G "$@"`, "sh", ...(remote.port !== null ? ["-p", String(remote.port)] : []), "--", target], {
    cwd: g.paths.repo,
    env: { ...g.ssh.env, ...gitEnv({ path: g.path, home: g.paths.home }) },
    replaceEnv: true,
    check: false,
    timeoutMs: 10_000,
  });
  const resolved = r.exitCode === 0 ? parseSshG(r.stdout) : { hostname: null, port: null, ownProxy: null };
  // The user's own ProxyCommand or ProxyJump for this host wins over sbx's: it is how their own `git push` reaches it
  // today (a bastion, a corkscrew through the same company proxy, a jump host only it can see), and the gate runs the
  // host's ssh as the host runs it. sbx's ProxyCommand, given first on the command line, would silently replace it
  // (ssh takes a setting's first value) and send the connection somewhere the user never sends it. Theirs runs as the
  // host user's own command, with none of sbx's credentials: the relay lends nothing for it.
  if (resolved.ownProxy !== null) return { kind: "direct" };
  const raw = resolved.hostname ?? remote.host;
  const host = sshHostName(raw);
  if (host === null) return { kind: "refused", why: `the ssh config's HostName for ${remote.host} (${JSON.stringify(raw)}) is not a plain host name or address, so sbx does not ask the parent proxy for it` };
  const port = resolved.port ?? remote.port ?? 22;
  const lease = await g.parent.tunnel(host, port);
  if (lease === null) return { kind: "direct" };
  return {
    kind: "parent",
    through: {
      sshOption: sshProxyOption(g.ssh.helper ?? defaultSshHelper(), host, port),
      // ssh runs a ProxyCommand with $SHELL -c: the quoting above is for sh, whatever shell the host user has.
      env: { SBX_PARENT_RELAY: lease.relay, SBX_PARENT_RELAY_PASSWORD: lease.password, SHELL: "/bin/sh" },
      release: lease.release,
    },
  };
}
