// One signed POST of sbx's webhook scheme (what a delivery and `sbx chat setup webhook`'s ping send): the headers, and
// the receiver's answer as a DeliveryError that says whether trying again may help.
import { VERSION } from "../version";
import { shownUrl } from "./channels-config";
import { DeliveryError, type Fetch } from "./outbox";
import { SBX_SIGNATURE, SBX_TIMESTAMP, sign } from "./signing";

/** POSTs one signed body: re-signed at each try (a retry minutes later is not stale), the same delivery id throughout. */
export async function postSigned(fetcher: Fetch, url: string, secret: string, event: string, delivery: string, body: string, signal: AbortSignal, nowMs: number): Promise<void> {
  const ts = String(Math.floor(nowMs / 1000));
  let res: Response;
  try {
    res = await fetcher(url, {
      method: "POST",
      body,
      signal,
      // A redirect would send a signed approval (and its link) somewhere the person did not name.
      redirect: "manual",
      headers: {
        "content-type": "application/json",
        "user-agent": `sbx/${VERSION}`,
        "x-sbx-event": event,
        "x-sbx-delivery": delivery,
        [SBX_TIMESTAMP]: ts,
        [SBX_SIGNATURE]: sign(secret, "v1", ts, body),
      },
    });
  } catch (e) {
    if ((e as Error).name === "TimeoutError" || (e as Error).name === "AbortError") throw e;
    throw new DeliveryError(`cannot reach ${shownUrl(url)}: ${(e as Error).message}`, true);
  }
  await res.body?.cancel().catch(() => undefined);
  if (res.ok) return;
  const said = `${shownUrl(url)} answered HTTP ${res.status}`;
  if (res.status >= 300 && res.status < 400) throw new DeliveryError(`${said} (a redirect: not followed)`, false);
  const after = Number(res.headers.get("retry-after"));
  if (res.status === 429 || res.status >= 500) throw new DeliveryError(said, true, Number.isFinite(after) && after > 0 ? after * 1000 : undefined);
  throw new DeliveryError(said, false);
}
