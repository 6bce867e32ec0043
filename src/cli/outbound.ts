// What a CLI command that itself talks to a service (`sbx chat setup` checking a Zulip key, a Slack token, a webhook)
// goes out through: the host's parent proxy as the daemon reads it (the config file's `proxy`, its credentials a
// stored secret, else the environment's), so a setup checked on a company network takes the same way the daemon's
// bot will. Bun's fetch alone reads only the environment's proxy variables.
import type { Exec } from "../sys/exec";
import type { Env } from "../sys/env";
import type { Paths } from "../sys/paths";
import { hostParentSettings, parentFetch, ParentRouter } from "../sys/parent";
import { readStored } from "../secrets/stored";

export interface OutboundDeps {
  paths: Paths;
  env: Env;
  exec: Exec;
}

/** fetch through the parent proxy where it applies; plain fetch when none is set (or it cannot be used: doctor says why). */
export async function outboundFetch(d: OutboundDeps): Promise<typeof fetch> {
  // As the daemon: a config that cannot be read leaves the environment's proxy (sbx create and doctor report it).
  const p = hostParentSettings(d.paths, d.env);
  if (p.settings === null) return fetch;
  const endpoints = [p.settings.https, p.settings.http];
  // The stored secrets are read only when the parent wants one (a vault may ask the person to unlock it).
  const wantsSecret = endpoints.some((e) => e?.credentials?.kind === "secret");
  const secrets = wantsSecret
    ? await readStored({ exec: d.exec, platform: d.env.platform, env: d.env.raw, configDir: d.paths.configDir, home: d.env.vars.HOME, uid: d.env.uid }).catch(() => ({}) as Record<string, string>)
    : {};
  return parentFetch(new ParentRouter(p.settings, (n) => secrets[n] ?? null));
}
