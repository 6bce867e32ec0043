// Positional arguments that say what shell completion offers for their words; `sbx completion` reads them off commander.
import { Argument } from "commander";

/** What completion offers for a word: this repo's sandbox names (asked of the running daemon), the agents' names. */
export type Offer = "sandbox" | "agent";

/** A commander argument whose words completion fills with `offers` (of a variadic one, only its first word when `firstOnly`). */
export class OfferingArgument extends Argument {
  constructor(
    spec: string,
    description: string,
    readonly offers: readonly Offer[],
    readonly firstOnly = false,
  ) {
    super(spec, description);
  }
}

/** An argument that names existing sandboxes (`<name>`, `[names...]`): completed with this repo's sandbox names. */
export function sandboxArgument(spec: string, description: string): OfferingArgument {
  return new OfferingArgument(spec, description, ["sandbox"]);
}
