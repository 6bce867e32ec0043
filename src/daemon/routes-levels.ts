// A sandbox's policy level over the control API (/v1/policy/level): `sbx policy show NAME` and `sbx policy set NAME
// --level L` (the lead's `sbx policy check` lives beside them in the same verb, on its own route).
import type { Hono } from "hono";
import { BUILTIN_ALLOWLIST, publishedOf } from "../core/egress";
import { LEVELS, levelAgents, levelLists, levelMirrors } from "../core/levels";
import type { AllowEntry } from "../core/schemas";
import { liveAt } from "../policy/lapse";
import type { SandboxService } from "../sandboxes/service";
import type { Store } from "../store/store";
import { jsonBody } from "./http";
import { PolicyLevelSchema, PolicyLevelViewSchema, type PolicyLevelView } from "./protocol";

export interface LevelRouteDeps {
  service: Pick<SandboxService, "level">;
  store: Store;
  now?: () => number;
}

/** The built-in list as `sbx policy show` explains it (a sandbox with no level). */
const BUILTIN_ABOUT = "no level: the built-in list only (sbx policy set NAME --level locked|balanced|open chooses one)";

export function levelRoutes(app: Hono, deps: LevelRouteDeps): void {
  const now = deps.now ?? Date.now;
  app.post("/v1/policy/level", async (c) => {
    const req = PolicyLevelSchema.parse(await jsonBody(c));
    const r = await deps.service.level(req.name, { cwd: req.cwd, ...(req.repoFlag ? { repoFlag: req.repoFlag } : {}), ...(req.asUid ? { asUid: req.asUid } : {}), ...(req.level ? { level: req.level } : {}) });
    const t = now();
    // What allows now: an entry past its expiry is left out, as the proxy leaves it out.
    const entry = (e: AllowEntry) => ({ pattern: e.pattern, addedBy: e.addedBy, addedAt: e.addedAt, expiresAt: e.expiresAt, once: e.once });
    const lists = r.setting ? levelLists(r.setting, levelAgents(r.identity), levelMirrors(r.identity)) : null;
    const view: PolicyLevelView = {
      name: r.name,
      level: r.setting?.level ?? null,
      about: r.setting ? LEVELS[r.setting.level] : BUILTIN_ABOUT,
      allows: lists ? lists.parts : BUILTIN_ALLOWLIST.map((pattern) => ({ pattern, why: "built in" })),
      open: lists?.open ?? false,
      repo: r.setting && r.setting.level === "balanced" ? r.setting.repo : null,
      sandbox: deps.store.listAllow(r.sandboxId).filter((e) => liveAt(e, t)).map(entry),
      global: deps.store.listAllow(null).filter((e) => liveAt(e, t)).map(entry),
      published: publishedOf(r.identity),
      changed: r.changed,
    };
    return c.json(PolicyLevelViewSchema.parse(view));
  });
}
