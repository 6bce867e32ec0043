// Test-only: the SbxError a call throws (anything else is rethrown; no throw at all fails the test).
import { SbxError } from "../../src/core/errors";

export function refusal(f: () => unknown): SbxError {
  try {
    f();
  } catch (e) {
    if (e instanceof SbxError) return e;
    throw e;
  }
  throw new Error("expected a refusal");
}
