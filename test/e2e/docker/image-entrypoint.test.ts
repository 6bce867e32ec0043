// An image whose Dockerfile sets its own ENTRYPOINT and CMD still runs sbx's process: the sandbox starts, its commands
// run, and its egress goes through the forwarder. Without `--entrypoint`, docker would hand sandbox-main to the
// image's entrypoint as arguments and the sandbox would never come up.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { acquireFixture, canRun, releaseFixture, skipReason, type Fixture } from "./fixture";

describe.skipIf(!canRun)(`an image's own ENTRYPOINT (Docker)${canRun ? "" : ` — skipped: ${skipReason}`}`, () => {
  let f: Fixture;
  beforeAll(() => {
    f = acquireFixture();
  }, 60_000);
  afterAll(() => {
    f?.sbx(["rm", "--force", "entry"]);
    releaseFixture();
  }, 60_000);

  test("a Dockerfile with ENTRYPOINT [\"/bin/false\"] and a CMD: the sandbox starts and runs commands", () => {
    const dockerfile = join(f.repo, "Dockerfile");
    const good = readFileSync(dockerfile, "utf8");
    writeFileSync(dockerfile, `${good}\nENTRYPOINT ["/bin/false"]\nCMD ["never"]\n`);
    try {
      const r = f.sbx(["create", "entry"]);
      expect({ code: r.code, err: r.code === 0 ? "" : r.stderr }).toEqual({ code: 0, err: "" });
      const ctr = f.docker(["ps", "-q", "--filter", "label=sbx.name=entry", "--filter", `label=sbx.repo=${f.repo}`]).stdout.trim();
      expect(f.docker(["inspect", "--format", "{{json .Config.Entrypoint}}", ctr]).stdout.trim()).toBe('["/bin/sh"]');
      const run = f.sbx(["run", "entry", "--", "echo", "inside"]);
      expect({ code: run.code, out: run.stdout }).toEqual({ code: 0, out: "inside\n" });
    } finally {
      writeFileSync(dockerfile, good);
    }
  }, 180_000);
});
