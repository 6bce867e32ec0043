// The one writer of the answers sbx makes itself on a client connection, whichever way it came in: refusals (a 403
// whose reason phrase, X-Sbx-Blocked header and body say how to allow it; a 400 that says what was wrong; a 502 that
// says what failed), the proxy's own endpoints' answers, and the last answer before a connection closes.
//
// One writer, because two (node:http's on the proxy socket, a hand-written one on the sandbox's port) once differed in
// what a real client printed. Header names are spelled as node:http spells them (Content-Type, X-Sbx-Blocked), which
// is what clients and tests have always seen.
import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import { allowCommand, blockedMessage } from "../core/egress";
import { authorityText, type Denied, type Unreachable } from "./decision";
import { headerSafe, responseHead, type Header } from "./http1";

/** How long a client that never closes its side is given after sbx's last answer on its connection. */
const LAST_ANSWER_GRACE_MS = 5_000;

export interface AnswerOptions {
  /** Ends the connection after it (`Connection: close`). */
  close: boolean;
  /** Default: the status's standard phrase. */
  phrase?: string;
  /** Default: text/plain; charset=utf-8. */
  contentType?: string;
  /** Before Content-Type. */
  headers?: Header[];
  /** A response to HEAD: its Content-Length, no body. */
  head?: boolean;
}

/** An answer sbx makes itself: status line, headers, Content-Length, and the body (framed by its length, always). */
export function answer(status: number, body: string | Buffer, o: AnswerOptions): Buffer {
  const payload = typeof body === "string" ? Buffer.from(body) : body;
  const headers: Header[] = [...(o.headers ?? []), ["Content-Type", o.contentType ?? "text/plain; charset=utf-8"]];
  const head = Buffer.from(responseHead(status, o.phrase ?? STATUS_CODES[status] ?? "", headers, { length: payload.length }, o.close), "latin1");
  return o.head ? head : Buffer.concat([head, payload]);
}

/** A 400: the request was not one the proxy will read or forward; `message` says why (one line, ends in a newline). */
export function badRequest(message: string, close: boolean): Buffer {
  return answer(400, message, { close });
}

/**
 * A refused connection or request: the 403 of a denial (the hint in the reason phrase, which is what npm and `curl -v`
 * print of a refused CONNECT, as well as in X-Sbx-Blocked and the body nobody shows), or the 502 of a failed lookup.
 */
export function refusal(sandboxName: string, v: Denied | Unreachable, close: boolean): Buffer {
  if (v.status === 502) return answer(502, `sbx proxy: ${v.message}\n`, { close });
  const shown = headerSafe(authorityText(v.host, v.port));
  // A rule's refusal names its own fix (a rule to add or remove); a host's, the allow that lets it through.
  const fix = v.fix !== undefined ? (v.fix === null ? null : headerSafe(`${v.fix}${/ --global\b/.test(v.fix) ? "" : ` --sandbox ${sandboxName}`}`)) : undefined;
  return answer(403, blockedMessage(sandboxName, shown, headerSafe(v.detail), v.suggest, fix), {
    close,
    phrase: blockedPhrase(shown, fix !== undefined ? fix : v.suggest === null ? null : allowCommand(headerSafe(v.suggest), sandboxName)),
    headers: [["X-Sbx-Blocked", headerSafe(`${v.reason} ${authorityText(v.host, v.port)}`)]],
  });
}

/** A 502 once the server was to be reached: `message` says what failed. */
export function badGateway(message: string, close: boolean): Buffer {
  return answer(502, `sbx proxy: ${message}\n`, { close });
}

/**
 * Pure: the reason phrase of a refusal, `sbx: <target> is not allowed (<command>)`, printable ASCII only (a reason
 * phrase ends at CR/LF, and a client prints it raw), at most 200 characters.
 */
export function blockedPhrase(targetText: string, command: string | null): string {
  const s = `sbx: ${targetText} is not allowed (${command ?? "it cannot be allowed"})`;
  return s.replace(/[^\x20-\x7e]/g, "?").slice(0, 200);
}

/**
 * Sends the last answer on a connection and closes it: what the client pipelined after it is read and dropped (so the
 * close never resets the answer away), and a client that never closes its side is cut after a grace period.
 */
export function endWith(client: Duplex, bytes: Buffer | string): void {
  client.on("end", () => client.destroy());
  client.resume();
  client.end(bytes);
  const t = setTimeout(() => client.destroy(), LAST_ANSWER_GRACE_MS);
  client.once("close", () => clearTimeout(t));
}

/** Cuts a connection the way a refused connect looks to its client (a reset where the socket can). */
export function cut(client: Duplex): void {
  const s = client as Duplex & { resetAndDestroy?: () => void };
  try {
    if (typeof s.resetAndDestroy === "function") return void s.resetAndDestroy();
  } catch {
    // A socket that cannot reset: a close says the same.
  }
  client.destroy();
}
