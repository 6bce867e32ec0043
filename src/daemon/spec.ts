// The spec of a row of a kind with no driver in this daemon (a test's fake backend): the drivers build every real one.
import type { HostUser, SandboxOptions, SandboxSpec } from "../core/spec";
import type { Sandbox } from "../core/schemas";
import type { Env } from "../sys/env";
import { DEFAULT_FORWARDER_PORT } from "../core/egress";
import { sandboxId, sandboxSpec } from "../drivers/identity";
import { sandboxDir, type Paths } from "../sys/paths";
import { selfUser } from "../sys/host-user";

export type SpecBuilder = (sandbox: Sandbox) => SandboxSpec;

/** Pure: the spec of a stored sandbox: a test backend's, or a guest's with the loopback port its identity holds. */
export function defaultSpecBuilder(env: Env, paths: Paths, hostUser: HostUser = selfUser(env)): SpecBuilder {
  return (sb) => {
    const id = sandboxId(paths.sandboxRoot, sb.repo, sb.name);
    const port = sb.identity.proxyPort;
    const options: SandboxOptions = typeof port === "number" ? { driver: "user", proxyPort: port } : { driver: "fake" };
    return sandboxSpec(paths, {
      id,
      name: sb.name,
      repo: sb.repo,
      dir: sandboxDir(paths, sb.repo, sb.name),
      hostUser,
      place: { proxyPort: DEFAULT_FORWARDER_PORT },
      options,
    });
  };
}
