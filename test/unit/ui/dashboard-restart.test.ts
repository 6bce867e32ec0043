// A dashboard tab survives a daemon restart: the new dashboard listens where the last one did and knows its sessions
// (signed with a key kept 0600), while a forged, altered or expired session is still refused.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Sessions, SESSION_MAX_AGE_MS } from "../../../src/ui/auth";
import { startDashboard, type Dashboard } from "../../../src/ui/server";
import { createEventBus } from "../../../src/events/feed";
import { Store } from "../../../src/store/store";

let dir: string;
let store: Store;
const open: Dashboard[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "sbx-dash-"));
  store = new Store(":memory:");
});
afterEach(async () => {
  for (const d of open.splice(0)) await d.close();
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

function start(stateFile = join(dir, "dashboard.json")): Dashboard {
  const d = startDashboard({ source: { store, events: createEventBus() }, token: "t".repeat(40), stateFile });
  open.push(d);
  return d;
}

async function login(d: Dashboard): Promise<string> {
  const res = await fetch(d.launchUrl, { redirect: "manual" });
  return (res.headers.get("set-cookie") ?? "").split(";")[0]!;
}

describe("dashboard across restarts", () => {
  test("signed sessions: the same key finds them again, another key or any change does not, and they expire", () => {
    let now = 1_000_000;
    const a = new Sessions("k".repeat(43), () => now);
    const s = a.create();
    const again = new Sessions("k".repeat(43), () => now).find(s.id);
    expect(again).toEqual(s);
    expect(new Sessions("j".repeat(43), () => now).find(s.id)).toBeNull();
    const [nonce, issued, mac] = s.id.split(".");
    expect(a.find(`${nonce}.${Number(issued) - 1}.${mac}`)).toBeNull(); // an older date, same mac
    expect(a.find(`${nonce!.slice(1)}A.${issued}.${mac}`)).toBeNull();
    expect(a.find(`${s.id}x`)).toBeNull();
    expect(a.find("")).toBeNull();
    now += SESSION_MAX_AGE_MS + 1;
    expect(a.find(s.id)).toBeNull();
  });

  test("a restarted dashboard listens on the same port and an open tab's cookie still works; the state file is 0600", async () => {
    const first = start();
    const cookie = await login(first);
    expect((await fetch(new URL("/api/state", first.origin), { headers: { cookie } })).status).toBe(200);
    const port = first.port;
    await first.close();
    open.splice(0);
    const second = start();
    expect(second.port).toBe(port);
    expect((await fetch(new URL("/api/state", second.origin), { headers: { cookie } })).status).toBe(200);
    expect(statSync(join(dir, "dashboard.json")).mode & 0o777).toBe(0o600);
  });

  test("when the last port is taken now, the dashboard takes another, and a dashboard without a state file shares nothing", async () => {
    const first = start();
    const cookie = await login(first);
    // `first` still holds its port: the second (same state file) cannot have it.
    const second = start();
    expect(second.port).not.toBe(first.port);
    expect((await fetch(new URL("/api/state", second.origin), { headers: { cookie } })).status).toBe(200);
    const loose = startDashboard({ source: { store, events: createEventBus() }, token: "t".repeat(40) });
    open.push(loose);
    expect((await fetch(new URL("/api/state", loose.origin), { headers: { cookie } })).status).toBe(401);
  });
});
