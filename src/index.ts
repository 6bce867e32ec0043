// sbx as a library: the shapes and pure helpers another program may use (errors, names, paths, the store, the spec). The CLI does not go through this: it parses argv and makes one call to the daemon (src/client).
export { VERSION } from "./version";
export { SbxError, ExitCode, isSbxError, toSbxError, type ErrorCode, type WireError } from "./core/errors";
export { validateSandboxName, NAME_PATTERN } from "./core/names";
export type { Sandbox, SandboxState, BackendKind, AllowEntry, Approval, AuditEntry } from "./core/schemas";
export { readEnv, processEnv, type Env } from "./sys/env";
export { sandboxId } from "./drivers/identity";
export {
  pathsFor,
  repoSandboxDir,
  sandboxDir,
  sandboxSockets,
  MAX_SOCKET_PATH,
  type Paths,
  type SandboxSockets,
} from "./sys/paths";
export { createExec, ExecError, type Exec, type ExecOptions, type ExecResult } from "./sys/exec";
export { Store } from "./store/store";
export type { Backend } from "./drivers/backend";
export type { SandboxSpec, Observed, Phase, HostUser, ShellRequest, CleanupReport } from "./core/spec";
export { probeEngine, classifyEngine, type EngineClass, type EngineKind } from "./drivers/docker/engine";
export { runDoctor, type Check, type CheckStatus } from "./doctor/doctor";
export { findRepoRoot } from "./workspace/repo";
