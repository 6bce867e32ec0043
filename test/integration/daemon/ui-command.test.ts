// sbx ui against a real daemon: the opener gets only a 0600 page's path (no secret on any argv), the page is gone after the browser used it; --print links work once; status shows the origin only.
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { renderLaunchPage, openerArgv } from "../../../src/ui/launch";
import { CLI, type DaemonProc, killDaemonProc, makeWorld, startDaemonProc, type World } from "../../support/daemon-proc";

let w: World | undefined;
let d: DaemonProc | undefined;
afterEach(async () => {
  await killDaemonProc(d);
  d = undefined;
  w?.cleanup();
  w = undefined;
});

function sbx(world: World, ...args: string[]) {
  const p = Bun.spawn([process.execPath, CLI, ...args], { env: world.env, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  return {
    done: Promise.all([p.exited, new Response(p.stdout).text(), new Response(p.stderr).text()]).then(([code, stdout, stderr]) => ({ code, stdout, stderr })),
  };
}

/**
 * An xdg-open that records its argv, the page's mode and a copy of the page, then exits 0 (as xdg-open does once
 * it has handed the file to a browser). `behave=fail` makes it exit 3 instead (xdg-open: "a required tool could not be found").
 */
function fakeOpener(world: World, behave: "ok" | "fail" = "ok"): string {
  const bin = join(world.root, "bin");
  mkdirSync(bin, { recursive: true });
  const rec = join(world.root, "opener");
  mkdirSync(rec);
  writeFileSync(
    join(bin, "xdg-open"),
    `#!/bin/sh
printf '%s\\n' "$0" "$@" > "${rec}/argv"
cat "/proc/$$/cmdline" | tr '\\0' '\\n' > "${rec}/cmdline"
stat -c %a "$1" > "${rec}/mode"
cat "$1" > "${rec}/page.tmp" && mv "${rec}/page.tmp" "${rec}/page"
${behave === "fail" ? "exit 3" : "exit 0"}
`,
    { mode: 0o755 },
  );
  world.env.PATH = `${bin}:${world.env.PATH}`;
  return rec;
}

async function until(pred: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(25);
  }
}

describe("launch page and opener (pure)", () => {
  test("the page redirects at once without script, escapes the URL, and sends no Referer", () => {
    expect(renderLaunchPage('http://127.0.0.1:1/?ticket=a&b"<')).toBe(
      [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="referrer" content="no-referrer">',
        '<meta http-equiv="refresh" content="0;url=http://127.0.0.1:1/?ticket=a&amp;b&quot;&lt;">',
        "<title>sbx dashboard</title></head>",
        '<body><p>Opening the sbx dashboard… <a href="http://127.0.0.1:1/?ticket=a&amp;b&quot;&lt;">continue</a></p></body></html>',
        "",
      ].join("\n"),
    );
    expect(openerArgv("linux", "/run/x.html")).toEqual(["xdg-open", "/run/x.html"]);
    expect(openerArgv("darwin", "/run/x.html")).toEqual(["open", "/run/x.html"]);
    expect(openerArgv("win32", "/x")).toBeNull();
  });
});

describe("sbx ui", () => {
  test("the opener sees only the path of a 0600 page; the page is removed once the browser used its single-use link", async () => {
    w = makeWorld();
    const rec = fakeOpener(w);
    d = await startDaemonProc(w);
    const run = sbx(w, "ui");
    await until(() => existsSync(join(rec, "page")), "the opener to run");
    const argv = readFileSync(join(rec, "argv"), "utf8").trim().split("\n");
    expect(argv).toHaveLength(2);
    const page = argv[1]!;
    expect(page.startsWith(`${w.paths.runtimeDir}/`)).toBe(true);
    expect(page).toMatch(/\.html$/);
    expect(readFileSync(join(rec, "mode"), "utf8").trim()).toBe("600");
    const url = /url=([^"]+)"/.exec(readFileSync(join(rec, "page"), "utf8"))![1]!.replace(/&amp;/g, "&");
    const ticket = new URL(url).searchParams.get("ticket")!;
    expect(ticket.length).toBeGreaterThan(20);
    // Nothing secret on the opener's argv (what `ps` shows other users).
    expect(readFileSync(join(rec, "cmdline"), "utf8")).not.toContain(ticket);
    expect(argv.join(" ")).not.toContain("ticket");
    // Until a browser uses the link, sbx ui waits and the page stays.
    await Bun.sleep(300);
    expect(existsSync(page)).toBe(true);

    // The "browser": follows the page's link once.
    const res = await fetch(url, { redirect: "manual" });
    expect(res.status).toBe(303);
    const r = await run.done;
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("dashboard open: http://127.0.0.1:");
    expect(existsSync(page)).toBe(false);
    expect(readdirSync(w.paths.runtimeDir).filter((f) => f.startsWith("ui-launch-"))).toEqual([]);
    expect(r.stdout + r.stderr).not.toContain(ticket);
    // Used: the same link is dead.
    expect((await fetch(url, { redirect: "manual" })).status).toBe(401);
    expect(d.log()).not.toContain(ticket);
  }, 30_000);

  test("an opener that fails: exit 69 with a hint to --print, and the page is removed", async () => {
    w = makeWorld();
    fakeOpener(w, "fail");
    d = await startDaemonProc(w);
    const r = await sbx(w, "ui").done;
    expect(r.code).toBe(69);
    expect(r.stderr).toContain("sbx ui --print");
    expect(readdirSync(w.paths.runtimeDir).filter((f) => f.startsWith("ui-launch-"))).toEqual([]);
  }, 30_000);

  test("--print prints a link that works once; status shows the dashboard's origin without any secret", async () => {
    w = makeWorld();
    d = await startDaemonProc(w);
    const r = await sbx(w, "ui", "--print").done;
    expect(r.code).toBe(0);
    const url = r.stdout.trim();
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?ticket=[A-Za-z0-9_-]{40,}$/);
    expect((await fetch(url, { redirect: "manual" })).status).toBe(303);
    expect((await fetch(url, { redirect: "manual" })).status).toBe(401);

    const st = await sbx(w, "status").done;
    expect(st.code).toBe(0);
    const origin = new URL(url).origin;
    expect(st.stdout).toContain(`dashboard: ${origin}/ (open it with \`sbx ui\`)`);
    expect(st.stdout).toContain("chat: not set up");
    expect(st.stdout).not.toContain("ticket");
    expect(st.stdout).not.toContain("token");
  }, 30_000);
});
