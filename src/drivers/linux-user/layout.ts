// Where a linux-user sandbox's things are on disk (pure), and what every convergence step is handed: the layout, the
// Exec that runs each command, the nft table, the shared temp dirs, and where warnings go.
import { basename, join } from "node:path";
import type { SandboxSpec } from "../../core/spec";
import type { Exec } from "../../sys/exec";
import { guestUser } from "./naming";

/** Root-owned base of everything this backend keeps on disk. */
export const DEFAULT_ROOT = "/var/lib/sbx";

/** The paths under the backend's root: `<root>/homes/<guest>`, `<root>/meta/<id>.json`, `<root>/stage`, `<root>/runtime`, …. */
export class GuestLayout {
  constructor(readonly root: string) {}

  get homesDir(): string {
    return join(this.root, "homes");
  }
  get metaDir(): string {
    return join(this.root, "meta");
  }
  get stageDir(): string {
    return join(this.root, "stage");
  }
  /** `<root>/held/<id>`: a removed guest's uid (or gid) that still owns files; never given to a new guest while it does. */
  get heldDir(): string {
    return join(this.root, "held");
  }
  guest(spec: SandboxSpec): string {
    return guestUser(spec.hostUser.name, spec.id);
  }
  home(guest: string): string {
    return join(this.homesDir, guest);
  }
  /** The guest's clone of the host repo: `<home>/work/<repo dir name>`. */
  workspace(spec: SandboxSpec): string {
    return join(this.home(this.guest(spec)), "work", basename(spec.repo));
  }
  metaFile(id: string): string {
    return join(this.metaDir, `${id}.json`);
  }
  /** Root-owned, world-readable copies of Bun and the shims that guests run (never the host's own files). */
  get runtimeDir(): string {
    return join(this.root, "runtime");
  }
  get runtimeBun(): string {
    return join(this.runtimeDir, "bun");
  }
  get runtimeShims(): string {
    return join(this.runtimeDir, "shims");
  }
  /** The guest's ~/bin (the git/gh shim wrappers), first on its PATH. */
  binDir(guest: string): string {
    return join(this.home(guest), "bin");
  }
  /** Where the guest sees the host repo's objects: `<root>/objects/<id>/objects`, a read-only bind mount. */
  objectsMount(id: string): string {
    return join(this.root, "objects", id, "objects");
  }
  /** What the guest's clone's alternates must say, exactly (ref sync refuses to read a clone whose alternates differ). */
  expectedAlternates(spec: SandboxSpec): string {
    return `${this.objectsMount(spec.id)}\n`;
  }
}

/** What the convergence steps (accounts, uids, firewall, clone, home, inventory) are handed. */
export interface GuestSystem {
  layout: GuestLayout;
  exec: Exec;
  /** nft table name in the inet family. */
  table: string;
  /** The shared dirs every user may write: what a removed guest's uid owns there is swept. */
  tmpDirs: readonly string[];
  /** Loud warnings: the daemon logs them and `sbx doctor` repeats them. */
  warn: (message: string) => void;
}
