// Pure: the tokens one model call used, read from the provider's own usage fields as the answer passes (JSON or
// server-sent events, never held whole), and what is counted when the provider said nothing or the answer was cut.
import { JsonPathReader } from "./json-paths";

/** The LLM routes, by the wire format their answers have. */
export type UsageFamily = "anthropic" | "openai" | "google";

/** What the provider reported, field by field (the last value read of each wins: streamed counts are cumulative). */
export interface RawUsage {
  input?: number;
  output?: number;
  cacheRead?: number;
  cacheWrite?: number;
  /** Gemini's thinking tokens (billed as output, not in its candidates count). */
  thoughts?: number;
  /** Gemini's tool-use prompt tokens (billed as input, not in its prompt count). */
  toolPrompt?: number;
  model?: string;
}

type Field = keyof RawUsage;

/**
 * Where each provider puts its counts, as exact paths from the root of a JSON answer or of one event's data.
 * Anthropic: the message's `usage`, streamed as `message_start` (`message.usage`) then `message_delta` (`usage`, counts
 * so far). OpenAI Chat Completions: `usage` (streamed in the last chunk, only when asked with `stream_options`).
 * OpenAI Responses and ChatGPT's Codex backend: `usage`, streamed in `response.completed` (`response.usage`). Gemini:
 * `usageMetadata` in each chunk (counts so far), an array of them when streamed without SSE, and Code Assist wraps it
 * in `response`.
 */
const USAGE_PATHS: Record<string, Field> = {};
for (const root of ["", "message.", "response.", "[].", "[].response."]) {
  Object.assign(USAGE_PATHS, {
    [`${root}usage.input_tokens`]: "input",
    [`${root}usage.output_tokens`]: "output",
    [`${root}usage.cache_read_input_tokens`]: "cacheRead",
    [`${root}usage.cache_creation_input_tokens`]: "cacheWrite",
    [`${root}usage.prompt_tokens`]: "input",
    [`${root}usage.completion_tokens`]: "output",
    [`${root}usage.prompt_tokens_details.cached_tokens`]: "cacheRead",
    [`${root}usage.input_tokens_details.cached_tokens`]: "cacheRead",
    [`${root}usageMetadata.promptTokenCount`]: "input",
    [`${root}usageMetadata.candidatesTokenCount`]: "output",
    [`${root}usageMetadata.cachedContentTokenCount`]: "cacheRead",
    [`${root}usageMetadata.thoughtsTokenCount`]: "thoughts",
    [`${root}usageMetadata.toolUsePromptTokenCount`]: "toolPrompt",
    [`${root}model`]: "model",
    [`${root}modelVersion`]: "model",
  });
}
const WANTED = new Set(Object.keys(USAGE_PATHS));
/** A count no provider reports for one call: anything larger is taken as garbage, not as a count. */
const COUNT_MAX = 1e10;

/** Moves what a reader captured into `into` (last wins), keeping only sane counts and printable model names. */
function take(r: JsonPathReader, into: RawUsage): void {
  for (const [path, v] of r.values()) {
    const f = USAGE_PATHS[path];
    if (f === undefined) continue;
    if (f === "model") {
      if (typeof v === "string" && v.length > 0) into.model = modelName(v);
    } else if (typeof v === "number" && Number.isSafeInteger(v) && v >= 0 && v <= COUNT_MAX) into[f] = v;
  }
}

/** A model's name as it is stored and shown: printable, bounded, without Gemini's `models/` prefix. */
export function modelName(s: string): string {
  return s.replace(/^models\//, "").replace(/[^\x21-\x7e]/g, "?").slice(0, 64);
}

/**
 * Reads an answer's usage as its bytes pass: a JSON body, or server-sent events whose `data:` lines are read as they
 * come (no event is held: each is fed to the path reader byte by byte, and only the captured counts stay).
 */
export class UsageReader {
  private readonly json = new JsonPathReader(WANTED);
  private readonly usage: RawUsage = {};
  /** SSE only: where in a line we are. `field` holds the first bytes of a line until its name is known. */
  private readonly field = new Uint8Array(8);
  private fieldLen = 0;
  private mode: "field" | "space" | "data" | "skip" = "field";
  private eventHasData = false;
  private lastCr = false;
  private events = 0;

  constructor(readonly format: "json" | "sse") {}

  feed(bytes: Uint8Array): void {
    if (this.format === "json") this.json.feed(bytes);
    else this.sse(bytes);
  }

  /** What was reported, once the answer ended (or was cut): a last event with no blank line after it still counts. */
  finish(): RawUsage {
    if (this.format === "json") {
      this.json.end();
      take(this.json, this.usage);
    } else if (this.eventHasData) this.dispatch();
    return { ...this.usage };
  }

  /** Events read (SSE). */
  get eventCount(): number {
    return this.events;
  }

  private sse(bytes: Uint8Array): void {
    let i = 0;
    while (i < bytes.length) {
      const b = bytes[i]!;
      if (b === 0x0a || b === 0x0d) {
        const crlf = b === 0x0a && this.lastCr;
        this.lastCr = b === 0x0d;
        i++;
        if (crlf) continue;
        this.endLine();
        continue;
      }
      this.lastCr = false;
      if (this.mode === "data") {
        // The rest of the line goes to the JSON reader at once.
        let j = i;
        while (j < bytes.length && bytes[j] !== 0x0a && bytes[j] !== 0x0d) j++;
        this.json.feed(bytes.subarray(i, j));
        i = j;
        continue;
      }
      if (this.mode === "skip") {
        // Not data (event names, ids, comments): on to the line's end.
        let j = bytes.indexOf(0x0a, i);
        if (j < 0) j = bytes.length;
        const cr = bytes.indexOf(0x0d, i);
        i = cr >= 0 && cr < j ? cr : j;
        continue;
      }
      i++;
      if (this.mode === "space") {
        this.mode = "data";
        if (b !== 0x20) this.json.feed(bytes, i - 1, i);
        continue;
      }
      if (b === 0x3a) {
        this.startField();
        continue;
      }
      if (this.fieldLen >= this.field.length) this.mode = "skip";
      else this.field[this.fieldLen++] = b;
    }
  }

  /** A field's name ended (its `:`): data is read, anything else (event, id, retry, comments) is skipped. */
  private startField(): void {
    const isData = this.fieldLen === 4 && this.field[0] === 0x64 && this.field[1] === 0x61 && this.field[2] === 0x74 && this.field[3] === 0x61;
    if (!isData) {
      this.mode = "skip";
      return;
    }
    // Lines of one event's data are joined with a newline, which JSON reads as space.
    if (this.eventHasData) this.json.feed(NEWLINE);
    this.eventHasData = true;
    this.mode = "space";
  }

  private endLine(): void {
    const blank = this.mode === "field" && this.fieldLen === 0;
    this.mode = "field";
    this.fieldLen = 0;
    if (blank && this.eventHasData) this.dispatch();
  }

  private dispatch(): void {
    this.json.end();
    take(this.json, this.usage);
    this.json.clear();
    this.eventHasData = false;
    this.events++;
  }
}

const NEWLINE = new Uint8Array([0x0a]);

/** Tokens of one call as they are priced: input not read from a cache, output, cache reads and cache writes. */
export interface Tokens {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

/**
 * Pure: a provider's report as priced tokens. Anthropic's input excludes what the cache served or stored; OpenAI's and
 * Gemini's prompt counts include the cached part (taken out here), and Gemini counts thinking and tool-use prompts apart.
 */
export function normalise(family: UsageFamily, r: RawUsage): Tokens {
  const cached = r.cacheRead ?? 0;
  if (family === "anthropic") return { input: r.input ?? 0, output: r.output ?? 0, cacheRead: cached, cacheWrite: r.cacheWrite ?? 0 };
  if (family === "openai") return { input: Math.max(0, (r.input ?? 0) - cached), output: r.output ?? 0, cacheRead: cached, cacheWrite: 0 };
  return { input: Math.max(0, (r.input ?? 0) + (r.toolPrompt ?? 0) - cached), output: (r.output ?? 0) + (r.thoughts ?? 0), cacheRead: cached, cacheWrite: 0 };
}

/** About four bytes of text a token: what an estimate counts when the provider reported nothing. */
export const BYTES_PER_TOKEN = 4;

/** Paths that run a model (and are billed by their tokens): an answer of theirs with no usage is estimated. */
export function isInference(method: string, path: string): boolean {
  if (method !== "POST") return false;
  const p = path.split("?")[0]!;
  return /\/(messages|chat\/completions|completions|responses)$/.test(p) || /:(stream)?[gG]enerateContent$/.test(p);
}

/** The model a Gemini path names (`/v1beta/models/gemini-2.5-pro:generateContent`), or null. */
export function modelOfPath(path: string): string | null {
  const m = /\/models\/([^/:?]+):/.exec(path);
  return m ? modelName(decodeURIComponentSafe(m[1]!)) : null;
}

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** One call, counted. */
export interface CallUsage extends Tokens {
  model: string;
  /** Some of it was estimated (the provider reported nothing, or not all: a cut stream, a client that left). */
  estimated: boolean;
  /** Why, when estimated: said in the audit row and the refusal. */
  note?: string;
}

export interface CallFacts {
  family: UsageFamily;
  method: string;
  path: string;
  /** The upstream's status; null when no answer came (the upstream failed, or the client left first). */
  status: number | null;
  /** What the answer reported (empty when it reported nothing). */
  reported: RawUsage;
  /** The model the request named (its body's `model`, or a Gemini path's). */
  requestModel: string | null;
  requestBytes: number;
  /** The whole request reached the upstream. */
  requestSent: boolean;
  responseBytes: number;
  /** The answer ended as its framing said; false: cut (either side went away) or never read. */
  complete: boolean;
  /** The answer was encoded (compressed) and could not be read: its bytes are counted a token each. */
  encoded?: boolean;
}

/**
 * Pure: what one call is counted as. The provider's report when it gave one whole; otherwise, for a call that runs a
 * model, an estimate that errs high: a sandbox that hides the count (a stream asked without usage, an answer cut short,
 * a client that leaves before the answer) is charged by bytes, never let off. An error answer with no usage is free
 * (providers do not bill one); a call the upstream never answered before the client left is charged its input.
 */
export function countCall(f: CallFacts): CallUsage | null {
  const r = f.reported;
  const model = r.model ?? f.requestModel ?? "unknown";
  const reported = r.input !== undefined || r.output !== undefined;
  const inference = isInference(f.method, f.path);
  const ok = f.status !== null && f.status >= 200 && f.status < 300;
  const byBytes = (n: number) => Math.ceil(n / BYTES_PER_TOKEN);
  if (f.status === null) {
    if (!inference || !f.requestSent) return null;
    return { model, input: byBytes(f.requestBytes), output: 0, cacheRead: 0, cacheWrite: 0, estimated: true, note: "no answer read (the client left first): input estimated from the request's size" };
  }
  if (!ok || !inference) return reported ? { model, ...normalise(f.family, r), estimated: false } : null;
  const outEstimate = f.encoded ? f.responseBytes : byBytes(f.responseBytes);
  if (!reported) {
    const why = f.encoded ? "an encoded answer" : f.complete ? "the provider reported no usage" : "the answer was cut before its usage";
    return { model, input: byBytes(f.requestBytes), output: outEstimate, cacheRead: 0, cacheWrite: 0, estimated: true, note: `${why}: estimated from sizes` };
  }
  const t = normalise(f.family, r);
  if (f.complete && r.input !== undefined && r.output !== undefined) return { model, ...t, estimated: false };
  // Part reported (Anthropic's message_start gives the input; its final output count never came): the rest estimated.
  return {
    model,
    ...t,
    input: r.input === undefined ? byBytes(f.requestBytes) : t.input,
    output: Math.max(t.output, outEstimate),
    estimated: true,
    note: f.complete ? "the provider reported part of its usage: the rest estimated from sizes" : "the answer was cut: its output estimated from what was read",
  };
}
