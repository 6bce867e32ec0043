// The push scan reads a file's name as the name it is, not as git prints it: git quotes a name with a quote, a
// backslash, a control character or a non-ASCII byte ("a\"b\\c\303\266"), and a host secret value with such a character
// hidden in a file name would not match its quoted form. Real bridge, real shim, a host secret with those characters.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { git, makeHarness, refIn, type Harness } from "./harness";

// Shorter than two slices (the scan's slice forms do not cover it): only the whole value, read whole, finds it.
const SECRETS = { DB_PASSWORD: 'Pa"ss\\wörd-2024', SIGNING_KEY: "k3y\twith-tab" };
let h: Harness;
beforeAll(async () => {
  h = await makeHarness({ secrets: SECRETS });
});
afterAll(async () => {
  await h.stop();
});

async function pushed(branch: string, name: string, content: string) {
  await git(h.clone, "checkout", "-q", "-B", branch, await refIn(h.upstreamRepo, "refs/heads/main"));
  await Bun.write(join(h.clone, name), content);
  await git(h.clone, "add", "-A");
  await git(h.clone, "commit", "-q", "-m", "a file");
  return h.shim(["push", "origin", branch]);
}

describe("the push scan reads file names as they are, however git quotes them", () => {
  for (const [secret, value] of Object.entries(SECRETS)) {
    test(`a file named with ${secret} (characters git quotes) is refused`, async () => {
      const branch = `n-${secret.toLowerCase()}`;
      const r = await pushed(branch, `${value}.txt`, "x\n");
      expect(r.stderr).toContain(`the value of the host secret ${secret}`);
      expect(r.code).toBe(77);
      expect(await refIn(h.upstreamRepo, `refs/heads/${branch}`)).toBe("");
    });

    test(`an empty file named with ${secret} (only the diff header names it) is refused`, async () => {
      const branch = `e-${secret.toLowerCase()}`;
      const r = await pushed(branch, `dir/${value}`, "");
      expect(r.stderr).toContain(`the value of the host secret ${secret}`);
      expect(r.code).toBe(77);
      expect(await refIn(h.upstreamRepo, `refs/heads/${branch}`)).toBe("");
    });
  }

  test("a finding's file name is shown with its control characters escaped, and the push refused", async () => {
    const key = "AKIA" + "ZXCVBNMASDFGHJKL";
    const r = await pushed("n-shown", "notes\x1b]0;pwned\x07.txt", `aws=${key}\n`);
    expect(r.code).toBe(77);
    expect(r.stderr).toContain("AWS access key id");
    expect(r.stderr).not.toContain("\x1b]0;");
    expect(r.stderr).toContain("notes\\x1b]0;pwned\\x07.txt");
  });

  test("an ordinary name still pushes", async () => {
    const r = await pushed("n-plain", "plain name ü.txt", "fine\n");
    expect(r.code).toBe(0);
  });
});
