// The DNS stub's wire format and answers, as pure functions: read one query, answer it from the sandbox's own name map; nothing is ever forwarded.
//
// A query is answered by what it asks, never by what a resolver says: every valid name gets the sandbox-local
// address that stands for it (its transparent connections are carried to the egress proxy under that name), other
// types get an empty NOERROR answer, and what is not one plain query is refused with FORMERR or NOTIMP. Bytes come
// from the sandbox: every length is checked against the message, names may not use compression (a query has no
// reason to), and nothing here loops on the input. Dependency-free: the in-sandbox forwarder serves it (Docker), and
// the daemon does for user-account guests.

export const DNS_TYPE_A = 1;
export const DNS_TYPE_AAAA = 28;
export const DNS_TYPE_ANY = 255;
const CLASS_IN = 1;

export const RCODE = { noError: 0, formErr: 1, servFail: 2, nxDomain: 3, notImp: 4, refused: 5 } as const;

/** How long an answer may be cached: the map lives as long as the sandbox, so an answer never goes stale. */
export const ANSWER_TTL = 3600;

/** The longest message read (a query is a few dozen bytes; TCP frames say up to 64 KiB). */
export const MAX_QUERY_BYTES = 4096;

export interface DnsQuestion {
  /** The name as asked, lower case, no trailing dot (labels of any bytes, as DNS allows: `printable` is separate). */
  name: string;
  type: number;
  qclass: number;
}

export type ParsedQuery =
  | { ok: true; id: number; rd: boolean; question: DnsQuestion; /** The question section as sent, echoed back. */ raw: Uint8Array }
  /** Not one plain query: answer with this code (when the header was readable), or drop (no header). */
  | { ok: false; id: number | null; rcode: number; why: string };

/** Pure: reads a DNS query message (RFC 1035 §4.1): one question, opcode QUERY, no compression in the name. */
export function parseQuery(msg: Uint8Array): ParsedQuery {
  if (msg.length < 12) return { ok: false, id: null, rcode: RCODE.formErr, why: "shorter than a DNS header" };
  if (msg.length > MAX_QUERY_BYTES) return { ok: false, id: null, rcode: RCODE.formErr, why: "longer than a query" };
  const id = (msg[0]! << 8) | msg[1]!;
  const flags = (msg[2]! << 8) | msg[3]!;
  if (flags & 0x8000) return { ok: false, id: null, rcode: RCODE.formErr, why: "a response, not a query" }; // never answer answers
  const opcode = (flags >> 11) & 0xf;
  if (opcode !== 0) return { ok: false, id, rcode: RCODE.notImp, why: `opcode ${opcode}` };
  const qd = (msg[4]! << 8) | msg[5]!;
  if (qd !== 1) return { ok: false, id, rcode: RCODE.formErr, why: `${qd} questions` };
  const labels: string[] = [];
  let at = 12;
  let nameBytes = 0;
  for (;;) {
    if (at >= msg.length) return { ok: false, id, rcode: RCODE.formErr, why: "the name runs past the message" };
    const len = msg[at]!;
    if (len === 0) {
      at++;
      break;
    }
    if (len & 0xc0) return { ok: false, id, rcode: RCODE.formErr, why: "a compressed or extended label in a question" };
    nameBytes += len + 1;
    if (nameBytes > 255) return { ok: false, id, rcode: RCODE.formErr, why: "a name longer than 255 bytes" };
    if (at + 1 + len > msg.length) return { ok: false, id, rcode: RCODE.formErr, why: "a label runs past the message" };
    let label = "";
    for (let i = at + 1; i < at + 1 + len; i++) label += String.fromCharCode(msg[i]!);
    labels.push(label.toLowerCase());
    at += 1 + len;
  }
  if (at + 4 > msg.length) return { ok: false, id, rcode: RCODE.formErr, why: "the question has no type and class" };
  const type = (msg[at]! << 8) | msg[at + 1]!;
  const qclass = (msg[at + 2]! << 8) | msg[at + 3]!;
  at += 4;
  return { ok: true, id, rd: (flags & 0x0100) !== 0, question: { name: labels.join("."), type, qclass }, raw: msg.slice(12, at) };
}

export type Answer =
  /** An A record with this IPv4 address. */
  | { kind: "address"; address: string }
  /** The name exists, with no record of the type asked (AAAA, MX, TXT, …). */
  | { kind: "empty" }
  | { kind: "error"; rcode: number };

/** Pure: the response to a parsed query (header flags: QR, AA, RD echoed, RA), the question echoed back. */
export function buildResponse(q: Extract<ParsedQuery, { ok: true }>, answer: Answer): Uint8Array {
  const rcode = answer.kind === "error" ? answer.rcode : RCODE.noError;
  const record = answer.kind === "address" ? aRecord(answer.address) : null;
  const out = new Uint8Array(12 + q.raw.length + (record?.length ?? 0));
  out[0] = q.id >> 8;
  out[1] = q.id & 0xff;
  out[2] = 0x84 | (q.rd ? 0x01 : 0); // QR, AA, RD
  out[3] = 0x80 | rcode; // RA
  out[5] = 1; // QDCOUNT
  out[7] = record ? 1 : 0; // ANCOUNT
  out.set(q.raw, 12);
  if (record) out.set(record, 12 + q.raw.length);
  return out;
}

/** Pure: the response to a message that is not one plain query (null: drop it, there is no one to answer). */
export function errorResponse(p: Extract<ParsedQuery, { ok: false }>, msg: Uint8Array): Uint8Array | null {
  if (p.id === null) return null;
  const out = new Uint8Array(12);
  out[0] = p.id >> 8;
  out[1] = p.id & 0xff;
  out[2] = 0x80 | (msg[2]! & 0x79); // QR, the opcode and RD as asked
  out[3] = 0x80 | p.rcode;
  return out;
}

function aRecord(address: string): Uint8Array {
  const parts = address.split(".").map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) throw new Error(`not an IPv4 address: ${address}`);
  // name: a pointer to the question's name (offset 12); type A, class IN, TTL, 4 bytes of address
  return new Uint8Array([0xc0, 0x0c, 0, DNS_TYPE_A, 0, CLASS_IN, ANSWER_TTL >>> 24, (ANSWER_TTL >> 16) & 0xff, (ANSWER_TTL >> 8) & 0xff, ANSWER_TTL & 0xff, 0, 4, ...parts]);
}

/**
 * Pure: what the stub answers to a parsed question, given the sandbox's map: `addressOf` gives (or makes) the address
 * that stands for a name, null when the map is full, undefined when the name is not one that may have an address (an
 * IP literal, a reverse zone, not a host name). `localhost` is the sandbox's own loopback.
 */
export function answerFor(question: DnsQuestion, addressOf: (name: string) => string | null | undefined): Answer {
  if (question.qclass !== CLASS_IN && question.qclass !== 255) return { kind: "error", rcode: RCODE.refused };
  const name = question.name;
  if (!plausibleName(name)) return { kind: "error", rcode: RCODE.nxDomain };
  const local = name === "localhost" || name.endsWith(".localhost");
  if (!asksAddress(question)) return { kind: "empty" };
  if (local) return { kind: "address", address: "127.0.0.1" };
  const address = addressOf(name);
  if (address === undefined) return { kind: "error", rcode: RCODE.nxDomain };
  return address === null ? { kind: "error", rcode: RCODE.servFail } : { kind: "address", address };
}

/** Pure: whether a question asks for an IPv4 address (A or ANY), the one answer the map gives. */
export function asksAddress(q: DnsQuestion): boolean {
  return q.type === DNS_TYPE_A || q.type === DNS_TYPE_ANY;
}

/**
 * Pure: a first sieve of names: printable ASCII, not a reverse-lookup zone, not `.invalid`, not an IPv4 literal. The host decides
 * the rest (core/dns.ts `askableName`) before it gives an address out.
 */
export function plausibleName(name: string): boolean {
  if (name.length === 0 || name.length > 253 || !/^[\x21-\x7e]+$/.test(name)) return false;
  if (/(^|\.)(in-addr|ip6)\.arpa$/.test(name)) return false;
  // RFC 6761: `.invalid` never resolves, for every resolver; a test that probes with it must get NXDOMAIN.
  if (/(^|\.)invalid$/.test(name)) return false;
  return !/^[0-9.]+$/.test(name);
}

/** Pure: the whole exchange for one message: the bytes to send back, or null to send nothing. */
export function respond(msg: Uint8Array, addressOf: (name: string) => string | null | undefined): Uint8Array | null {
  const q = parseQuery(msg);
  if (!q.ok) return errorResponse(q, msg);
  return buildResponse(q, answerFor(q.question, addressOf));
}
