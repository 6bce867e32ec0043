// A company's proxy for tests: Debian's real squid on loopback, wanting Basic credentials (basic_ncsa_auth), resolving
// names only from its own hosts file (its DNS points at a loopback port where nothing answers), its ICMP pinger off:
// nothing leaves the machine. Its access log says what it was asked, and by which user.
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect as netConnect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const SQUID = Bun.which("squid") ?? (existsSync("/usr/sbin/squid") ? "/usr/sbin/squid" : null);
const NCSA = "/usr/lib/squid/basic_ncsa_auth";

/** Why squid cannot run here, or undefined. */
export function squidMissing(): string | undefined {
  if (SQUID === null) return "squid is not installed";
  if (!existsSync(NCSA)) return `${NCSA} is missing`;
  if (Bun.which("openssl") === null) return "openssl is missing";
  return undefined;
}

export interface Squid {
  port: number;
  /** http://127.0.0.1:<port> */
  url: string;
  /** Its access log so far (native format: … METHOD URL USER HIERARCHY/HOST TYPE). */
  accessLog(): string;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const p = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return p;
}

async function listening(port: number, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const ok = await new Promise<boolean>((r) => {
      const s = netConnect({ host: "127.0.0.1", port }, () => (s.destroy(), r(true)));
      s.on("error", () => r(false));
    });
    if (ok) return true;
    await Bun.sleep(100);
  }
  return false;
}

/**
 * Starts squid on 127.0.0.1 wanting `user:password` (Basic), knowing the names `hosts` maps (name → address) and no
 * other. runs: openssl passwd -apr1; squid -N -f <conf>
 */
export async function startSquid(o: { user: string; password: string; hosts: Record<string, string> }): Promise<Squid> {
  const why = squidMissing();
  if (why) throw new Error(why);
  const dir = mkdtempSync(join(tmpdir(), "sbx-squid-"));
  chmodSync(dir, 0o755);
  const hash = Bun.spawnSync(["openssl", "passwd", "-apr1", o.password]).stdout.toString().trim();
  writeFileSync(join(dir, "passwd"), `${o.user}:${hash}\n`);
  writeFileSync(join(dir, "hosts"), Object.entries(o.hosts).map(([name, address]) => `${address} ${name}\n`).join(""));
  const port = await freePort();
  const root = process.getuid?.() === 0;
  writeFileSync(
    join(dir, "squid.conf"),
    [
      `http_port 127.0.0.1:${port}`,
      `pid_filename ${dir}/squid.pid`,
      "cache deny all",
      `access_log stdio:${dir}/access.log`,
      `cache_log ${dir}/cache.log`,
      "cache_store_log none",
      `coredump_dir ${dir}`,
      `hosts_file ${dir}/hosts`,
      // Names come from the hosts file alone; a lookup squid would send goes to a loopback port where nothing is.
      "dns_nameservers 127.0.0.1",
      "pinger_enable off",
      `auth_param basic program ${NCSA} ${dir}/passwd`,
      "auth_param basic realm corp",
      "acl authed proxy_auth REQUIRED",
      "http_access deny !authed",
      "http_access allow all",
      "shutdown_lifetime 0 seconds",
      ...(root ? ["cache_effective_user proxy"] : []),
      "",
    ].join("\n"),
  );
  if (root) {
    const proxyUid = Number(Bun.spawnSync(["id", "-u", "proxy"]).stdout.toString().trim());
    if (Number.isInteger(proxyUid)) for (const f of ["", "passwd", "hosts", "squid.conf"]) chownSync(join(dir, f), proxyUid, -1);
  }
  const proc = Bun.spawn([SQUID!, "-N", "-f", join(dir, "squid.conf")], { stdout: "ignore", stderr: "ignore" });
  const log = (name: string) => (existsSync(join(dir, name)) ? readFileSync(join(dir, name), "utf8") : "");
  if (!(await listening(port, 10_000))) {
    proc.kill("SIGKILL");
    const why = log("cache.log").slice(-800) || "no log";
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`squid did not listen: ${why}`);
  }
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    accessLog: () => log("access.log"),
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
