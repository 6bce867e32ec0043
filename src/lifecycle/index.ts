// Public API of the lifecycle, workspace and Docker backend modules (for src/index.ts to re-export).
export { SandboxManager, DockerIdentitySchema, type Supervisor, type SandboxInfo, type PruneReport, type CreateRequest, type SessionRequest, type ManagerDeps } from "./manager";
export { openManager, withManager, cliDeps, lineSplitter, type OpenDeps, type OpenManager } from "./open";
export { sandboxEnv, terminalVars } from "./env";
export { acquireLock, lockPath, staleLocks, type Lock } from "./lock";
export { relayTerminal, runPiped, stdinHasData, readStdin, processIo, type RelayIo } from "./relay";
