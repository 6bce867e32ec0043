// sbx doctor's look at a company's CAs (issue 39): the CAs this host trusts beyond its distribution's roots, and
// whether the config's `trust` carries them into sandboxes (where a client trusting only the roots would fail with
// "self-signed certificate in certificate chain").
import type { Exec } from "../sys/exec";
import { companyCas, hostCaSources, readTrustFiles, type TrustGuard } from "../tls/host-trust";
import type { Check } from "./check";

export async function checkCompanyCas(o: { trust: "host" | readonly string[] | undefined; platform: string; env: Readonly<Record<string, string | undefined>>; exec: Exec; guard: TrustGuard }): Promise<Check> {
  const name = "company CAs";
  const src = await hostCaSources(o);
  const found = [...readTrustFiles(src.files, o.guard).cas, ...src.keychain];
  const list = (cas: readonly { subject: string; from: string }[]) => cas.map((c) => `${c.subject.split(", ").find((x) => x.startsWith("CN=")) ?? c.subject} (${c.from})`).join("; ");
  if (o.trust === undefined) {
    if (found.length === 0) return { name, status: "ok", detail: "this host trusts no CA beyond its system's roots" };
    return {
      name,
      status: "warn",
      detail: `this host trusts ${found.length} CA${found.length === 1 ? "" : "s"} beyond its system's roots, which sandboxes do not: ${list(found)}`,
      fix: 'Add "trust": "host" to sbx\'s config.json (or a list of CA files); new sessions then trust them, and so does sbx\'s proxy',
    };
  }
  const r = await companyCas(o.trust, o);
  if (r.refused.length > 0) {
    return {
      name,
      status: "fail",
      detail: `not trusted: ${r.refused.map((x) => `${x.from}: ${x.why}`).join("; ")}`,
      fix: "Point `trust` at CA files that only root or you can write, outside sbx's sandbox, state and runtime dirs",
    };
  }
  if (r.cas.length === 0) return { name, status: "warn", detail: `"trust" is set, and names no CA ${o.trust === "host" ? "(none found beyond the system's roots)" : ""}`.trim(), fix: "Remove `trust` from the config, or name the CA files" };
  return { name, status: "ok", detail: `sandboxes and sbx's proxy trust ${r.cas.length} CA${r.cas.length === 1 ? "" : "s"} beyond the roots: ${list(r.cas)}` };
}
