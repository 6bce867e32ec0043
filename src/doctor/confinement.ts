// `sbx doctor` on Linux: what the kernel offers to confine a user-account guest (Landlock's ABI, seccomp's filter
// mode), and so what sbx applies to its guests (shims/confine.ts), said plainly.
import { existsSync } from "node:fs";
import type { Check } from "./check";
import { release } from "node:os";
import { procMountsApart } from "../sys/kernel";
import { landlockAbi } from "../sys/landlock";

export { landlockAbi };

/**
 * Pure: the check from what the kernel offers, and what sbx then applies to every user-account guest's command.
 * `privateProc`: whether each command can get a /proc of its own (Linux ≥ 5.8), so a guest lists only its processes.
 */
export function confinementCheck(abi: number | null, seccomp: boolean, privateProc = true): Check {
  const landlock = abi === null ? "no Landlock" : `Landlock ABI ${abi}${abi >= 6 ? " (can scope abstract unix sockets and signals)" : " (no socket or signal scoping: needs ABI 6, Linux 6.12)"}`;
  const filter = seccomp ? "seccomp filters available" : "no seccomp filters";
  const scoped = abi !== null && abi >= 6;
  if (!seccomp) {
    return {
      name: "guest confinement",
      status: "fail",
      detail: `${landlock}; ${filter}: --backend user guests cannot be given their seccomp filter, so their commands refuse to start`,
      fix: "Use Docker sandboxes (the default on Linux), or a kernel with seccomp filters",
    };
  }
  const proc = privateProc
    ? "; each command sees only the guest's own processes (a /proc of its own)"
    : "; this kernel (before 5.8) cannot give a command a /proc of its own, so a guest can list every process's argv on this machine";
  return {
    name: "guest confinement",
    status: scoped && privateProc ? "ok" : "warn",
    detail:
      `${landlock}; ${filter}. --backend user guests run with no_new_privs, no capabilities and a seccomp filter (no namespaces, ` +
      `mounts, keyring, bpf, io_uring)${scoped ? ", and Landlock keeps abstract unix sockets and signals inside each guest and its files to its home, temp dirs and the read-only system" : "; without Landlock's scopes a guest can still connect to abstract unix sockets of this machine"}${proc}`,
    ...(scoped && privateProc ? {} : { fix: "Where that matters, use Docker sandboxes (the default on Linux): their namespaces have none of the host's abstract sockets or processes" }),
  };
}

/** The check on this machine (Linux). */
export function checkConfinement(): Check {
  return confinementCheck(landlockAbi(), existsSync("/proc/sys/kernel/seccomp/actions_avail"), procMountsApart(release()));
}
