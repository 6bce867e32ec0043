// What this machine has for sandboxes to share: its memory and CPUs (the limits' defaults and bounds).
import { availableParallelism, totalmem } from "node:os";
import type { HostCapacity } from "../core/limits";

export function hostCapacity(): HostCapacity {
  return { memoryBytes: totalmem(), cpus: availableParallelism() };
}
