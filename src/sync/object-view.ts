// A view of a git objects dir: a dir of symlinks to its pack dir and its 256 loose dirs, and nothing else.
//
// git follows alternates recursively: a repo that borrows `<repo>/.git/objects` also reads every dir that dir's own
// `info/alternates` lists, and the host repo's lists every sandbox's store and the retired store. A view has no `info`
// of its own, so git reads the packs and loose objects it links to and stops there (measured with git 2.39: an object of
// a store the host's alternates list is not found through a view of the host's objects, and is through the dir itself).
// Nor does it link the commit-graph: the host's lists commits of every store, and git takes a commit from the graph
// without reading the object. Whoever borrows through views sees exactly the dirs it names.
import { lstatSync, mkdirSync, readlinkSync, renameSync, rmSync, symlinkSync } from "node:fs";
import { join } from "node:path";

/** What a view links: the pack dir and the loose object dirs `00` … `ff`. */
export const VIEW_ENTRIES: readonly string[] = ["pack", ...Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"))];

/** Pure: each entry of a view of `objects` and the link it holds (`objects` as given: absolute, or relative to the view). */
export function viewLinks(objects: string): Array<[name: string, target: string]> {
  return VIEW_ENTRIES.map((e) => [e, `${objects}/${e}`]);
}

/** Whether `dir` is a whole view of `objects`: every link there and right, and no `info` (no alternates, no graph). */
export function isViewOf(dir: string, objects: string): boolean {
  try {
    if (lstatSync(join(dir, "info"), { throwIfNoEntry: false })) return false;
    return viewLinks(objects).every(([name, target]) => readlinkSync(join(dir, name)) === target);
  } catch {
    return false;
  }
}

/**
 * Makes `dir` a view of `objects` (in process: for dirs of the daemon's own, such as a gate's), unless it is one
 * already. Made whole beside its place and renamed into it, so a reader never sees half a view.
 */
export function ensureView(dir: string, objects: string): void {
  if (isViewOf(dir, objects)) return;
  const part = `${dir}.part-${process.pid}`;
  rmSync(part, { recursive: true, force: true });
  mkdirSync(part, { recursive: true, mode: 0o700 });
  for (const [name, target] of viewLinks(objects)) symlinkSync(target, join(part, name));
  rmSync(dir, { recursive: true, force: true });
  renameSync(part, dir);
}
