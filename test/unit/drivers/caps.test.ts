// What each kind offers is said twice, once per side of the control socket: by its driver (DriverCaps, which the
// daemon's guards and the service ask) and by core/backend-kind.ts (which the CLI reads, loading no driver). They agree.
import { describe, expect, test } from "bun:test";
import { KINDS } from "../../../src/core/backend-kind";
import type { BackendKind } from "../../../src/core/schemas";
import { DOCKER_CAPS } from "../../../src/drivers/docker/driver";
import type { DriverCaps } from "../../../src/drivers/driver";
import { LINUX_USER_REACH } from "../../../src/drivers/linux-user/backend";
import { MACOS_REACH } from "../../../src/drivers/macos/backend";
import { userAccountCaps } from "../../../src/drivers/user-account";

const DRIVERS: Partial<Record<BackendKind, DriverCaps>> = {
  docker: DOCKER_CAPS,
  "linux-user": userAccountCaps(LINUX_USER_REACH),
  macos: userAccountCaps(MACOS_REACH),
};

describe("a kind's capabilities, as its driver and the CLI's table say them", () => {
  for (const [kind, caps] of Object.entries(DRIVERS) as [BackendKind, DriverCaps][]) {
    test(`${kind}: the CLI stages a clone exactly when the driver lets it, and offers --port exactly when it forwards ports`, () => {
      expect(KINDS[kind].stagesClone).toBe(caps.stagesClone);
      expect(KINDS[kind].options.includes("port")).toBe(caps.portForwards);
    });
  }

  test("an exec agent and port forwards come together (forwards are dial sessions of the agent); a host-side port means no forwarder inside", () => {
    for (const caps of Object.values(DRIVERS)) {
      if (caps.portForwards) expect(caps.execAgent).toBe(true);
      if (caps.proxyPort === "loopback") expect(caps.transparent).not.toBe("listeners");
    }
  });
});
