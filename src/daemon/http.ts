// What every route of the control API shares: the one wire shape of an error, and a request's JSON body.
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { z } from "zod";
import { SbxError, toSbxError, type ErrorCode } from "../core/errors";
import type { ErrorBody } from "./protocol";

const statusOf: Record<ErrorCode, ContentfulStatusCode> = {
  usage: 400,
  invalid_name: 400,
  not_found: 404,
  exists: 409,
  conflict: 409,
  not_available: 501,
  unavailable: 503,
  permission: 403,
  policy_denied: 403,
  config: 422,
  exec_failed: 502,
  unsynced_commits: 409,
  internal: 500,
};

/** The wire error of anything thrown: zod issues become usage errors that name the field. */
export function errorBody(e: unknown): { status: ContentfulStatusCode; body: ErrorBody } {
  if (e instanceof z.ZodError) {
    const first = e.issues[0];
    const where = first?.path.length ? `${first.path.join(".")}: ` : "";
    return {
      status: 400,
      body: { error: "usage", message: `bad request: ${where}${first?.message ?? "invalid"}`, hint: "The client and daemon may be different versions: restart the daemon (`sbx daemon`)." },
    };
  }
  const err = toSbxError(e);
  return { status: statusOf[err.code], body: err.toWire() };
}

export async function jsonBody(c: Context): Promise<unknown> {
  try {
    return await c.req.json();
  } catch {
    throw new SbxError("usage", "request body is not JSON", { hint: "Send a JSON object with Content-Type: application/json." });
  }
}
