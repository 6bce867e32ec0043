// A push through the bridge: which refs the sandbox may update (its prefix, what the user protects), then `git push`
// from the gate held at its pre-push hook until the verdict (the secret scan, the CI-file check, fast-forwards).
import { existsSync, writeFileSync } from "node:fs";
import type { ExecResult } from "../sys/exec";
import { pushWorkflowNote, type PushRef } from "../core/push-workflows";
import { pushWorkflows } from "../workspace/push-workflows";
import { hostSecretPatterns, redact } from "../core/redact";
import { exemptExact, SECRET_PATTERNS, scanText, type SecretPattern } from "../core/secrets";
import { branchPrefix, isCiPath, isProtectedBranch, mayPushTo } from "../core/bridge-settings";
import { changedPaths, createdMarker, defaultBranchOf, isAncestor, MissingObject, readRef, remoteGit, updateRefs, type KnownTips } from "./gate";
import { gateReader, type Gate } from "./gate-git";
import { closeVerdict, giveVerdict, hookRefsReader, openVerdict, type HookRef, type Verdict } from "./gate-hook";
import { scanNew, type PushScan } from "./gate-scan";
import { notAllowed, type Job, type Outcome } from "./job";
import { isSafeRefName, type GitPlan } from "./git-policy";
import { formatGateFindings } from "./scan";

/** A push's job: the request's, with what the server made ready for it before the policy's answer. */
export interface PushJob extends Job {
  plan: GitPlan;
  /** Puts the sandbox's pack into the gate (started at the first call; the same promise after). */
  indexing: () => Promise<void>;
  /** Tips the host and the gate know, per remote (what the scan need not walk), and the gate's tracking refs (read at the first call). */
  tips: () => Promise<KnownTips>;
  /** The push's verdict FIFO, made ahead. */
  takeVerdict: () => Promise<Verdict>;
  /** The forge token for this remote, when it gets one. */
  token: string | undefined;
}

/** One ref a push updates: from the sandbox's source (its sha; null: a deletion) to `dst`. */
interface Target {
  src: string;
  dst: string;
  sha: string | null;
  force: boolean;
}

/** Whether the plan's options name `name`. */
export function opt(plan: GitPlan, name: string): boolean {
  return plan.options.some(([n]) => n === name);
}

/** Rewrites git's "<full sha> -> dst" (the gate pushes object ids) to "<name> -> dst", line by line. */
export function pushOutputRewriter(names: ReadonlyMap<string, string>, emit: (s: string) => void, forced?: ReadonlyMap<string, boolean>): { write(s: string): void; end(): void } {
  let buf = "";
  const fix = (s: string) => {
    for (const [sha, name] of names) s = s.split(`${sha} -> `).join(`${name} -> `);
    // The early push forces every ref; where the sandbox did not, and the bridge found a fast-forward,
    // the report says so as git would have ("a..b", not "+ a...b (forced update)").
    if (forced) {
      s = s.replace(/^ \+ ([0-9a-f]+)\.\.\.([0-9a-f]+)( +)(.* -> )(\S+) \(forced update\)$/gm, (line, a: string, b: string, pad: string, mid: string, dst: string) =>
        forced.get(dst) === false ? `   ${a}..${b}${pad} ${mid}${dst}` : line,
      );
    }
    return s;
  };
  return {
    write(s) {
      buf += s;
      const cut = Math.max(buf.lastIndexOf("\n"), buf.lastIndexOf("\r"));
      if (cut === -1) return;
      emit(fix(buf.slice(0, cut + 1)));
      buf = buf.slice(cut + 1);
    },
    end() {
      if (buf) emit(fix(buf));
      buf = "";
    },
  };
}

function shortRef(ref: string): string {
  return ref.replace(/^refs\/(heads|tags)\//, "");
}

/**
 * A push: `git push` from the gate starts at once (while the sandbox's pack is still being indexed in the
 * gate), and the gate's pre-push hook holds it (after the remote's ref advertisement, before any object
 * leaves) until the verdict: the secret scan (which is also the completeness check) passed, and every ref
 * is a fast-forward of what the remote has or the sandbox forced it. A refusal aborts it there.
 */
export async function push(p: PushJob): Promise<Outcome> {
  const t = await pushTargets(p);
  p.deps.trace?.("targets decided");
  return "out" in t ? runPush(p, t.out, t.hostValues) : t;
}

/**
 * Which refs the push updates, or its refusal: a source the shim did not resolve, a ref name that holds a secret, a
 * ref outside the sandbox's prefix (asked as a pending approval), a forced push to a protected branch, deleting what
 * this sandbox did not create.
 */
async function pushTargets(p: PushJob): Promise<{ out: Target[]; hostValues: SecretPattern[] } | Outcome> {
  const { gate: g, plan, req, refuse, deps } = p;
  const remote = plan.remote!;
  let specs = plan.refspecs;
  if (specs.length === 0) {
    if (!req.branch || !isSafeRefName(req.branch)) return refuse("no branch to push: name one (git push origin <branch>)");
    specs = [{ force: false, src: req.branch, dst: `refs/heads/${req.branch}` }];
  }
  if (plan.namedRemote) p.send({ t: "err", d: `sbx: this sandbox's pushes go to ${remote} (${plan.url}), not ${plan.namedRemote}: sbx bridge ${deps.sandbox.name} --push-remote\n` });
  const force = opt(plan, "--force");
  const lease = opt(plan, "--force-with-lease");
  const out: Target[] = [];
  for (const s of specs) {
    if (s.src === "") {
      out.push({ src: "", dst: s.dst, sha: null, force: false });
      continue;
    }
    const r = req.resolved?.[s.src];
    if (!r) return refuse(`the shim did not say what ${s.src} is`);
    let dst = s.dst;
    // `git push origin v1` where v1 is a tag: git's default destination is the ref the source is.
    if (s.sameAsSource && r.ref === `refs/tags/${s.src}` && isSafeRefName(r.ref)) dst = r.ref;
    if (dst === "") {
      if (!r.ref || !/^refs\/heads\//.test(r.ref) || !isSafeRefName(r.ref)) return refuse(`cannot tell where to push ${s.src}; use <src>:<branch>`);
      dst = r.ref;
    }
    out.push({ src: s.src, dst, sha: r.sha, force: s.force || force });
  }
  // Ref names are the sandbox's text too, and a remote shows them to anyone who can read it.
  const hostValues = hostSecretPatterns(deps.secrets());
  const refPatterns = exemptExact([...SECRET_PATTERNS, ...hostValues], deps.placeholders?.() ?? []);
  for (const o of out) {
    const f = scanText(o.dst, "ref name", refPatterns)[0];
    if (f) return refuse(`the ref name ${JSON.stringify(redact(o.dst, Object.values(deps.secrets())))} contains what looks like a secret (${f.description}); push to another name`);
  }
  // Its own branches are under its prefix (sbx/<name>/); a branch or tag outside it (main, a release tag, a colleague's
  // branch) asks first: refused now, recorded as a pending approval, allowed by the user for the next push.
  const settings = p.settings;
  const outside = out.filter((o) => o.sha !== null && !mayPushTo(shortRef(o.dst), settings, deps.sandbox.name));
  if (outside.length > 0) {
    const prefix = branchPrefix(settings, deps.sandbox.name);
    const asked = outside.map((o) => ({ ref: shortRef(o.dst), src: o.src, approval: deps.ask?.({ kind: "push", ref: shortRef(o.dst) }, `a push to ${shortRef(o.dst)} on ${remote}, outside ${prefix}`) ?? null }));
    const first = asked[0]!;
    const approvals = asked.flatMap((a) => (a.approval === null ? [] : [a.approval]));
    const ids = approvals.map((a) => a.id);
    const refused = refuse(
      `this sandbox pushes to branches under ${prefix} without asking; ${asked.map((a) => a.ref).join(", ")} ${asked.length === 1 ? "is" : "are"} outside it.\n` +
        `Push there instead: git push ${remote} ${first.src}:${prefix}${first.ref}\n` +
        (ids.length > 0 ? `Or ask the user to approve it: approval ${ids.join(", ")} is waiting (sbx approvals allow ${ids[0]} on the host, the dashboard, or /approve ${ids[0]} in chat); then push again.\n` : "") +
        `The user can also allow it for this sandbox: sbx bridge ${deps.sandbox.name} --allow-push ${first.ref}`,
    );
    return approvals[0] ? { ...refused, approval: approvals[0] } : refused;
  }
  // What the user protects, decided before anything goes out: forced updates of protected branches, deleting what this
  // sandbox did not create (CI files are checked once the commits are in, below).
  const allowed = new Set(settings.allow);
  // A forced update or a deletion of a protected branch: what force-push lifts (--allow delete alone does not).
  if (!allowed.has("force-push") && (lease || out.some((o) => o.force || o.sha === null))) {
    const def = await defaultBranchOf(g, remote);
    for (const o of out) {
      if (!(o.force || lease || o.sha === null) || !o.dst.startsWith("refs/heads/")) continue;
      const b = o.dst.slice("refs/heads/".length);
      const what = o.sha === null ? "deleting" : "a forced push to";
      if (isProtectedBranch(b, def, settings)) return refuse(notAllowed(`${what} ${b} (protected${b.toLowerCase() === def?.toLowerCase() ? ": the default branch" : ""}) is refused`, "force-push", deps.sandbox.name));
    }
  }
  if (!allowed.has("delete")) {
    for (const o of out) {
      if (o.sha !== null) continue;
      if (!(await readRef(g, createdMarker(remote, o.dst)))) return refuse(notAllowed(`deleting ${shortRef(o.dst)} on ${remote}, which this sandbox did not create, is refused`, "delete", deps.sandbox.name));
    }
  }
  return { out, hostValues };
}

/** The gate's `git push` argv (the options that pass, a lease per ref) and refspecs, and how its report names each sha. */
async function gateCommand(p: PushJob, out: readonly Target[], lease: boolean): Promise<{ args: string[]; names: Map<string, string>; refspecs: string[] }> {
  const { gate: g, plan } = p;
  const remote = plan.remote!;
  const args = ["push"];
  for (const [n, v] of plan.options) {
    if (["--quiet", "--verbose", "--progress", "--no-progress", "--atomic", "--no-atomic", "--dry-run", "--ipv4", "--ipv6", "--thin", "--no-thin"].includes(n)) args.push(n);
    else if (n === "--push-option") args.push(`--push-option=${v}`);
  }
  // The gate pushes object ids (no gate-local branch is written before the scan); git's report names
  // them as the sandbox did, as if "feature -> feature".
  const names = new Map<string, string>();
  const refspecs: string[] = [];
  for (const o of out) {
    if (o.sha === null) {
      refspecs.push(`:${o.dst}`);
      continue;
    }
    names.set(o.sha, shortRef(o.dst));
    if (lease) {
      const tracking = trackingRef(remote, o.dst);
      const expect = tracking ? await readRef(g, tracking) : undefined;
      args.push(expect ? `--force-with-lease=${o.dst}:${expect}` : `--force-with-lease=${o.dst}:`);
    }
    refspecs.push(`${o.force && !lease ? "+" : ""}${o.sha}:${o.dst}`);
  }
  return { args, names, refspecs };
}

/** Runs the push from the gate: at once (held at its hook) while the pack is indexed and scanned, then the verdict. */
async function runPush(p: PushJob, out: Target[], hostValues: SecretPattern[]): Promise<Outcome> {
  const { gate: g, plan, takeVerdict, token, send, refuse, deps } = p;
  const remote = plan.remote!;
  const lease = opt(plan, "--force-with-lease");
  const allowed = new Set(p.settings.allow);
  const shas = [...new Set(out.flatMap((o) => (o.sha ? [o.sha] : [])))];
  const { args, names, refspecs } = await gateCommand(p, out, lease);
  const incomplete = (e: unknown) =>
    refuse(e instanceof MissingObject ? missingText(e) : `the commits to push did not arrive complete in the gate (${(e instanceof Error ? e.message : String(e)).split("\n")[0]})`);
  const pushArgs = (specs: string[]) => [...args, plan.url, ...specs];
  // What the remote had before (the pre-push hook says), to record the refs this push creates.
  let before: Promise<HookRef[]> = Promise.resolve([]);
  const finish = async (r: ExecResult, stderr: { end(): void }): Promise<Outcome> => {
    stderr.end();
    if (r.stdout) {
      const o = pushOutputRewriter(names, (d) => send({ t: "out", d }));
      o.write(r.stdout);
      o.end();
    }
    if (r.exitCode === 0 && !opt(plan, "--dry-run")) {
      send({ t: "pushed", remote, updates: out.map((o) => ({ dst: o.dst, sha: o.sha })) });
      const tracking = out.flatMap((o): Array<[string, string | null]> => {
        const t = trackingRef(remote, o.dst);
        return t ? [[t, o.sha]] : [];
      });
      const had = await Promise.race([before, Promise.resolve([] as HookRef[])]);
      const created = out.flatMap((o): Array<[string, string | null]> => {
        if (o.sha === null) return [[createdMarker(remote, o.dst), null]];
        const h = had.find((x) => x.remoteRef === o.dst);
        return h && /^0+$/.test(h.remoteSha) ? [[createdMarker(remote, o.dst), o.sha]] : [];
      });
      const note = await firstPushNote(g, out, deps.sandbox.name, p.settings.pushRemote !== null).catch(() => undefined);
      if (note) send({ t: "err", d: note.map((l) => `sbx: note: ${l}\n`).join("") });
      return { decision: "allowed", exitCode: 0, ...(note ? { note: note.join("\n") } : {}), after: () => updateRefs(g, [...tracking, ...created]) };
    }
    return { decision: "allowed", exitCode: r.exitCode };
  };
  if (shas.length === 0) {
    // Deletions only: nothing to scan, nothing to hold.
    const stderr = pushOutputRewriter(names, (d) => send({ t: "err", d }));
    return finish(await remoteGit(g, plan.url, token, pushArgs(refspecs), (s) => stderr.write(s)), stderr);
  }
  // The early push: started before the pack is even indexed, so its connection, authentication and the
  // remote's ref advertisement overlap the pack's arrival, indexing and scan. git's own fast-forward check
  // (which needs the new commits, before the hook) is switched off with `+`; the bridge does it instead,
  // at the hook, against the remote's values the hook reports, and the push carries those values as the
  // old ones, so the remote refuses it if a ref moved meanwhile. A lease or a dry run takes the plain way.
  const earlyPush = !lease && !opt(plan, "--dry-run");
  const verdict = await takeVerdict();
  deps.trace?.("verdict channel ready");
  // Until the verdict, the push's output is held back: a refused push says only why it was refused.
  let held: string[] | undefined = [];
  let dropped = false;
  let stderr = pushOutputRewriter(names, (d) => send({ t: "err", d }), earlyPush ? forcedBy(out) : undefined);
  const reader = hookRefsReader(verdict.nonce, (s) => {
    if (dropped) return;
    if (held) held.push(s);
    else stderr.write(s);
  });
  before = reader.refs;
  const trace = deps.trace ?? (() => undefined);
  if (deps.trace) void reader.refs.then(() => trace("hook reached (the remote's refs are in)"));
  let pushing: Promise<ExecResult> | undefined;
  const startPush = () => (trace("gate push started"), pushing = remoteGit(g, plan.url, token, pushArgs(earlyPush ? refspecs.map((r) => (r.startsWith("+") || r.startsWith(":") ? r : `+${r}`)) : refspecs), (s) => reader.write(s), undefined, verdict));
  let ok = false;
  let refusal: Outcome | undefined;
  let failure: unknown;
  let ffOk = true;
  try {
    if (earlyPush) {
      startPush();
      await deps.faults?.afterPushStarted?.(verdict);
    }
    // The pack's indexing and the ref reads start only now, after the gate's push: they compete with it for the CPU.
    const [indexing, tipsP] = [p.indexing(), p.tips()];
    try {
      await indexing;
      trace("pack indexed");
    } catch (e) {
      refusal = incomplete(e);
    }
    if (!refusal) {
      if (!pushing) {
        startPush();
        await deps.faults?.afterPushStarted?.(verdict);
      }
      const known = await tipsP;
      const tips = known.of(remote);
      // One walk: scanNew fails on any missing commit, new tree or changed blob (the completeness check).
      // The fast-forward check of the early push runs beside it, once the hook has said what the remote has. With one
      // commit pushed, the walk also says whether the branches' last known tips are in its history: a fast-forward from
      // one of those (the common case: the sandbox's own last push) then needs no process after the hook.
      const ended = pushing!.then(() => [] as HookRef[]);
      const scanP = scanNew(g, shas, tips, hostValues, p.deps.placeholders?.() ?? [], lastKnownTips(known, remote, out, shas));
      // The CI-file check: the paths the scan's walk read in its diffs' headers; where it cannot say them all (a merge, whose
      // combined diff leaves some out), its own walk of the same commits (`git log --name-only`).
      const ciP = allowed.has("ci-files") ? Promise.resolve([] as string[]) : scanP.then(async (s) => [...(s.paths ?? (await changedPaths(g, shas, tips)))].filter(isCiPath));
      const [scanned, ff, ciPaths] = await Promise.allSettled([scanP, earlyPush ? fastForwardsOnceKnown(g, out, shas, Promise.race([reader.refs, ended]), scanP) : Promise.resolve(true), ciP]);
      trace("scanned, fast-forwards checked");
      const ci = ciPaths.status === "fulfilled" ? ciPaths.value : [];
      if (scanned.status === "rejected") refusal = incomplete(scanned.reason);
      else if (ciPaths.status === "rejected") refusal = incomplete(ciPaths.reason);
      else if (scanned.value.over !== undefined) refusal = refuse(scanned.value.over);
      else if (scanned.value.findings.length > 0) {
        refusal = refuse(`the commits contain what looks like a secret:\n${formatGateFindings(scanned.value.findings, scanned.value.more)}\nRemove it from history (git rebase -i / git commit --amend) and push again.`);
      } else if (ci.length > 0) {
        refusal = refuse(notAllowed(`the commits change CI or automation files (${ci.slice(0, 5).join(", ")}${ci.length > 5 ? ", …" : ""}), which run with the repository's own credentials`, "ci-files", deps.sandbox.name));
      } else {
        ffOk = ff.status === "fulfilled" && ff.value;
        ok = true;
      }
    }
  } catch (e) {
    failure = e;
  } finally {
    if (!ok || !ffOk) dropped = true;
    try {
      giveVerdict(verdict, ok && ffOk);
    } catch {}
    if (ok && ffOk) {
      const early = held ?? [];
      held = undefined;
      for (const s of early) stderr.write(s);
    }
  }
  if (!ok || !ffOk) {
    await pushing;
    closeVerdict(verdict);
    if (!ok) {
      if (refusal) return refusal;
      throw failure;
    }
    // Clean, but not a fast-forward where the sandbox did not force (or a tag the remote has, or a tip
    // the gate cannot see): the plain push, so git itself refuses or pushes each ref as it would have.
    const again = await openVerdict(g);
    stderr = pushOutputRewriter(names, (d) => send({ t: "err", d }));
    const plain = hookRefsReader(again.nonce, (s) => stderr.write(s));
    before = plain.refs;
    giveVerdict(again, true);
    const r = await remoteGit(g, plan.url, token, pushArgs(refspecs), (s) => plain.write(s), undefined, again);
    closeVerdict(again);
    plain.end();
    return finish(r, stderr);
  }
  const r = await pushing!;
  trace("gate push done");
  closeVerdict(verdict);
  reader.end();
  return finish(r, stderr);
}

/**
 * Pure: a person's (and an agent's) words for a push that needs what it did not send and cannot see: the gate sees the
 * host repo's own objects and this sandbox's own synced commits, never another sandbox's or a removed one's
 * (sandboxes-apart), so a commit built on one, or a tree naming one's file, is not pushed through this sandbox.
 */
export function missingText(m: MissingObject): string {
  const why = "a push carries what this sandbox sends, the host repository's own objects and this sandbox's own synced commits, never another sandbox's (or a removed sandbox's) work";
  const then = "Push commits made here or on the person's branches; if it is on a branch the person just made, push again once sbx has synced it.";
  if (m.kind === "delta bases") return `the pack sent for this push has ${m.oid} delta${m.oid === "1" ? "" : "s"} against objects it did not send and this sandbox cannot see: ${why}.\n${then}`;
  return `this push needs ${m.kind} ${m.oid}${m.of ? ` (a parent of ${m.of})` : ""}, which it did not send and this sandbox cannot see: ${why}.\n${then}`;
}

/**
 * The sandbox's first push (once per gate): which CI workflows its pushed branches and tags start on the forge, with the
 * repository's secrets (read from the pushed commits, which are what the forge runs), and the two ways out. Nothing when
 * its pushes go to a fork (`--push-remote`), or nothing runs.
 */
async function firstPushNote(g: Gate, out: ReadonlyArray<{ dst: string; sha: string | null }>, name: string, toFork: boolean): Promise<string[] | undefined> {
  if (existsSync(g.paths.pushNoted)) return undefined;
  const noted = () => writeFileSync(g.paths.pushNoted, `${new Date().toISOString()}\n`, { mode: 0o600 });
  if (toFork) {
    noted();
    return undefined;
  }
  const hits = new Map<string, string>();
  const other = new Set<string>();
  const reader = gateReader(g);
  for (const o of out.slice(0, 8)) {
    if (o.sha === null) continue;
    const ref: PushRef = o.dst.startsWith("refs/tags/") ? { kind: "tag", name: o.dst.slice("refs/tags/".length) } : { kind: "branch", name: shortRef(o.dst) };
    const w = await pushWorkflows(reader, o.sha, [ref], true);
    for (const h of w.hits) if (!hits.has(h.path)) hits.set(h.path, h.why);
    for (const p of w.other) other.add(p);
  }
  const note = pushWorkflowNote([...hits].map(([path, why]) => ({ path, why })), [...other], name);
  noted();
  return note.length ? note : undefined;
}

/** Per destination ref: did the sandbox ask for a forced update? (The early push forces them all.) */
function forcedBy(out: ReadonlyArray<{ dst: string; force: boolean }>): Map<string, boolean> {
  return new Map(out.map((o) => [shortRef(o.dst), o.force]));
}

/** With one commit pushed: where the gate last saw the branches it updates without force (what the scan looks for). */
function lastKnownTips(known: KnownTips, remote: string, out: readonly Target[], shas: readonly string[]): string[] {
  if (shas.length !== 1) return [];
  return [...new Set(out.flatMap((o) => (o.sha && !o.force ? [known.tracking(remote, o.dst)] : [])).filter((x): x is string => x !== undefined))];
}

/**
 * The early push's fast-forward check, once the hook has said what the remote has: from what the scan's walk reached
 * when the scan is done by then (one commit pushed), else as fastForwards asks git.
 */
function fastForwardsOnceKnown(g: Gate, out: readonly Target[], shas: readonly string[], refsP: Promise<HookRef[]>, scanP: Promise<PushScan>): Promise<boolean> {
  let scanned: PushScan | undefined;
  scanP.then((r) => (scanned = r), () => undefined);
  return refsP.then((refs) => fastForwards(g, out, refs, scanned && shas.length === 1 ? { sha: shas[0]!, history: scanned.reached } : undefined));
}

/**
 * git's fast-forward rules for the refs the early push (all forced) would update, against what the remote
 * has now (from the pre-push hook): a new ref is fine; an existing tag, or a branch whose remote tip the
 * gate lacks or the new commit does not contain, needs the sandbox's own --force (or `+`).
 * `known`: commits the scan's walk showed to be in `sha`'s history (as a commit it walked, or the parent of one), which
 * need no process to tell.
 * runs: git merge-base --is-ancestor <remote tip> <new> (in the gate, once per updated branch `known` does not answer)
 */
export async function fastForwards(g: Gate, out: ReadonlyArray<{ dst: string; sha: string | null; force: boolean }>, refs: readonly HookRef[], known?: { sha: string; history: ReadonlySet<string> }): Promise<boolean> {
  const checks = refs.map(async (h) => {
    const o = out.find((x) => x.dst === h.remoteRef);
    if (!o) return false;
    if (o.force || o.sha === null || /^0+$/.test(h.remoteSha) || h.remoteSha === o.sha) return true;
    if (!o.dst.startsWith("refs/heads/")) return false;
    if (known && o.sha === known.sha && known.history.has(h.remoteSha)) return true;
    return isAncestor(g, h.remoteSha, o.sha);
  });
  return (await Promise.all(checks)).every(Boolean);
}

function trackingRef(remote: string, dst: string): string | undefined {
  return dst.startsWith("refs/heads/") ? `refs/remotes/${remote}/${dst.slice("refs/heads/".length)}` : undefined;
}
