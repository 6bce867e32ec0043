// A command loads only the verb its first word names (cli/verb-loaders.ts): the table by name must be the whole table,
// and a command line must parse, help and fail exactly as it does with every verb loaded.
import { describe, expect, test } from "bun:test";
import { VERB_ALIASES, VERB_LOADERS, verbsFor } from "../../../src/cli/verb-loaders";
import { verbs } from "../../../src/cli/verbs";
import { runCli } from "../../support/cli";

describe("verb-loaders: one verb loaded says what all of them loaded say", () => {
  test("every verb of the table has its loader, which gives that very verb; no loader names a verb the table lacks", async () => {
    expect(Object.keys(VERB_LOADERS).sort()).toEqual(verbs.map((v) => v.name).sort());
    for (const v of verbs) expect(await VERB_LOADERS[v.name]!()).toBe(v);
  });

  test("every alias a verb answers to is known by name, and only those", () => {
    const aliases = Object.fromEntries(verbs.flatMap((v) => (v.aliases ?? []).map((a) => [a, v.name])));
    expect(VERB_ALIASES).toEqual(aliases);
  });

  test("a verb's word (or alias) loads that verb alone, --version none; help, a flag first, an unknown word and completion the table", async () => {
    expect((await verbsFor(["run", "claude"])).map((v) => v.name)).toEqual(["run"]);
    expect((await verbsFor(["ls"])).map((v) => v.name)).toEqual(["list"]);
    expect(await verbsFor(["--version"])).toEqual([]);
    expect(await verbsFor(["-V"])).toEqual([]);
    for (const argv of [[], ["--help"], ["-V", "run"], ["help", "run"], ["lsit"], ["completion", "bash"], ["constructor"], ["__proto__"]]) {
      expect(await verbsFor(argv)).toBe(verbs);
    }
  });

  test("--version alone: the same output either way", async () => {
    for (const argv of [["--version"], ["-V"]]) expect(await runCli(argv)).toEqual(await runCli(argv, { verbs }));
  });

  test("each verb's help and a bad option: the same output and exit code either way", async () => {
    for (const v of verbs) {
      for (const rest of [["--help"], ["--sbx-no-such-option"]]) {
        const argv = [v.name, ...rest];
        const alone = await runCli(argv);
        const all = await runCli(argv, { verbs });
        expect({ argv, ...alone }).toEqual({ argv, ...all });
      }
    }
  });
});
