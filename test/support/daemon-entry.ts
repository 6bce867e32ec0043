// Test-only daemon entry: the real daemon with the fake kind's driver over a file-backed backend, and socket guards (never used by sbx itself).
import { toSbxError } from "../../src/core/errors";
import { proxyGuard } from "../../src/guards/proxy";
import { productionComponents, runDaemonForeground } from "../../src/daemon/main";
import { processEnv } from "../../src/sys/env";
import { selfUser } from "../../src/sys/host-user";
import { FakeDriver } from "../fakes/driver";
import { FileBackend } from "./daemon-file-backend";
import { socketGuard } from "./daemon-socket-guard";

const [stateFile, controlDir, ...modes] = process.argv.slice(2);
if (!stateFile || !controlDir) {
  process.stderr.write("usage: bun test/support/daemon-entry.ts <backend-state.json> <control-dir> [real-proxy] [secrets] [notify]\n");
  process.exit(64);
}
const realProxy = modes.includes("real-proxy");
// secrets (with real-proxy): the production daemon's secrets bound to hosts (its BoundSecrets: bindings from the store,
// values from sbx's secrets file, sbx's CA, upstreams verified with NODE_EXTRA_CA_CERTS), for its proxies and sessions.
const secrets = modes.includes("secrets");

/** No DNS in tests: names under the reserved `.test` TLD are 127.0.0.1, everything else fails to resolve. */
async function testResolve(host: string): Promise<string[]> {
  if (host.endsWith(".test")) return ["127.0.0.1"];
  throw new Error(`no DNS in tests (${host})`);
}
try {
  const code = await runDaemonForeground({
    env: processEnv(),
    logLevel: "debug",
    // Desktop notifications only when a test asks (it puts a fake notify-send on PATH).
    notifications: modes.includes("notify"),
    components: async (deps) => {
      const bound = secrets ? (await productionComponents(deps, {})).bound : undefined;
      return {
        drivers: { fake: new FakeDriver("fake", deps.exec, deps.paths, selfUser(deps.env), new FileBackend(stateFile)) },
        defaultKind: "fake",
        // real-proxy: the production egress proxy guard, publishing to the daemon's feed (names: see testResolve).
        guards: [
          realProxy
            ? proxyGuard({ resolve: testResolve, publish: deps.events.publish, ...(bound ? { secrets: (ctx) => bound.forSandbox(ctx.sandbox.id) } : {}) })
            : socketGuard("proxy", controlDir),
          socketGuard("bridge", controlDir),
        ],
        ...(bound ? { bound } : {}),
      };
    },
  });
  process.exit(code);
} catch (e) {
  const err = toSbxError(e);
  process.stderr.write(`sbx: ${err.message}\nhint: ${err.hint ?? ""}\n`);
  process.exit(err.exitCode);
}
