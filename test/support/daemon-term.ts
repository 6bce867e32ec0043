// Test-only terminal client: the real client-side relay (raw tty, SIGWINCH, restore) against a daemon socket, for tmux-driven tests.
import { DaemonClient } from "../../src/client/client";
import { attachShell, openShell, processTty } from "../../src/client/terminal";

const [socket, mode, target, ...cmd] = process.argv.slice(2);
if (!socket || !mode || !target) {
  process.stderr.write("usage: bun test/support/daemon-term.ts <control.sock> open <sandbox> [cmd…] | attach <session>\n");
  process.exit(64);
}
const client = new DaemonClient(socket);
const tty = processTty();
const code =
  mode === "open"
    ? await openShell(client, { name: target, argv: cmd, cwd: "/tmp", env: { TERM: process.env.TERM } }, tty)
    : await attachShell(client, target, tty);
process.stdout.write(`\r\n[session ended: exit=${code}]\r\n`);
process.exit(code);
