// One model call's meter, beside the LLM handler's pipes: it counts the request's bytes and reads its `model`, reads the
// answer's usage as it passes (never holding it), and says what the call is counted as once, however it ended.
import type { IncomingHttpHeaders } from "node:http";
import { JsonPathReader } from "../core/json-paths";
import { countCall, modelName, modelOfPath, UsageReader, type CallUsage, type UsageFamily } from "../core/llm-usage";
import type { Provider } from "./keys";

export const FAMILY: Record<Provider, UsageFamily> = { anthropic: "anthropic", openai: "openai", codex: "openai", google: "google", codeassist: "google" };

const REQUEST_MODEL = new Set(["model"]);

/** Answer bytes a call's meter holds, already written, before it reads them (invariant 14: bounded per call). */
export const METER_HELD = 128 * 1024;

export class CallMeter {
  private readonly requestModel = new JsonPathReader(REQUEST_MODEL);
  private requestBytes = 0;
  private requestSent = false;
  private status: number | null = null;
  private reader: UsageReader | null = null;
  private encoded = false;
  private responseBytes = 0;
  private done = false;
  private waiting: Uint8Array[] = [];
  private waitingBytes = 0;

  constructor(
    private readonly provider: Provider,
    private readonly method: string,
    /** The path sent upstream (its query too, for Gemini's `alt=sse`). */
    private readonly path: string,
    private readonly onCounted: (u: CallUsage) => void,
  ) {}

  request(chunk: Uint8Array): void {
    this.requestBytes += chunk.length;
    this.requestModel.feed(chunk);
  }

  requestEnded(): void {
    this.requestSent = true;
  }

  /** The answer's head: how its body is framed (events or JSON) and whether it can be read at all. */
  response(status: number, headers: IncomingHttpHeaders): void {
    this.status = status;
    const coding = String(headers["content-encoding"] ?? "").trim().toLowerCase();
    this.encoded = coding !== "" && coding !== "identity";
    const type = String(headers["content-type"] ?? "").toLowerCase();
    this.reader = this.encoded ? null : new UsageReader(type.startsWith("text/event-stream") ? "sse" : "json");
  }

  body(chunk: Uint8Array): void {
    this.responseBytes += chunk.length;
    this.reader?.feed(chunk);
  }

  /**
   * `body`, later: reading an answer for usage costs more than relaying it (≈1 µs an event, a 500-event answer's
   * relay time twice over), so what was written is read once the answer is over (`finish`), off the path of its bytes
   * (read between a stream's reads, it held the next ones back: bench/llm-sse). Bounded: past METER_HELD bytes held (the
   * buffers already written, not copies) they are read at once.
   */
  bodyLater(chunk: Uint8Array): void {
    this.waiting.push(chunk);
    this.waitingBytes += chunk.length;
    if (this.waitingBytes >= METER_HELD) this.drain();
  }

  private drain(): void {
    const w = this.waiting;
    this.waiting = [];
    this.waitingBytes = 0;
    for (const c of w) this.body(c);
  }

  /** The call is over: `complete` when the answer ended as framed. Counts it once; later calls do nothing. */
  finish(complete: boolean): void {
    if (this.done) return;
    this.drain();
    this.done = true;
    this.requestModel.end();
    const named = this.requestModel.values().get("model");
    const u = countCall({
      family: FAMILY[this.provider],
      method: this.method,
      path: this.path,
      status: this.status,
      reported: this.reader?.finish() ?? {},
      requestModel: typeof named === "string" && named !== "" ? modelName(named) : modelOfPath(this.path),
      requestBytes: this.requestBytes,
      requestSent: this.requestSent,
      responseBytes: this.responseBytes,
      complete: complete && this.status !== null,
      encoded: this.encoded,
    });
    if (u !== null) this.onCounted(u);
  }
}
