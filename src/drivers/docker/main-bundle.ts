// The container's long-lived process (shims/sandbox-main.ts) built once into one JS file, so no container start transpiles it.
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, openSync, readFileSync, readSync, closeSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { MAIN_BUNDLE } from "./args";

/** Bun's mark that a file is already built for it (it then skips its transpiler): the bundle's first line. */
const BUN_PRAGMA = "// @bun\n";

/** Pure: how a bundle opens: Bun's mark, then what it was built from. */
export function bundleStamp(sourceHash: string): string {
  return `${BUN_PRAGMA}// sbx sandbox-main ${sourceHash}\n`;
}

/** What a bundle is built from: every .ts of the shims dir (sandbox-main's imports are among them) and this Bun. */
export function shimsSourceHash(shimsDir: string, bunVersion: string = Bun.version): string {
  const h = createHash("sha256").update(`bun ${bunVersion}\n`);
  for (const name of readdirSync(shimsDir).filter((n) => n.endsWith(".ts")).sort()) {
    h.update(`${name}\n`).update(readFileSync(join(shimsDir, name))).update("\n");
  }
  return h.digest("hex");
}

function firstBytes(path: string, n: number): string {
  const fd = openSync(path, "r");
  try {
    const buf = Buffer.alloc(n);
    return buf.subarray(0, readSync(fd, buf, 0, n, 0)).toString("utf8");
  } catch {
    return "";
  } finally {
    closeSync(fd);
  }
}

/**
 * Makes `<outDir>/sandbox-main.js` from `<shimsDir>/sandbox-main.ts` unless the one there was built from the same
 * sources (Bun otherwise transpiles its ten files at each container start: ≈20 ms of the forwarder's readiness here).
 * Written beside and renamed into place, so a container starting meanwhile sees the old file or the new, whole.
 * The dir is the host user's and mounted read-only, as the shims dir is. Undefined when the build fails: the
 * container then runs the .ts as before.
 */
export async function ensureMainBundle(shimsDir: string, outDir: string): Promise<string | undefined> {
  try {
    const stamp = bundleStamp(shimsSourceHash(shimsDir));
    const out = join(outDir, MAIN_BUNDLE);
    if (existsSync(out) && firstBytes(out, stamp.length) === stamp) return outDir;
    const built = await Bun.build({ entrypoints: [join(shimsDir, "sandbox-main.ts")], target: "bun" });
    const js = built.success && built.outputs.length === 1 ? await built.outputs[0]!.text() : undefined;
    if (js === undefined) return undefined;
    mkdirSync(outDir, { recursive: true, mode: 0o755 });
    chmodSync(outDir, 0o755);
    const tmp = `${out}.${process.pid}.tmp`;
    try {
      writeFileSync(tmp, stamp + (js.startsWith(BUN_PRAGMA) ? js.slice(BUN_PRAGMA.length) : js), { mode: 0o644 });
      renameSync(tmp, out);
    } finally {
      rmSync(tmp, { force: true });
    }
    return outDir;
  } catch {
    return undefined;
  }
}
