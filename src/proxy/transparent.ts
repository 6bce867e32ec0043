// One connection of the transparent path (a client that ignores the proxy variables, redirected or listened for): the
// name its address stands for (`names`), then the same checks as the proxy path's: port 80 (transparentHttpPorts) read
// as plain HTTP for that name, any other port decided as `CONNECT name:port` and carried with no 200.
import type { Socket } from "node:net";
import type { TransparentNames } from "../core/egress-events";
import type { Admission } from "./admission";
import { ClientConnection, type PlainPreparer } from "./connection";
import { hold, type ProxyContext } from "./context";
import { authorityText } from "./decision";
import { cut } from "./refusal";

/** Where a transparent connection was headed: the address and port the client dialled. */
export type TransparentTarget = { address: string; port: number };

export interface TransparentDeps {
  ctx: ProxyContext;
  admission: Admission;
  /** The name map; without it every transparent connection is refused. */
  names?: TransparentNames;
  /** Transparent ports whose connections are read as plain HTTP. */
  httpPorts: ReadonlySet<number>;
  /** Where a plain request goes first when the sandbox may have secrets bound (terminate.ts). */
  plain?: PlainPreparer | null;
}

/** One transparent connection: the name its address stands for, then the same checks as the proxy path's. */
export function transparentConnection(t: TransparentDeps, s: Socket, to: TransparentTarget | null): void {
  const { ctx } = t;
  if (!t.admission.admit(s, "transparent")) return;
  hold(ctx, s);
  s.on("error", () => s.destroy());
  const address = to?.address.startsWith("::ffff:") ? to.address.slice(7) : to?.address;
  const name = address === undefined ? null : (t.names?.nameOf(address) ?? null);
  if (to === null || name === null) {
    const shown = to === null ? "an unknown address" : authorityText(address ?? "?", to.port);
    ctx.emit({ type: "denied", sandbox: ctx.sandbox, path: "transparent", method: "CONNECT", host: address ?? "?", port: to?.port ?? 0, reason: "unnamed-address", detail: `${shown} stands for no name the sandbox looked up (connect by name)`, suggest: null, at: Date.now() });
    return void cut(s);
  }
  if (t.httpPorts.has(to.port)) return void new ClientConnection(s, ctx, { kind: "transparent", site: { name, port: to.port }, plain: t.plain ?? null });
  s.pause();
  const go = () => {
    if (s.destroyed) return;
    void ctx.decider.check("transparent", "CONNECT", name, to.port).then((v) => {
      if (s.destroyed) return;
      if (!v.ok) return void cut(s);
      ctx.carrierFor(v)(v, s, Buffer.alloc(0), false);
    });
  };
  const d = ctx.turn();
  if (d > 0) setTimeout(go, d);
  else go();
}

/** Where a transparent connection was headed, or null when that cannot be told (a lookup that throws tells nothing). */
export function targetOrNull(of: (s: Socket) => TransparentTarget | null, s: Socket): TransparentTarget | null {
  try {
    return of(s);
  } catch {
    return null;
  }
}
