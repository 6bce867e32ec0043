// Whether this host can run the Linux user-account backend: root, nftables, shadow-utils, acl, util-linux setpriv.
import type { Exec } from "../../sys/exec";

export interface LinuxUserProbe {
  ok: boolean;
  /** One line per missing piece, each saying what to install or do. */
  missing: string[];
}

const TOOLS: [string, string][] = [
  ["nft", "apt-get install nftables"],
  ["useradd", "apt-get install passwd"],
  ["setfacl", "apt-get install acl"],
  ["getfacl", "apt-get install acl"],
  ["setpriv", "apt-get install util-linux"],
  ["pkill", "apt-get install procps"],
  ["dmesg", "apt-get install util-linux"],
];

/** runs: id -u; command -v is not a program, so each tool is looked up with `which <tool>` */
export async function probeLinuxUser(exec: Exec): Promise<LinuxUserProbe> {
  const missing: string[] = [];
  const id = await exec.run(["id", "-u"], { check: false });
  if (id.stdout.trim() !== "0") missing.push("root: the user backend creates accounts and firewall rules; run the sbx daemon as root");
  for (const [tool, fix] of TOOLS) {
    const r = await exec.run(["which", tool], { check: false });
    if (r.exitCode !== 0) missing.push(`${tool}: ${fix}`);
  }
  return { ok: missing.length === 0, missing };
}
