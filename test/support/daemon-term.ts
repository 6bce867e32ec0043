// Test-only terminal client: the real client-side relay (raw tty, SIGWINCH, restore) against a daemon socket, for tmux-driven tests.
import { DaemonClient } from "../../src/client/client";
import { parseDetachKeys } from "../../src/core/detach-keys";
import { attachShell, openShell, processTty } from "../../src/client/terminal";

const [socket, mode, target, ...cmd] = process.argv.slice(2);
if (!socket || !mode || !target) {
  process.stderr.write("usage: bun test/support/daemon-term.ts <control.sock> open <sandbox> [cmd…] | attach <session>\n");
  process.exit(64);
}
const client = new DaemonClient(socket);
const tty = processTty();
// SBX_TEST_DETACH_KEYS: the keys that detach (none by default, as before).
const detachKeys = process.env.SBX_TEST_DETACH_KEYS ? parseDetachKeys(process.env.SBX_TEST_DETACH_KEYS) : null;
const code =
  mode === "open"
    ? await openShell(client, { name: target, argv: cmd, cwd: "/tmp", env: { TERM: process.env.TERM }, detachKeys }, tty)
    : await attachShell(client, target, tty, detachKeys);
process.stdout.write(`\r\n[session ended: exit=${code}]\r\n`);
process.exit(code);
