// Linux sandbox naming: guest account `sbx-<host>-<id>` within useradd's 32-char limit, its home, its nft chain.
import { createHash } from "node:crypto";
import { SbxError } from "../../core/errors";

/** Longest user name shadow-utils accepts (LOGIN_NAME_MAX-1 on glibc is larger; useradd caps at 32). */
export const USER_NAME_MAX = 32;

/** Sandbox ids are short lowercase alphanumerics (the 12-hex socket id in practice). */
const ID = /^[a-z0-9]{1,20}$/;

function short(s: string, n: number): string {
  return createHash("sha256").update(s).digest("hex").slice(0, n);
}

export function assertId(id: string): string {
  if (!ID.test(id)) {
    throw new SbxError("internal", `sandbox id '${id}' is not usable in a Linux user name`, {
      hint: "Sandbox ids are short lowercase hex strings; this is a bug in sbx.",
    });
  }
  return id;
}

/**
 * The host user's name as it appears in guest names. Names that are not plain `[a-z0-9]` or do not fit are
 * cut and given a 4-hex hash of the full name, so two host users never share a tag by truncation.
 */
export function hostTag(hostUser: string, room: number): string {
  const clean = hostUser.toLowerCase().replace(/[^a-z0-9]/g, "");
  if (clean === hostUser && clean.length > 0 && clean.length <= room) return clean;
  const keep = Math.max(0, room - 4);
  return clean.slice(0, keep) + short(hostUser, 4);
}

/** `sbx-<host>-<id>`, at most 32 characters; deterministic for a given host user and id. */
export function guestUser(hostUser: string, id: string): string {
  assertId(id);
  const room = USER_NAME_MAX - "sbx-".length - "-".length - id.length;
  return `sbx-${hostTag(hostUser, room)}-${id}`;
}

/** The sandbox id of a guest account name, or null for anything that is not one of sbx's. */
export function parseGuestUser(user: string): string | null {
  const m = /^sbx-[a-z0-9]+-([a-z0-9]{1,20})$/.exec(user);
  return m ? m[1]! : null;
}

/** nft chain holding one sandbox's rules. */
export function chainName(id: string): string {
  return `sb_${assertId(id)}`;
}

export function parseChainName(chain: string): string | null {
  const m = /^sb_([a-z0-9]{1,20})$/.exec(chain);
  return m ? m[1]! : null;
}

/** The kernel-log prefix of a blocked packet from this guest UID (the monitor parses it back). */
export function logPrefix(uid: number): string {
  return `sbx-block uid=${uid} `;
}
