// sbx doctor says what the kernel offers to confine a user-account guest, and what sbx applies today.
import { describe, expect, test } from "bun:test";
import { confinementCheck, landlockAbi } from "../../../src/doctor/confinement";

describe("guest confinement check", () => {
  test("names the Landlock ABI and what guests get: ok with ABI 6, a warning below it, a failure without seccomp", () => {
    const c = confinementCheck(7, true);
    expect(c.status).toBe("ok");
    expect(c.detail).toStartWith("Landlock ABI 7 (can scope abstract unix sockets and signals); seccomp filters available.");
    expect(c.detail).toContain("and Landlock keeps abstract unix sockets and signals inside each guest");
    const old = confinementCheck(4, true);
    expect(old.status).toBe("warn");
    expect(old.detail).toContain("Landlock ABI 4 (no socket or signal scoping: needs ABI 6, Linux 6.12)");
    expect(old.detail).toContain("a guest can still connect to abstract unix sockets");
    expect(c.detail).toContain("each command sees only the guest's own processes");
    // A kernel that cannot give each command its own /proc: a warning that says what a guest can see.
    const shared = confinementCheck(7, true, false);
    expect(shared.status).toBe("warn");
    expect(shared.detail).toContain("a guest can list every process's argv on this machine");
    const none = confinementCheck(null, false);
    expect(none.status).toBe("fail");
    expect(none.detail).toStartWith("no Landlock; no seccomp filters: ");
  });

  test("this machine's ABI is read from the kernel (a positive version, or null)", () => {
    const abi = landlockAbi();
    expect(abi === null || (Number.isInteger(abi) && abi > 0)).toBe(true);
  });
});
