// Invariant sandboxes-apart (linux-user): a guest cannot read the host's 700 home, another guest's home or socket dir, nor sudo.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import type { SandboxSpec } from "../../../src/core/spec";
import { makeWorld, must, sh, whyNot, type World } from "./harness";
import { importSandbox } from "../../../src/sync/import";
import type { SandboxGit } from "../../../src/sync/sandbox-git";
import { createExec, streamRun } from "../../../src/sys/exec";
import { hostUserExec } from "../../../src/sys/as-user";

const skip = whyNot();
const hasSudo = sh(["which", "sudo"]).code === 0;

describe.skipIf(skip !== undefined)(`sandboxes-apart: linux-user guests${skip ? ` (skipped: ${skip})` : ""}`, () => {
  let w: World;
  let a: SandboxSpec;
  let b: SandboxSpec;

  const run = (spec: SandboxSpec, script: string) => {
    const argv = w.backend.shellArgv(spec, { argv: ["bash", "-c", script], cwd: w.repo, tty: false, env: {} });
    return sh(argv);
  };

  beforeAll(async () => {
    w = await makeWorld();
    a = w.spec("apart-a");
    b = w.spec("apart-b");
    await w.backend.apply(a);
    await w.backend.apply(b);
    // A secret in the host home, and socket dirs laid out as the daemon does: 0700, owned by the guest they serve.
    must(["setpriv", `--reuid=${w.host.uid}`, `--regid=${w.host.gid}`, "--init-groups", "--", "sh", "-c", `echo host-secret > ${w.host.home}/secret; chmod 644 ${w.host.home}/secret`]);
    for (const s of [a, b]) {
      mkdirSync(s.sockets.dir, { recursive: true, mode: 0o711 });
      must(["chmod", "0711", `/tmp/sbx-e2e-${w.tag}`, `/tmp/sbx-e2e-${w.tag}/sb`]);
      must(["chown", `${w.backend.guest(s)}:`, s.sockets.dir]);
      must(["chmod", "0700", s.sockets.dir]);
      writeFileSync(`${s.sockets.dir}/bridge.sock`, "");
    }
    writeFileSync(`${w.backend.home(w.backend.guest(b))}/b-secret`, "b-secret\n");
    must(["chown", `${w.backend.guest(b)}:`, `${w.backend.home(w.backend.guest(b))}/b-secret`]);
  });

  afterAll(async () => {
    await w?.teardown();
  });

  test("the guest account is locked, has no extra groups and bash as its shell", () => {
    const guest = w.backend.guest(a);
    expect(must(["passwd", "-S", guest]).split(" ")[1]).toBe("L");
    expect(must(["id", "-Gn", guest]).trim()).toBe(guest);
    expect(must(["getent", "passwd", guest]).trim().endsWith(":/bin/bash")).toBe(true);
  });

  test("the guest's home is 700 to everyone but the host user, who has rwx by ACL", () => {
    const home = w.backend.home(w.backend.guest(a));
    const acl = must(["getfacl", "-p", "--numeric", home]);
    expect(acl).toContain(`user:${w.host.uid}:rwx`);
    expect(acl).toContain("\ngroup::---");
    expect(acl).toContain("\nother::---");
    // the host user really gets in, and can write
    must(["setpriv", `--reuid=${w.host.uid}`, `--regid=${w.host.gid}`, "--init-groups", "--", "touch", `${home}/from-host`]);
  });

  test("the guest works in its own clone, whose objects come from the host repo read-only", () => {
    const r = run(a, "pwd; git log --format=%s -1; touch x && echo wrote; echo t > $(git rev-parse --git-dir)/../probe");
    expect(r.out).toContain(w.backend.workspace(a));
    expect(r.out).toContain("init");
    expect(r.out).toContain("wrote");
    // the host's objects are readable, not writable
    const objects = must(["git", "-c", `safe.directory=*`, "-C", w.repo, "rev-parse", "--path-format=absolute", "--git-common-dir"]).trim() + "/objects";
    expect(run(a, `touch ${objects}/planted && echo planted`).out).not.toContain("planted");
  });

  test("a-sandbox-sees-only-its-own-work: a's commit, taken by the host through a's own git into a's store, is out of b's reach", async () => {
    const hostExec = hostUserExec(createExec({ PATH: process.env.PATH ?? "/usr/bin:/bin" }), w.host, 0);
    const root = createExec({ PATH: process.env.PATH ?? "/usr/bin:/bin" });
    const guestGit = (spec: SandboxSpec): SandboxGit => (args, stdin) => streamRun(root, w.backend.guestGitArgv(spec, args), stdin === undefined ? {} : { stdin });
    expect(run(a, "git -c user.name=a -c user.email=a@x commit -q --allow-empty -m only-a && echo committed").out).toContain("committed");
    const sha = run(a, "git rev-parse HEAD").out.trim();
    const r = await importSandbox({ repo: w.repo, name: a.name, sandboxGit: guestGit(a), exec: hostExec });
    expect(r.refs.get("main")).toBe(sha);
    const hostGitAs = (args: string[]) => must(["setpriv", `--reuid=${w.host.uid}`, `--regid=${w.host.gid}`, "--init-groups", "--reset-env", "--", "git", "-C", w.repo, ...args]);
    expect(hostGitAs(["log", "--format=%s", "-1", `sandbox-${a.name}/main`]).trim()).toBe("only-a");
    // b: not by id, not by listing every object it can reach, not through the host objects' list of alternates
    expect(run(b, `git cat-file -e ${sha} && echo readable`).out).not.toContain("readable");
    expect(run(b, "git cat-file --batch-all-objects --batch-check='%(objectname)'").out).not.toContain(sha);
    expect(run(b, `cat ${w.backend.objectsMount(b.id)}/info/alternates | wc -c`).out.trim()).toBe("0");
    expect(run(b, `ls ${w.repo}/.git/sbx && echo listed`).out).not.toContain("listed");
    // control: the host's own list does name a's store
    expect(hostGitAs(["cat-file", "-e", sha])).toBe("");
  });

  test("the guest cannot list or read the host user's home", () => {
    const r = run(a, `ls ${w.host.home} && echo listed; cat ${w.host.home}/.bashrc && echo read-rc`);
    expect(r.out).not.toContain("listed");
    expect(r.out).not.toContain("read-rc");
    expect(run(a, `cat ${w.host.home}/secret`).out).not.toContain("host-secret");
  });

  test("the guest cannot read another sandbox's home or socket dir", () => {
    const homeB = w.backend.home(w.backend.guest(b));
    expect(run(a, `ls ${homeB} && echo listed`).out).not.toContain("listed");
    expect(run(a, `cat ${homeB}/b-secret`).out).not.toContain("b-secret");
    expect(run(a, `ls ${b.sockets.dir} && echo listed`).out).not.toContain("listed");
    expect(run(a, `test -e ${b.sockets.dir}/bridge.sock && echo seen`).out).not.toContain("seen");
    // control: b sees its own
    expect(run(b, `cat ${homeB}/b-secret`).out).toContain("b-secret");
    expect(run(b, `test -e ${b.sockets.dir}/bridge.sock && echo seen`).out).toContain("seen");
  });

  test.skipIf(!hasSudo)(`the guest cannot sudo${hasSudo ? "" : " (skipped: sudo is not installed)"}`, () => {
    const r = run(a, "sudo -n true && echo root");
    expect(r.out).not.toContain("root");
    expect(r.code).not.toBe(0);
  });

  test("the guest holds no capabilities and cannot become root with su", () => {
    expect(run(a, "grep CapEff /proc/self/status").out).toContain("0000000000000000");
    expect(run(a, "su -c 'echo root' root </dev/null").out).not.toContain("root");
  });
});
