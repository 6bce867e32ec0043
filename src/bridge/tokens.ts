// Which token the bridge's git sends to a URL's host, and what to tell a person when none may go (core/credential-scope.ts).
import { forgeTokenFor, forgeTokenNames, type ForgeTokenChoice } from "../core/credential-scope";

/** host[:port] of an http(s) URL. */
export function credentialHost(url: string): string {
  const m = /^https?:\/\/(?:[^@\/]*@)?([^\/?#]+)/i.exec(url);
  return (m?.[1] ?? "").toLowerCase();
}

/**
 * The names a URL's token may have, in the order the bridge looks: GIT_TOKEN_<HOST>, the forge's usual names, and
 * GIT_TOKEN only for a host of the host repo's own remotes (`ownHosts`): core/credential-scope.ts. Pure.
 */
export function tokenNames(url: string, ownHosts: ReadonlySet<string>): string[] {
  return forgeTokenNames(credentialHost(url), ownHosts);
}

/** The name to tell a person to set for a URL's token: the forge's usual one, or GIT_TOKEN_<HOST> for other hosts. Pure. */
export function suggestedTokenName(url: string): string {
  const [specific, usual] = forgeTokenNames(credentialHost(url), new Set());
  return usual ?? specific!;
}

/** The git token for a URL (the first of tokenNames that is set), or none, naming a fallback withheld from this host. */
export function tokenFor(url: string, secrets: Readonly<Record<string, string>>, ownHosts: ReadonlySet<string>): ForgeTokenChoice {
  return forgeTokenFor(credentialHost(url), secrets, ownHosts);
}

/** Pure: a person's words for a fallback token withheld from a host, and what to set instead. */
export function withheldText(name: string, url: string, ownHosts: ReadonlySet<string>): string {
  const host = credentialHost(url);
  const own = [...ownHosts].sort().join(", ") || "none";
  return `${name} is not sent to ${host}: it is for the hosts of the host repository's own remotes (${own}); for ${host} set its own token on the host: sbx secret set ${suggestedTokenName(url)}`;
}
