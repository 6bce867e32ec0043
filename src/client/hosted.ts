// Client calls for what the daemon hosts (dashboard launch tickets, chat bot reload), kept beside client.ts so that file stays another owner's.
import type { z } from "zod";
import { SbxError } from "../core/errors";
import { ChatStatusSchema, ErrorBodySchema, UiLaunchSchema, UiTicketStateSchema, type UiLaunch } from "../daemon/protocol";
import { noDaemonError, type DaemonClient } from "./client";

async function post<S extends z.ZodTypeAny>(client: DaemonClient, path: string, body: unknown, schema: S): Promise<z.infer<S>> {
  let res: Response;
  try {
    res = await fetch(`http://sbx${path}`, {
      method: "POST",
      unix: client.socket,
      body: JSON.stringify(body),
      headers: { "content-type": "application/json" },
      signal: AbortSignal.timeout(10_000),
    });
  } catch (e) {
    throw noDaemonError(client.socket, e);
  }
  const json: unknown = await res.json().catch(() => null);
  if (!res.ok) {
    const err = ErrorBodySchema.safeParse(json);
    if (err.success) throw new SbxError(err.data.error, err.data.message, { hint: err.data.hint });
    throw new SbxError("internal", `the daemon answered ${path} with HTTP ${res.status}`, {
      hint: "The client and daemon may be different versions: restart the daemon.",
    });
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    throw new SbxError("internal", `the daemon's answer to ${path} has an unexpected shape`, { hint: "The client and daemon may be different versions: restart the daemon." });
  }
  return parsed.data;
}

/** A single-use dashboard launch URL valid for ttlMs (secret until used: give it only to the person's browser). */
export function uiLaunch(client: DaemonClient, ttlMs: number): Promise<UiLaunch> {
  return post(client, "/v1/ui/launch", { ttlMs }, UiLaunchSchema);
}

/** Whether a launch ticket was used yet (the browser reached the dashboard). */
export async function uiTicketState(client: DaemonClient, ticket: string): Promise<"unused" | "used" | "expired" | "unknown"> {
  return (await post(client, "/v1/ui/ticket", { ticket }, UiTicketStateSchema)).state;
}

/** Makes the daemon re-read the chat config and restart its bot; returns the bot's status. */
export function chatReload(client: DaemonClient) {
  return post(client, "/v1/chat/reload", {}, ChatStatusSchema);
}
