// The host's cache of agents (`sbx run AGENT` on an image that lacks one): registry packages fetched once, their sha512
// checked, unpacked into a versioned dir that is made read-only and mounted read-only into every Docker sandbox at
// /opt/sbx/agents, with one launcher per agent in its bin/.
//
// Layout of <cache>/sbx/agents:
//   pkg/<agent>/<version>/…     the unpacked platform package (its `package/` dir as npm packs it)
//   node/<version>/…            Node.js, for the agents that are JavaScript
//   bin/<binary>                the launcher (core/agents renderLauncher) for the version in use
//   versions.json               { "<agent>": "<version>" }: the version in use, newest installed last
import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { AGENTS, fillTemplate, NODE_DIRS_DARWIN, NODE_RUNTIME, renderLauncher, VERSION_RE, type AgentName, type AgentPlatform, type LauncherInput } from "../core/agents";
import { SbxError } from "../core/errors";
import type { Exec } from "../sys/exec";
import { acquireLock } from "../workspace/lock";

/** Where the cache appears inside a container (read-only). */
export const AGENTS_MOUNT = "/opt/sbx/agents";

export const DEFAULT_REGISTRY = "https://registry.npmjs.org";

export interface AgentCacheDeps {
  /** <cache>/sbx/agents (Docker), or under the root-owned runtime dir (a user-account sandbox's). */
  dir: string;
  /** Where a sandbox sees `dir` (default AGENTS_MOUNT, the Docker mount; a user account sees `dir` itself). */
  inside?: string;
  exec: Exec;
  /** The npm registry (tests: a fake on loopback). */
  registry?: string;
  fetch?: typeof fetch;
}

export interface InstalledAgent {
  agent: AgentName;
  version: string;
  /** The file run, as a sandbox sees it. */
  inside: string;
}

const PackumentSchema = {
  parse(v: unknown): { version: string; dist: { tarball: string; integrity: string } } {
    const o = v as { version?: unknown; dist?: { tarball?: unknown; integrity?: unknown } };
    if (typeof o?.version !== "string" || typeof o.dist?.tarball !== "string" || typeof o.dist.integrity !== "string") {
      throw new Error("the registry's answer has no version, tarball or integrity");
    }
    return { version: o.version, dist: { tarball: o.dist.tarball, integrity: o.dist.integrity } };
  },
};

/** A registry package name with a scope's slash escaped, as the registry's URLs want it. */
function registryPath(name: string): string {
  return name.startsWith("@") ? `@${encodeURIComponent(name.slice(1))}` : encodeURIComponent(name);
}

function mb(n: number): string {
  return `${(n / 1e6).toFixed(1)} MB`;
}

/** Makes a tree read-only (dirs r-x, files r-- or r-x): the sandbox's uid is often the owner, and must not write it. */
function freeze(dir: string): void {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) freeze(p);
    else if (e.isFile()) chmodSync(p, lstatSync(p).mode & 0o555);
  }
  chmodSync(dir, 0o555);
}

/** Makes it writable again, so it can be removed. */
function thaw(dir: string): void {
  if (!existsSync(dir)) return;
  chmodSync(dir, 0o755);
  for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) thaw(join(dir, e.name));
}

export class AgentCache {
  constructor(private readonly d: AgentCacheDeps) {}

  /** `dir` as a sandbox sees it. */
  get inside(): string {
    return this.d.inside ?? AGENTS_MOUNT;
  }

  private get registry(): string {
    return (this.d.registry ?? DEFAULT_REGISTRY).replace(/\/+$/, "");
  }

  private versionsFile(): string {
    return join(this.d.dir, "versions.json");
  }

  /** The version in use per agent (what the launchers run). */
  versions(): Partial<Record<AgentName, string>> {
    try {
      const v = JSON.parse(readFileSync(this.versionsFile(), "utf8")) as Record<string, unknown>;
      const out: Partial<Record<AgentName, string>> = {};
      for (const a of Object.keys(AGENTS) as AgentName[]) if (typeof v[a] === "string" && VERSION_RE.test(v[a] as string)) out[a] = v[a] as string;
      return out;
    } catch {
      return {};
    }
  }

  /** Every version unpacked, per agent. */
  installed(agent: AgentName): string[] {
    try {
      return readdirSync(join(this.d.dir, "pkg", agent)).filter((v) => VERSION_RE.test(v)).sort();
    } catch {
      return [];
    }
  }

  /**
   * Makes the dirs a container mounts (before any agent is installed, so the mount exists from the start), 0755 whatever
   * the umask: a user-account guest (another uid) reads them through the "other" bits. `agent`: its pkg dir too.
   */
  ensureDirs(agent?: AgentName): void {
    for (const d of [this.d.dir, join(this.d.dir, "bin"), join(this.d.dir, "pkg"), join(this.d.dir, "node"), ...(agent ? [join(this.d.dir, "pkg", agent)] : [])]) {
      mkdirSync(d, { recursive: true, mode: 0o755 });
      chmodSync(d, 0o755);
    }
  }

  private async get(url: string): Promise<unknown> {
    const r = await (this.d.fetch ?? fetch)(url, { headers: { accept: "application/json" } });
    if (!r.ok) throw new SbxError("unavailable", `the npm registry answered ${r.status} for ${url}`, { hint: "Check the version and the host's network (sbx fetches agents on the host, never inside a sandbox)." });
    return r.json();
  }

  /** The version `latest` names now. */
  async latest(agent: AgentName): Promise<string> {
    const a = AGENTS[agent];
    if (a.install.kind !== "npm") throw new SbxError("usage", `${a.title} is installed inside the sandbox (pip), not cached on the host`);
    const doc = PackumentSchema.parse(await this.get(`${this.registry}/${registryPath(a.install.package)}/latest`));
    if (!VERSION_RE.test(doc.version)) throw new SbxError("unavailable", `the registry's latest ${a.install.package} is '${doc.version}', not a version sbx takes`);
    return doc.version;
  }

  /** Downloads one package version into `into` (made fresh), checking its sha512 against the registry's integrity. */
  private async fetchPackage(name: string, version: string, into: string, log: (line: string) => void): Promise<void> {
    const doc = PackumentSchema.parse(await this.get(`${this.registry}/${registryPath(name)}/${encodeURIComponent(version)}`));
    const m = /^sha512-([A-Za-z0-9+/=]+)$/.exec(doc.dist.integrity.split(/\s+/).find((s) => s.startsWith("sha512-")) ?? "");
    if (!m) throw new SbxError("unavailable", `${name}@${version}: the registry gives no sha512 integrity`, { hint: "sbx installs only what it can check." });
    const res = await (this.d.fetch ?? fetch)(doc.dist.tarball);
    if (!res.ok || !res.body) throw new SbxError("unavailable", `${name}@${version}: downloading ${doc.dist.tarball} answered ${res.status}`);
    const total = Number(res.headers.get("content-length") ?? 0);
    rmSync(into, { recursive: true, force: true });
    mkdirSync(into, { recursive: true, mode: 0o755 });
    const tgz = join(into, ".download.tgz");
    const hasher = new Bun.CryptoHasher("sha512");
    const sink = Bun.file(tgz).writer();
    let got = 0;
    let shown = 0;
    log(`fetching ${name}@${version}${total ? ` (${mb(total)})` : ""} from ${new URL(doc.dist.tarball).host}`);
    for await (const chunk of res.body) {
      hasher.update(chunk);
      sink.write(chunk);
      got += chunk.byteLength;
      if (total && got - shown >= total / 4 && got < total) {
        shown = got;
        log(`  ${name}: ${Math.round((got / total) * 100)}% of ${mb(total)}`);
      }
    }
    await sink.end();
    if (hasher.digest("base64") !== m[1]) {
      rmSync(into, { recursive: true, force: true });
      throw new SbxError("unavailable", `${name}@${version}: the download does not match the registry's sha512; nothing was installed`, { hint: "Try again; if it persists, the registry or a proxy on the way is serving something else." });
    }
    // GNU and BSD tar both refuse members that climb out with `..` or an absolute path; ownership is not taken from it.
    await this.d.exec.run(["tar", "-xzf", tgz, "-C", into, "--no-same-owner"], { check: true });
    rmSync(tgz);
  }

  /**
   * Makes sure `agent` (at `version`, else the version in use, else `latest`) and its runtime are in the cache, and that
   * its launcher runs that version. Returns what was installed; a version already there is not fetched again.
   */
  async ensure(agent: AgentName, platform: AgentPlatform, want?: string, log: (line: string) => void = () => undefined): Promise<InstalledAgent> {
    const a = AGENTS[agent];
    const inst = a.install;
    const ready = this.ready(agent, platform, want);
    if (ready) return ready;
    this.ensureDirs(agent);
    const lock = await acquireLock(join(this.d.dir, ".lock"), { timeoutMs: 15 * 60_000, onWait: () => log("another sbx is installing an agent; waiting") });
    try {
      if (inst.kind === "pip") {
        // Installed inside, into the sandbox's own venv; the launcher does it on first run (see renderLauncher).
        this.writeLauncher(agent, null, null);
        return { agent, version: "pip", inside: "" };
      }
      if (want !== undefined && !VERSION_RE.test(want)) throw new SbxError("usage", `--version ${want}: a version such as 1.2.3`);
      const version = want ?? this.versions()[agent] ?? (await this.latest(agent));
      const dir = join(this.d.dir, "pkg", agent, version);
      const entry = fillTemplate(inst.entry, platform, version);
      if (!existsSync(join(dir, "package", entry))) {
        const tmp = join(this.d.dir, "pkg", agent, `.${version}.${process.pid}`);
        try {
          await this.fetchPackage(fillTemplate(inst.from.name, platform, version), fillTemplate(inst.from.version, platform, version), tmp, log);
          if (!existsSync(join(tmp, "package", entry))) {
            throw new SbxError("unavailable", `${a.title} ${version}: the package has no ${entry} for ${platform.os}-${platform.arch}`, { hint: "This agent's package may have changed its layout; pin an older one with --version." });
          }
          freeze(tmp);
          thaw(dir);
          rmSync(dir, { recursive: true, force: true });
          renameSync(tmp, dir);
        } finally {
          thaw(tmp);
          rmSync(tmp, { recursive: true, force: true });
        }
      }
      let node: LauncherInput["node"] = null;
      if (inst.runtime === "node" && platform.os === "darwin") node = { search: NODE_DIRS_DARWIN };
      else if (inst.runtime === "node") {
        const nv = NODE_RUNTIME.version;
        const nd = join(this.d.dir, "node", nv);
        if (!existsSync(join(nd, "package", NODE_RUNTIME.entry))) {
          const tmp = join(this.d.dir, "node", `.${nv}.${process.pid}`);
          try {
            await this.fetchPackage(fillTemplate(NODE_RUNTIME.name, platform, nv), nv, tmp, log);
            freeze(tmp);
            renameSync(tmp, nd);
          } finally {
            thaw(tmp);
            rmSync(tmp, { recursive: true, force: true });
          }
        }
        node = `${this.inside}/node/${nv}/package/${NODE_RUNTIME.entry}`;
      }
      const inside = `${this.inside}/pkg/${agent}/${version}/package/${entry}`;
      this.writeLauncher(agent, inside, node);
      const versions = { ...this.versions(), [agent]: version };
      writeFileSync(`${this.versionsFile()}.tmp`, `${JSON.stringify(versions, null, 2)}\n`);
      renameSync(`${this.versionsFile()}.tmp`, this.versionsFile());
      return { agent, version, inside };
    } finally {
      lock.release();
    }
  }

  /** Without the lock or a write: the version asked for (or in use) is there and its launcher runs it; else null. */
  private ready(agent: AgentName, platform: AgentPlatform, want: string | undefined): InstalledAgent | null {
    const inst = AGENTS[agent].install;
    if (inst.kind !== "npm") return null;
    const inUse = this.versions()[agent];
    const version = want ?? inUse;
    if (version === undefined || version !== inUse) return null;
    const entry = fillTemplate(inst.entry, platform, version);
    if (!existsSync(join(this.d.dir, "pkg", agent, version, "package", entry))) return null;
    const inside = `${this.inside}/pkg/${agent}/${version}/package/${entry}`;
    const darwinNode = inst.runtime === "node" && platform.os === "darwin";
    const node: LauncherInput["node"] = darwinNode ? { search: NODE_DIRS_DARWIN } : inst.runtime === "node" ? `${this.inside}/node/${NODE_RUNTIME.version}/package/${NODE_RUNTIME.entry}` : null;
    if (typeof node === "string" && !existsSync(join(this.d.dir, "node", NODE_RUNTIME.version, "package", NODE_RUNTIME.entry))) return null;
    try {
      const want = renderLauncher({ agent, cached: inside, node, binDir: `${this.inside}/bin` });
      if (readFileSync(join(this.d.dir, "bin", AGENTS[agent].binary), "utf8") !== want) return null;
    } catch {
      return null;
    }
    return { agent, version, inside };
  }

  private writeLauncher(agent: AgentName, cached: string | null, node: LauncherInput["node"]): void {
    const a = AGENTS[agent];
    const file = join(this.d.dir, "bin", a.binary);
    // A read-only leftover of an interrupted write would refuse this one: gone first.
    rmSync(`${file}.tmp`, { force: true });
    writeFileSync(`${file}.tmp`, renderLauncher({ agent, cached, node, binDir: `${this.inside}/bin` }), { mode: 0o555 });
    renameSync(`${file}.tmp`, file);
  }
}
