// A sandbox's name map for the transparent path: which loopback address its DNS stub gave out for which name, kept in the store for as long as the sandbox lives.
import { isNameAddress, MAX_NAMES, nameAddressAt } from "../core/transparent";
import type { TransparentNames } from "../core/egress-events";
import type { Store } from "../store/store";

export class NameMap implements TransparentNames {
  private readonly byName = new Map<string, string>();
  private readonly byAddress = new Map<string, string>();

  constructor(
    private readonly store: Store,
    private readonly sandboxId: number,
  ) {}

  /** The address for a (normalised) name, given out now when it has none; null once MAX_NAMES are out. */
  addressOf(name: string): string | null {
    const had = this.byName.get(name);
    if (had !== undefined) return had;
    const address = this.store.nameAddress(this.sandboxId, name, MAX_NAMES, nameAddressAt);
    if (address !== null) this.remember(name, address);
    return address;
  }

  /** The name an address stands for, or null (an address outside the range, or never given out). */
  nameOf(address: string): string | null {
    if (!isNameAddress(address)) return null;
    const had = this.byAddress.get(address);
    if (had !== undefined) return had;
    const name = this.store.nameOfAddress(this.sandboxId, address);
    if (name !== null) this.remember(name, address);
    return name;
  }

  private remember(name: string, address: string): void {
    this.byName.set(name, address);
    this.byAddress.set(address, name);
  }
}
