// macOS's `security` as it keeps generic passwords in a keychain, for the keychain vault's tests: items by service and
// account; `-i` reads commands on stdin with its own quoting; -U updates; 44 for an item not found.
import { FakeExec } from "./exec";

/** `security` as macOS's keeps generic passwords: by service and account, -U updates, 44 when an item is not there. */
export function fakeSecurity(): { exec: FakeExec; items: Map<string, string> } {
  const items = new Map<string, string>();
  const key = (s: string, a: string) => `${s}\0${a}`;
  const arg = (argv: readonly string[], flag: string) => argv[argv.indexOf(flag) + 1]!;
  const exec = new FakeExec()
    .always((a) => a[0] === "security" && a[1] === "find-generic-password", (a) => {
      const v = items.get(key(arg(a, "-s"), arg(a, "-a")));
      return v === undefined ? { exitCode: 44, stderr: "security: SecKeychainSearchCopyNext: The specified item could not be found in the keychain.\n" } : { stdout: `${v}\n` };
    })
    .always((a) => a[0] === "security" && a[1] === "delete-generic-password", (a) => (items.delete(key(arg(a, "-s"), arg(a, "-a"))) ? {} : { exitCode: 44 }))
    .always(["security", "-i"], (_a, opts) => {
      for (const line of String(opts.stdin).split("\n").filter(Boolean)) {
        const words = line.match(/"[^"]*"|\S+/g)!;
        if (words[0] !== "add-generic-password") return { stderr: `Unknown command "${words[0]}"\n` };
        const unq = (w: string) => w.replace(/^"(.*)"$/, "$1");
        const k = key(unq(arg(words, "-s")), arg(words, "-a"));
        if (items.has(k) && !words.includes("-U")) return { stderr: "security: SecKeychainItemCreateFromContent: The specified item already exists in the keychain.\n" };
        items.set(k, Buffer.from(arg(words, "-X"), "hex").toString("utf8"));
      }
      return {};
    });
  return { exec, items };
}
