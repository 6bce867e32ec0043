// Cleanup, prune and list are scoped to one state root (label sbx.root): another user's or root's containers and volumes on a shared engine are never touched.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { rootLabel } from "../../../src/drivers/docker/args";
import { DockerBackend } from "../../../src/drivers/docker/docker";
import { createExec } from "../../../src/sys/exec";
import { BASE_IMAGE, canRun, skipReason } from "./fixture";

const tag = Math.random().toString(36).slice(2, 8);
const mine = mkdtempSync(join(tmpdir(), "sbx-scope-mine-"));
const theirs = mkdtempSync(join(tmpdir(), "sbx-scope-theirs-"));
const made: { containers: string[]; volumes: string[] } = { containers: [], volumes: [] };

function docker(args: string[]): { code: number; stdout: string } {
  const r = Bun.spawnSync(["docker", ...args], { stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode ?? -1, stdout: r.stdout.toString().trim() };
}

function labelled(sandbox: string, root: string | null, dir: string): string[] {
  return [
    "--label", `sbx.sandbox=${sandbox}`, "--label", `sbx.name=${sandbox}`, "--label", `sbx.dir=${dir}`, "--label", "sbx.repo=/nowhere",
    "--label", "sbx.test=1", ...(root === null ? [] : ["--label", `sbx.root=${root}`]),
  ];
}

function container(name: string, sandbox: string, root: string | null, dir: string): void {
  const r = docker(["create", "--name", name, "--network", "none", ...labelled(sandbox, root, dir), BASE_IMAGE, "true"]);
  if (r.code !== 0) throw new Error(`docker create ${name} failed`);
  made.containers.push(name);
}

function volume(name: string, sandbox: string, root: string | null, dir: string): void {
  if (docker(["volume", "create", ...labelled(sandbox, root, dir), name]).code !== 0) throw new Error(`docker volume create ${name} failed`);
  made.volumes.push(name);
}

const exists = (kind: "container" | "volume", name: string) => docker([kind, "inspect", name]).code === 0;

describe.skipIf(!canRun)(`cleanup scope (Docker)${skipReason ? ` (skipped: ${skipReason})` : ""}`, () => {
  afterAll(() => {
    for (const c of made.containers) docker(["rm", "--force", c]);
    for (const v of made.volumes) docker(["volume", "rm", "--force", v]);
    rmSync(mine, { recursive: true, force: true });
    rmSync(theirs, { recursive: true, force: true });
  });

  test("cleanup(keep = ∅) and pruneOrphans remove this root's leftovers only", async () => {
    const backend = new DockerBackend(createExec({ PATH: process.env.PATH ?? "/usr/bin:/bin" }), { sandboxRoot: mine });
    // Another state root's sandbox, an sbx container from before root labels, and this root's leftover (the control).
    container(`sbxt-theirs-${tag}`, `theirs${tag}`, rootLabel(theirs), join(theirs, "gone"));
    volume(`sbxt-theirs-v-${tag}`, `theirs${tag}`, rootLabel(theirs), join(theirs, "gone"));
    container(`sbxt-legacy-${tag}`, `legacy${tag}`, null, join(theirs, "gone"));
    container(`sbxt-mine-${tag}`, `mine${tag}`, rootLabel(mine), join(mine, "gone"));
    volume(`sbxt-mine-v-${tag}`, `mine${tag}`, rootLabel(mine), join(mine, "gone"));

    const listed = (await backend.list()).map((o) => o.id);
    expect(listed).toContain(`mine${tag}`);
    expect(listed).not.toContain(`theirs${tag}`);
    expect(listed).not.toContain(`legacy${tag}`);

    const pruned = await backend.pruneOrphans();
    expect(pruned.removed.join("\n")).not.toContain(`theirs${tag}`);
    const report = await backend.cleanup(new Set());
    expect([...pruned.removed, ...report.removed].join("\n")).toContain(`mine${tag}`);
    expect(report.removed.join("\n")).not.toContain(`theirs${tag}`);
    expect(report.removed.join("\n")).not.toContain(`legacy${tag}`);

    expect(exists("container", `sbxt-mine-${tag}`)).toBe(false);
    expect(exists("volume", `sbxt-mine-v-${tag}`)).toBe(false);
    expect(exists("container", `sbxt-theirs-${tag}`)).toBe(true);
    expect(exists("volume", `sbxt-theirs-v-${tag}`)).toBe(true);
    expect(exists("container", `sbxt-legacy-${tag}`)).toBe(true);
  }, 60_000);
});
