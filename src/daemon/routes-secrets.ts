// /v1/secrets/*: the secrets bound to hosts, for every sandbox or one (`sbx secret set NAME --host …`, `rm`, `list`).
// Only bindings come here; values stay where the person keeps them (their keychain or keyring, sbx's file, a command,
// 1Password). /v1/secrets/reload is the CLI's word that a stored value changed: the daemon reads them again, then answers.
import type { Hono } from "hono";
import { describeRules } from "../core/credential-scope";
import { bindingProblem, type BindingSpec } from "../core/bound-secret";
import { SbxError } from "../core/errors";
import type { Sandbox } from "../core/schemas";
import { reloadStored } from "../secrets/stored";
import { SecretBindings } from "../store/secret-bindings";
import type { Store } from "../store/store";
import { SecretBindSchema, SecretBindingsSchema, SecretChangeSchema, SecretUnbindSchema, type SecretBindingView } from "./protocol";

export interface SecretRoutesDeps {
  store: Store;
  /** Whose stored secrets this daemon holds (secrets/stored.ts); none: it holds none (a test's app). */
  configDir?: string;
  /** The sandbox `--sandbox NAME` means, for the caller where it stands. */
  sandboxNamed(w: { cwd: string; repoFlag?: string | undefined; asUid?: number | undefined }, name: string): Promise<Sandbox>;
  jsonBody(c: { req: { json(): Promise<unknown> } }): Promise<unknown>;
}

function sourceText(spec: BindingSpec): string {
  const s = spec.source;
  const ttl = (ms: number) => (ms % 3_600_000 === 0 ? `${ms / 3_600_000}h` : ms % 60_000 === 0 ? `${ms / 60_000}m` : `${Math.round(ms / 1000)}s`);
  if (s.kind === "vault") return "stored";
  if (s.kind === "command") return `command: ${s.command} (kept ${ttl(s.ttlMs)})`;
  return `1Password: ${s.ref} (kept ${ttl(s.ttlMs)})`;
}

export function secretRoutes(app: Hono, deps: SecretRoutesDeps): void {
  const bindings = new SecretBindings(deps.store);
  const scopeOf = async (req: { cwd: string; repoFlag?: string | undefined; asUid?: number | undefined; sandbox?: string | undefined }) =>
    req.sandbox === undefined ? null : await deps.sandboxNamed(req, req.sandbox);
  const label = (sb: Sandbox | null) => (sb === null ? "every sandbox (global)" : `sandbox '${sb.name}'`);

  app.post("/v1/secrets/bind", async (c) => {
    const req = SecretBindSchema.parse(await deps.jsonBody(c));
    const why = bindingProblem(req.spec);
    if (why) throw new SbxError("usage", why, { hint: "Bind a secret to names (api.example.com, *.example.com) and paths like /v1/** ." });
    const sb = await scopeOf(req);
    const r = bindings.set(req.name, sb?.id ?? null, req.spec);
    deps.store.audit({ sandboxId: sb?.id ?? null, kind: "secret", action: r.replaced ? "secret.rebound" : "secret.bound", detail: { secret: req.name, hosts: req.spec.hosts, source: req.spec.source.kind } });
    return c.json(SecretChangeSchema.parse({ scope: label(sb), changed: true }));
  });

  app.post("/v1/secrets/unbind", async (c) => {
    const req = SecretUnbindSchema.parse(await deps.jsonBody(c));
    const sb = await scopeOf(req);
    const removed = bindings.remove(req.name, sb?.id ?? null);
    if (removed) deps.store.audit({ sandboxId: sb?.id ?? null, kind: "secret", action: "secret.unbound", detail: { secret: req.name } });
    return c.json(SecretChangeSchema.parse({ scope: label(sb), changed: removed }));
  });

  app.post("/v1/secrets/reload", async (c) => {
    if (deps.configDir) await reloadStored(deps.configDir);
    return c.json(SecretChangeSchema.parse({ scope: "stored secrets", changed: true }));
  });

  app.get("/v1/secrets/bindings", (c) => {
    const names = new Map(deps.store.listSandboxes({ all: true }).map((s) => [s.id, s.name]));
    const view = (b: ReturnType<SecretBindings["list"]>[number]): SecretBindingView => ({
      name: b.name,
      sandbox: b.sandboxId === null ? null : (names.get(b.sandboxId) ?? `#${b.sandboxId}`),
      hosts: b.spec.hosts,
      scope: describeRules(b.spec.rules),
      header: b.spec.header?.name ?? null,
      env: b.spec.env,
      npmrc: b.spec.npmrc,
      inBody: b.spec.inBody,
      source: sourceText(b.spec),
      createdAt: b.createdAt,
      lastUsedAt: b.lastUsedAt,
    });
    return c.json(SecretBindingsSchema.parse({ bindings: bindings.list().map(view) }));
  });
}
