// Secrets bound to hosts, as the daemon serves them: each sandbox's proxy asks here which secrets it carries and their
// values (read from their sources per request, so a change takes effect on the next one), the CA makes its certificates,
// and a session or command asks for the variables that hold this sandbox's placeholders.
import { randomBytes } from "node:crypto";
import type { SecureContext } from "node:tls";
import type { BoundSecret } from "../core/bound-secret";
import { placeholderFor, randomLength } from "../core/placeholder";
import { HOST_ALIAS } from "../core/egress";
import type { SecretBinding } from "../proxy/terminate";
import type { SecretBindings } from "../store/secret-bindings";
import type { Authority } from "../tls/authority";
import type { SecretResolver } from "./sources";

/** Pure: whether a placeholder has the shape of a value (same length, and each character of the same class). */
export function sameShape(placeholder: string, value: string): boolean {
  if (placeholder.length !== value.length) return false;
  const cls = (c: string) => (c >= "a" && c <= "z" ? "a" : c >= "A" && c <= "Z" ? "A" : c >= "0" && c <= "9" ? "0" : c);
  for (let i = 0; i < value.length; i++) if (cls(placeholder[i]!) !== cls(value[i]!)) return false;
  return true;
}

/**
 * Pure: the registries an `--npmrc` secret's line is written for, as npm keys its auth (the "nerf dart": host and
 * port, `//host:port/`). A name is a registry on npm's default ports; host.sbx.internal is a registry only on the ports
 * published for the sandbox (on the host's 127.0.0.1, which it stands for): one line each. A wildcard names no registry.
 */
export function npmrcHosts(hosts: readonly string[], published: readonly string[]): string[] {
  const out: string[] = [];
  for (const h of hosts) {
    if (h.startsWith("*.")) continue;
    if (h !== HOST_ALIAS) {
      out.push(h);
      continue;
    }
    for (const e of published) {
      const m = /^127\.0\.0\.1:(\d+)$/.exec(e);
      if (m) out.push(`${HOST_ALIAS}:${m[1]}`);
    }
  }
  return out;
}

/** What a session gets: its variables, and what it should be told (a secret that could not be read, …). */
export interface SessionSecrets {
  env: Record<string, string>;
  /** sbx's CA certificate, when any secret is bound for the sandbox (its hosts are terminated): what it must trust. */
  caPem: string | null;
  /** The company CAs the config's `trust` names (tls/host-trust.ts), PEM; "" for none. Trusted beside the roots. */
  extraCas: string;
  /** `npmrc` bindings: registry host → placeholder, for the sandbox's npm config. */
  npmrc: { host: string; placeholder: string }[];
  notes: string[];
}

export class BoundSecrets {
  constructor(
    private readonly d: {
      bindings: SecretBindings;
      resolver: SecretResolver;
      /** The CA, opened on first need (a daemon with no bound secret never makes one). */
      authority: () => Promise<Authority>;
      /** CA certificates the upstreams are verified against; undefined: the runtime's roots. */
      upstreamCa?: () => string | undefined;
      /** Whether the proxy may end TLS for this sandbox for another reason (a rule that sees requests, issue 38). */
      terminatesFor?: (sandboxId: number) => boolean;
      /** The company CAs every session trusts (issue 39: the config's `trust`), PEM; "" for none. */
      companyCas?: () => Promise<string>;
      /** The host's services published for a sandbox (`addr:port`): what a secret bound to host.sbx.internal reaches. */
      published?: (sandboxId: number) => readonly string[];
      log?: (message: string, fields: Record<string, unknown>) => void;
    },
  ) {}

  /** The secrets a sandbox's proxy carries now, with its placeholders. */
  secretsOf(sandboxId: number): BoundSecret[] {
    // Asked for each connection the proxy carries: with no binding (the common case), one query and no more.
    const bindings = this.d.bindings.forSandbox(sandboxId);
    if (bindings.length === 0) return [];
    const given = this.d.bindings.placeholders(sandboxId);
    return bindings.map((b) => ({
      name: b.name,
      hosts: b.spec.hosts,
      rules: b.spec.rules,
      header: b.spec.header,
      inBody: b.spec.inBody,
      placeholder: given.get(b.name) ?? null,
    }));
  }

  /** The values of these secrets for a sandbox, read now; one that cannot be read is left out and logged by name. */
  async values(sandboxId: number, names: readonly string[]): Promise<Map<string, string>> {
    const bindings = new Map(this.d.bindings.forSandbox(sandboxId).map((b) => [b.name, b]));
    const out = new Map<string, string>();
    await Promise.all(
      names.map(async (n) => {
        const b = bindings.get(n);
        if (!b) return;
        try {
          out.set(n, await this.d.resolver.value(n, b.spec.source));
        } catch (e) {
          this.d.log?.("a bound secret cannot be read", { secret: n, err: (e as Error).message });
        }
      }),
    );
    return out;
  }

  private readonly touched = new Map<string, number>();

  /** Marks a secret used, at most once a minute each (not a write per request). */
  used(name: string): void {
    const now = Date.now();
    if ((this.touched.get(name) ?? 0) > now - 60_000) return;
    this.touched.set(name, now);
    try {
      this.d.bindings.touch(name);
    } catch {
      // A busy database costs the "last used" column a minute, never the request.
    }
  }

  /** The proxy's view of one sandbox's secrets. */
  forSandbox(sandboxId: number): SecretBinding {
    const self = this;
    let authority: Promise<Authority> | null = null;
    return {
      secrets: () => self.secretsOf(sandboxId),
      values: (names) => self.values(sandboxId, names),
      contextFor(host: string): Promise<SecureContext> {
        authority ??= self.d.authority();
        return authority.then((a) => a.contextFor(host));
      },
      get upstreamCa() {
        return self.d.upstreamCa?.();
      },
      used: (name) => self.used(name),
    };
  }

  /**
   * The variables a new session or command of a sandbox gets: each bound secret's placeholder under its variable,
   * given out once per sandbox and kept (a new one only when the value's shape changed). A secret whose value cannot
   * be read now is left out, and said.
   */
  async sessionSecrets(sandboxId: number): Promise<SessionSecrets> {
    const bindings = this.d.bindings.forSandbox(sandboxId);
    const given = this.d.bindings.placeholders(sandboxId);
    const out: SessionSecrets = { env: {}, caPem: null, extraCas: (await this.d.companyCas?.()) ?? "", npmrc: [], notes: [] };
    // sbx's CA is trusted where the proxy may end TLS: a secret bound for the sandbox, or a rule that sees requests.
    if (bindings.length === 0 && !this.d.terminatesFor?.(sandboxId)) return out;
    out.caPem = (await this.d.authority()).certPem;
    if (bindings.length === 0) return out;
    await Promise.all(
      bindings.map(async (b) => {
        let value: string;
        try {
          value = await this.d.resolver.value(b.name, b.spec.source);
        } catch (e) {
          out.notes.push(`secret ${b.name} is not in this session: ${(e as Error).message}`);
          return;
        }
        if (randomLength(value) === 0) {
          out.notes.push(`secret ${b.name} is not in this session: its value has no letters or digits to shape a placeholder from`);
          return;
        }
        let p = given.get(b.name);
        if (p === undefined || !sameShape(p, value)) {
          p = placeholderFor(value, (n) => randomBytes(n));
          this.d.bindings.setPlaceholder(sandboxId, b.name, p);
        }
        if (b.spec.env !== null) out.env[b.spec.env] = p;
        if (b.spec.npmrc) for (const h of npmrcHosts(b.spec.hosts, this.d.published?.(sandboxId) ?? [])) out.npmrc.push({ host: h, placeholder: p });
      }),
    );
    return out;
  }
}
