// Test-only daemon entry: the real daemon with the file-backed fake backend and socket guards (never used by sbx itself).
import { toSbxError } from "../../src/core/errors";
import { proxyGuard } from "../../src/daemon/guard-proxy";
import { runDaemonForeground } from "../../src/daemon/main";
import { processEnv } from "../../src/sys/env";
import { FileBackend } from "./daemon-file-backend";
import { socketGuard } from "./daemon-socket-guard";

const [stateFile, controlDir, mode] = [process.argv[2], process.argv[3], process.argv[4]];
if (!stateFile || !controlDir) {
  process.stderr.write("usage: bun test/support/daemon-entry.ts <backend-state.json> <control-dir> [real-proxy]\n");
  process.exit(64);
}
try {
  const code = await runDaemonForeground({
    env: processEnv(),
    logLevel: "debug",
    components: () => ({
      backends: { fake: new FileBackend(stateFile) },
      // real-proxy: the production egress proxy guard (names never resolve: tests use IP literals only).
      guards: [
        mode === "real-proxy"
          ? proxyGuard({ resolve: async (host) => Promise.reject(new Error(`no DNS in tests (${host})`)) })
          : socketGuard("proxy", controlDir),
        socketGuard("bridge", controlDir),
      ],
    }),
  });
  process.exit(code);
} catch (e) {
  const err = toSbxError(e);
  process.stderr.write(`sbx: ${err.message}\nhint: ${err.hint ?? ""}\n`);
  process.exit(err.exitCode);
}
