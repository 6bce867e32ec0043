// The slip guard of verbs that create their sandbox on first use, given the repo's sandbox names however the caller got
// them (the client library's list, or the zod-free GET of client/names.ts on `sbx run AGENT`'s piped path).
import { SbxError } from "../core/errors";
import { nearNames } from "../core/near-names";

/**
 * Before a command that creates its sandbox on first use: a name that is not one of this repo's sandboxes but one edit
 * from one (`demx` for `demo`) is a slip more often than a new sandbox. At a terminal the person is asked; without one
 * it is refused, naming the near sandbox and `--create`. `create` (the flag) says the new name is meant.
 */
export async function guardNewName(
  ctx: { stdinIsTTY: boolean; ask(question: string): Promise<string | null> },
  names: () => Promise<readonly string[]>,
  req: { name: string; create: boolean; again: (name: string) => string },
): Promise<void> {
  if (req.create) return;
  const near = nearNames(req.name, await names());
  if (near.length === 0) return;
  const them = near.map((n) => `'${n}'`).join(" or ");
  const what = `no sandbox '${req.name}' in this repo, but ${them} ${near.length === 1 ? "is" : "are"} one edit away`;
  if (ctx.stdinIsTTY) {
    const answer = await ctx.ask(`sbx: ${what}. Create a new sandbox '${req.name}'? [y/N] `);
    if (/^y(es)?$/i.test((answer ?? "").trim())) return;
  }
  throw new SbxError("usage", `${what}: not creating '${req.name}'`, {
    hint: `${req.again(near[0]!)} for that one, or ${req.again(`--create ${req.name}`)} to make the new one.`,
  });
}
