// Shared action for verbs that are declared but not built yet: exit 69, never pretend.
import { notAvailableYet } from "../../core/errors";

export function notYet(verb: string): () => Promise<number> {
  return async () => {
    throw notAvailableYet(verb);
  };
}
