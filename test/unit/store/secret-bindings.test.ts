// Secrets bound to hosts, as stored: a sandbox's own binding wins over the global one of its name; placeholders are per
// sandbox and go with it (gone-when-removed: nothing of it is left for a sandbox made later); removing a binding takes
// the placeholders it alone gave out.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BindingSpec } from "../../../src/core/bound-secret";
import { bindingProblem } from "../../../src/core/bound-secret";
import { SecretBindings } from "../../../src/store/secret-bindings";
import { Store } from "../../../src/store/store";

let dir = "";
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const spec = (hosts: string[]): BindingSpec => ({ hosts, rules: [{ methods: ["GET"], path: "/**" }], header: null, env: "T", npmrc: false, inBody: false, source: { kind: "vault" } });

function world() {
  dir = mkdtempSync(join(tmpdir(), "sbx-bind-"));
  const store = new Store(join(dir, "db.sqlite"));
  const a = store.createSandbox({ name: "a", repo: "/r", backend: "fake" });
  const b = store.createSandbox({ name: "b", repo: "/r", backend: "fake" });
  return { store, a, b, binds: new SecretBindings(store) };
}

describe("secret bindings", () => {
  test("a sandbox's own binding wins over the global one; others get the global one", () => {
    const { a, b, binds } = world();
    binds.set("TOK", null, spec(["global.test"]));
    binds.set("TOK", a.id, spec(["own.test"]));
    expect(binds.forSandbox(a.id).map((x) => x.spec.hosts)).toEqual([["own.test"]]);
    expect(binds.forSandbox(b.id).map((x) => x.spec.hosts)).toEqual([["global.test"]]);
    expect(binds.list().map((x) => [x.name, x.sandboxId])).toEqual([["TOK", null], ["TOK", a.id]]);
  });

  test("gone-when-removed: a removed sandbox's placeholders and own bindings go; a new sandbox gets none of them", () => {
    const { store, a, binds } = world();
    binds.set("TOK", a.id, spec(["own.test"]));
    binds.setPlaceholder(a.id, "TOK", "sk_live_placeholder");
    store.setSandboxState(a.id, "deleted");
    expect(binds.placeholders(a.id).size).toBe(0);
    expect(binds.list()).toEqual([]);
    const again = store.createSandbox({ name: "a", repo: "/r", backend: "fake" });
    expect(binds.forSandbox(again.id)).toEqual([]);
    expect(binds.placeholders(again.id).size).toBe(0);
  });

  test("removing the global binding takes the placeholders it gave; a sandbox with its own keeps its", () => {
    const { a, b, binds } = world();
    binds.set("TOK", null, spec(["g.test"]));
    binds.set("TOK", a.id, spec(["own.test"]));
    binds.setPlaceholder(a.id, "TOK", "p_a");
    binds.setPlaceholder(b.id, "TOK", "p_b");
    expect(binds.remove("TOK", null)).toBe(true);
    expect(binds.placeholders(a.id).get("TOK")).toBe("p_a");
    expect(binds.placeholders(b.id).has("TOK")).toBe(false);
    expect(binds.remove("TOK", null)).toBe(false);
  });

  test("a binding is refused for an address, a port, or a path the proxy never sees", () => {
    expect(bindingProblem(spec(["10.0.0.1"]))).toContain("address");
    expect(bindingProblem(spec(["a.test:8443"]))).toContain("port");
    expect(bindingProblem({ ...spec(["a.test"]), rules: [{ methods: ["GET"], path: "/v1/../x" }] })).toContain("not a path the proxy can match");
    expect(bindingProblem({ ...spec(["a.test"]), rules: [{ methods: ["GET"], path: "/v1/*/x/**" }] })).toBeNull();
  });
});
