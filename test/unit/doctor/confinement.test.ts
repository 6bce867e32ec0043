// sbx doctor says what the kernel offers to confine a user-account guest, and what sbx applies today.
import { describe, expect, test } from "bun:test";
import { confinementCheck, landlockAbi } from "../../../src/doctor/confinement";

describe("guest confinement check", () => {
  test("names the Landlock ABI and whether it can scope sockets and signals, and says what sbx does not apply yet", () => {
    const c = confinementCheck(7, true);
    expect(c.status).toBe("warn");
    expect(c.detail).toStartWith("Landlock ABI 7 (can scope abstract unix sockets and signals); seccomp filters available.");
    expect(c.detail).toContain("sbx installs no seccomp filter or Landlock rules for them yet");
    expect(confinementCheck(4, true).detail).toContain("Landlock ABI 4 (no socket or signal scoping: needs ABI 6, Linux 6.12)");
    expect(confinementCheck(null, false).detail).toStartWith("no Landlock; no seccomp filters.");
  });

  test("this machine's ABI is read from the kernel (a positive version, or null)", () => {
    const abi = landlockAbi();
    expect(abi === null || (Number.isInteger(abi) && abi > 0)).toBe(true);
  });
});
