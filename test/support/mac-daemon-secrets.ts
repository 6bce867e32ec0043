// Test-only: the macOS daemon's part of a session's secrets, run as the host user with the umask its LaunchAgent sets
// (the caller wraps it): bindings and values stored as `sbx secret set` leaves them, the session's secrets as the
// daemon's BoundSecrets gives them, written for the guest by secretSessionEnv into the sandbox's socket dir (what
// ServiceContext.secretEnv does before every shell and command). Prints the variables, the spec and a leaf for the
// test's TLS site, signed by the CA the daemon made (as JSON on stdout).
import { join } from "node:path";
import type { Sandbox } from "../../src/core/schemas";
import { userSpec, type UserIdentity } from "../../src/drivers/user-account";
import { secretSessionEnv } from "../../src/sandboxes/secret-env";
import { BoundSecrets } from "../../src/secrets/bound";
import { SecretResolver } from "../../src/secrets/sources";
import { secretsFile, setSecret } from "../../src/secrets/store";
import { fileVault } from "../../src/secrets/vault";
import { SecretBindings } from "../../src/store/secret-bindings";
import { Store } from "../../src/store/store";
import { createExec } from "../../src/sys/exec";
import type { Paths } from "../../src/sys/paths";
import { Authority, authorityFiles } from "../../src/tls/authority";
import { issueLeaf, loadCa } from "../../src/tls/x509";

interface Input {
  paths: Pick<Paths, "stateDir" | "configDir" | "runtimeDir">;
  name: string;
  repo: string;
  identity: UserIdentity;
  values: Record<string, string>;
}

const input = JSON.parse(process.argv[2]!) as Input;
const paths = { ...input.paths, dbFile: join(input.paths.stateDir, "sbx.db") } as Paths;
const store = new Store(paths.dbFile);
const row: Sandbox = store.findSandbox(input.repo, input.name) ?? store.createSandbox({ name: input.name, repo: input.repo, backend: "macos", identity: input.identity });
const bindings = new SecretBindings(store);
for (const [name, value] of Object.entries(input.values)) setSecret(secretsFile(paths.configDir), name, value);
bindings.set("API_TOKEN", null, { hosts: ["api.test"], rules: [{ methods: ["GET"], path: "/**" }], header: { name: "Authorization", template: "Bearer {}" }, env: "API_TOKEN", npmrc: false, inBody: false, source: { kind: "vault" } });
bindings.set("NPM_TOKEN", null, { hosts: ["registry.test"], rules: [{ methods: ["GET", "HEAD"], path: "/**" }], header: null, env: null, npmrc: true, inBody: false, source: { kind: "vault" } });
const bound = new BoundSecrets({
  bindings,
  resolver: new SecretResolver({ vault: fileVault(secretsFile(paths.configDir)), exec: createExec({ PATH: process.env.PATH ?? "/usr/bin:/bin" }) }),
  authority: () => Authority.open(paths.stateDir),
});
const spec = userSpec(paths, row);
const env = secretSessionEnv(spec, await bound.sessionSecrets(row.id));
const f = authorityFiles(paths.stateDir);
const ca = await loadCa(await Bun.file(f.cert).text(), await Bun.file(f.key).text());
const leaf = await issueLeaf(ca, ["api.test"]);
store.close();
process.stdout.write(JSON.stringify({ env, spec, leaf: { certPem: leaf.certPem, keyPem: leaf.keyPem } }));
