// Pure: the image's /etc/passwd and /etc/group made to know the host user, so a container running as the host's uid
// has a name, a home and a group whatever the image (`whoami`, ssh, Node's os.userInfo() all read passwd). The image's
// files are not trusted: they are only split into lines and fields, bounded, and written back into the container.
import type { HostUser } from "../../core/spec";

export interface IdentityFiles {
  /** The new /etc/passwd, or null when it already names the user as the host does. */
  passwd: string | null;
  /** The new /etc/group, or null when it already has the user's gid. */
  group: string | null;
}

function lines(text: string): string[] {
  return text.split("\n").filter((l, i, all) => !(l === "" && i === all.length - 1));
}

function joined(ls: readonly string[]): string {
  return `${ls.join("\n")}\n`;
}

/** A name no other line in `taken` holds: `want`, else `want-<n>`. */
function freeName(want: string, taken: ReadonlySet<string>, n: number): string {
  return taken.has(want) ? `${want}-${n}` : want;
}

/**
 * The host user's line in passwd: added when its uid has none; an image's own user of that uid renamed to the host's
 * name and home (its files stay its own: ownership is by uid); a line of another uid that holds the host's name
 * renamed out of the way. The group: the gid added when missing. `null` in: that file is missing in the image.
 */
export function identityFiles(passwd: string | null, group: string | null, user: HostUser): IdentityFiles {
  const pw = lines(passwd ?? "root:x:0:0:root:/root:/bin/sh\n");
  const fields = pw.map((l) => l.split(":"));
  const mine = fields.findIndex((f) => f.length >= 7 && f[2] === String(user.uid));
  let nextPw: string[] | null = null;
  if (mine < 0 || fields[mine]![0] !== user.name || fields[mine]![5] !== user.home) {
    const out = fields.map((f) => [...f]);
    // Another uid's line with the host's name gives the name up.
    out.forEach((f, i) => {
      if (i !== mine && f[0] === user.name && f[2] !== String(user.uid)) f[0] = freeName(`${user.name}-image`, new Set(out.map((x) => x[0]!)), Number(f[2]) || i);
    });
    if (mine >= 0) {
      out[mine]![0] = user.name;
      out[mine]![5] = user.home;
    } else out.push([user.name, "x", String(user.uid), String(user.gid), "sbx", user.home, "/bin/sh"]);
    nextPw = out.map((f) => f.join(":"));
  }
  const gr = lines(group ?? "root:x:0:\n");
  const hasGid = gr.some((l) => l.split(":")[2] === String(user.gid));
  const nextGr = hasGid ? null : [...gr, `${freeName(user.name, new Set(gr.map((l) => l.split(":")[0]!)), user.gid)}:x:${user.gid}:`];
  return { passwd: nextPw === null && passwd !== null ? null : joined(nextPw ?? pw), group: nextGr === null && group !== null ? null : joined(nextGr ?? gr) };
}
