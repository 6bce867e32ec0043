// sbx dashboard client: renders /api/state, follows /api/events (SSE), and posts decisions with the session's CSRF token.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  let csrf = "";
  let refreshTimer = null;
  const FEED_MAX = 200;

  /** Creates an element with text (never HTML: host names and reasons come from sandboxes). */
  function el(tag, props, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v);
    }
    for (const c of children) if (c !== null && c !== undefined) e.append(c);
    return e;
  }

  function ago(ms, now) {
    const s = Math.max(0, Math.round((now - ms) / 1000));
    if (s < 60) return s + "s";
    if (s < 3600) return Math.floor(s / 60) + "m";
    if (s < 86400) return Math.floor(s / 3600) + "h";
    return Math.floor(s / 86400) + "d";
  }

  function clock(ms) {
    return new Date(ms).toLocaleTimeString([], { hour12: false });
  }

  function target(host, port) {
    return (host.includes(":") ? "[" + host + "]" : host) + ":" + port;
  }

  // What an approval asks for: a host and port, (the bridge's) an operation such as "push feature-x", or more LLM budget.
  function what(a) {
    if (a.kind === "bridge") return "bridge: " + a.host;
    if (a.kind === "budget") return "more " + a.host;
    return target(a.host, a.port);
  }

  async function post(path, body) {
    const res = await fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Sbx-Csrf": csrf },
      body: JSON.stringify(body),
      credentials: "same-origin",
    });
    const json = await res.json().catch(() => ({}));
    if (!res.ok) throw new Error(json.message || "request failed (" + res.status + ")");
    return json;
  }

  function say(text, isError) {
    const r = $("action-result");
    r.textContent = text;
    r.className = isError ? "result error" : "result";
  }

  async function decide(approval, choice, button, lasts) {
    const row = button.closest("tr");
    for (const b of row.querySelectorAll("button")) b.disabled = true;
    try {
      const r = await post("/api/approvals/" + approval.id + "/decide", lasts ? { choice, lasts } : { choice });
      const where = r.scope === "global" ? "every sandbox" : "sandbox " + r.sandbox;
      say(r.action === "allow" ? "Allowed " + r.pattern + " for " + where + (r.lasts ? ", " + r.lasts : "") + "." : "Denied " + what(approval) + " for sandbox " + r.sandbox + ".");
      await refresh();
      const next = document.querySelector("#pending-table tbody button");
      (next || $("pending")).focus();
    } catch (e) {
      say(e.message, true);
      for (const b of row.querySelectorAll("button")) b.disabled = false;
    }
  }

  async function removeEntry(sandboxId, pattern) {
    try {
      await post("/api/allowlist/remove", { sandboxId, pattern });
      say("Removed " + pattern + ".");
      await refresh();
    } catch (e) {
      say(e.message, true);
    }
  }

  function renderPending(state) {
    const tbody = $("pending-table").querySelector("tbody");
    tbody.replaceChildren();
    $("pending-count").textContent = state.pending.length ? "(" + state.pending.length + ")" : "";
    $("pending-empty").hidden = state.pending.length > 0;
    $("pending-table").hidden = state.pending.length === 0;
    for (const a of state.pending) {
      const label = what(a) + " from " + a.sandbox;
      tbody.append(
        el("tr", { "data-approval": String(a.id) },
          el("td", { class: "name", "data-label": "Sandbox", text: a.sandbox }),
          el("td", { class: "mono", "data-label": "Host", text: what(a) }),
          el("td", { class: "why", "data-label": "Why blocked", text: a.reason }),
          el("td", { class: "short", "data-label": "Seen", text: (a.count > 1 ? a.count + "×, last " : "") + ago(a.lastSeen, state.now) + " ago" }),
          el("td", {},
            el("div", { class: "actions" },
              // The primary action is this sandbox's; every sandbox is the explicit second choice (and there is none
              // for the bridge's approvals or a service of the host, which are one sandbox's).
              el("button", { type: "button", class: "primary", "aria-label": "Allow " + label + " for this sandbox", onclick: (ev) => decide(a, "allow-sandbox", ev.currentTarget) }, "Allow for this sandbox"),
              // For a while, or this once: a host only (the bridge's and a host service's are for good or not at all).
              a.sandboxOnly ? null : el("button", { type: "button", "aria-label": "Allow " + label + " for this sandbox for one hour", onclick: (ev) => decide(a, "allow-sandbox", ev.currentTarget, "1h") }, "For 1 hour"),
              a.sandboxOnly ? null : el("button", { type: "button", "aria-label": "Allow " + label + " once", onclick: (ev) => decide(a, "allow-sandbox", ev.currentTarget, "once") }, "Once"),
              a.sandboxOnly ? null : el("button", { type: "button", "aria-label": "Allow " + label + " for every sandbox", onclick: (ev) => decide(a, "allow-global", ev.currentTarget) }, "Allow for every sandbox"),
              el("button", { type: "button", class: "danger", "aria-label": "Deny " + label, onclick: (ev) => decide(a, "deny", ev.currentTarget) }, "Deny"),
            ),
          ),
        ),
      );
    }
  }

  function renderSandboxes(state) {
    const tbody = $("sandboxes-table").querySelector("tbody");
    tbody.replaceChildren();
    $("sandboxes-empty").hidden = state.sandboxes.length > 0;
    $("sandboxes-table").hidden = state.sandboxes.length === 0;
    for (const s of state.sandboxes) {
      tbody.append(
        el("tr", {},
          el("td", { class: "name", "data-label": "Name", text: s.name }),
          el("td", { class: "short state-" + s.state, "data-label": "State", text: s.state }),
          el("td", { class: "mono", "data-label": "Repo", text: s.repo }),
          el("td", { class: "short", "data-label": "Age", text: ago(s.createdAt, state.now) }),
          el("td", { class: "short", "data-label": "Last activity", text: ago(s.lastActivity, state.now) + " ago" }),
          el("td", { class: "short" + (s.llm && s.llm.cap && s.llm.cap.over ? " over" : ""), "data-label": "LLM spend", text: s.llm ? s.llm.line : "-" }),
        ),
      );
    }
  }

  function entryList(entries, sandboxId) {
    if (entries.length === 0) return el("p", { class: "empty", text: "empty" });
    const ul = el("ul", { class: "entries" });
    for (const e of entries) {
      ul.append(
        el("li", {},
          el("code", { text: e.pattern }),
          el("span", { class: "hint", text: " added by " + e.addedBy + (e.once ? ", once" : e.expiresAt ? ", until " + clock(e.expiresAt) : "") }),
          el("button", { type: "button", "aria-label": "Remove " + e.pattern, onclick: () => removeEntry(sandboxId, e.pattern) }, "Remove"),
        ),
      );
    }
    return ul;
  }

  function renderAllowlists(state) {
    const body = $("allowlists-body");
    body.replaceChildren(
      el("h3", { text: "Built in (every sandbox)" }),
      el("ul", { class: "entries" }, ...state.allowlists.builtin.map((p) => el("li", {}, el("code", { text: p })))),
      el("h3", { text: "Global (every sandbox)" }),
      entryList(state.allowlists.global, null),
      ...state.allowlists.sandboxes.flatMap((s) => [el("h3", { text: "Sandbox " + s.name + (s.level ? " (level " + s.level + ")" : "") }), entryList(s.entries, s.id)]),
    );
  }

  function describe(e) {
    if (e.kind === "egress") {
      const what = (e.path === "transparent" ? "transparent " : "") + e.method + " " + target(e.host, e.port);
      return [e.action, e.sandbox.name, what + (e.reason && e.action !== "allowed" ? " — " + e.reason : "")];
    }
    if (e.kind === "bridge") {
      return [e.outcome, e.sandbox.name, e.command.join(" ") + (e.exitCode !== undefined && e.exitCode !== null ? " (exit " + e.exitCode + ")" : "")];
    }
    if (e.kind === "llm") return ["denied", e.sandbox.name, "LLM budget reached: " + (e.detail || "")];
    const where = e.scope === "global" ? "every sandbox" : e.sandbox ? e.sandbox.name : "";
    return [e.action, where, e.pattern + (e.term ? " (" + e.term + ")" : "") + " by " + e.by];
  }

  function feedItem(e) {
    const [tag, who, text] = describe(e);
    return el("li", { "data-kind": e.kind },
      el("time", { datetime: new Date(e.at).toISOString(), text: clock(e.at) }),
      el("span", { class: "tag " + tag, text: e.kind === "decision" ? "decision: " + tag : tag }),
      el("span", { text: who }),
      el("span", { class: "mono", text }),
    );
  }

  function addFeed(e) {
    const feed = $("feed");
    feed.prepend(feedItem(e));
    while (feed.children.length > FEED_MAX) feed.lastElementChild.remove();
  }

  async function refresh() {
    const res = await fetch("/api/state", { credentials: "same-origin" });
    if (res.status === 401) {
      $("connection").textContent = "This session has ended: run `sbx ui` again.";
      return null;
    }
    const state = await res.json();
    csrf = state.csrf;
    renderPending(state);
    renderSandboxes(state);
    renderAllowlists(state);
    return state;
  }

  function scheduleRefresh() {
    if (refreshTimer) return;
    refreshTimer = setTimeout(() => {
      refreshTimer = null;
      refresh().catch(() => undefined);
    }, 150);
  }

  /** The whole page again from /api/state: what changed while the feed was down (a daemon restart) is not missed. */
  async function resync() {
    const state = await refresh();
    if (!state) return false;
    $("feed").replaceChildren();
    for (const e of state.feed) addFeed(e);
    return true;
  }

  /**
   * Follows the feed. The browser retries a dropped stream by itself; one it gave up on (the daemon was down, or
   * answered with an error while it restarted) is opened again here, every few seconds, until the dashboard answers.
   * Each (re)connection brings the page up to date first. A session the dashboard no longer knows says so and stops.
   */
  function follow() {
    let first = true;
    const source = new EventSource("/api/events");
    source.addEventListener("hello", async () => {
      if (!first && !(await resync().catch(() => false))) return;
      first = false;
      $("connection").textContent = "live";
    });
    source.addEventListener("feed", (m) => {
      addFeed(JSON.parse(m.data));
      scheduleRefresh();
    });
    source.addEventListener("error", () => {
      first = false;
      $("connection").textContent = "reconnecting…";
      if (source.readyState !== EventSource.CLOSED) return;
      setTimeout(async () => {
        // Ended (401) is final; anything else (the daemon still starting) tries again.
        const alive = await fetch("/api/state", { credentials: "same-origin" }).then((r) => r.status, () => 0);
        if (alive === 401) {
          $("connection").textContent = "This session has ended: run `sbx ui` again.";
          return;
        }
        if (alive === 200) await resync().catch(() => false);
        follow();
      }, 2000);
    });
  }

  document.addEventListener("DOMContentLoaded", async () => {
    const state = await refresh().catch(() => null);
    if (state) for (const e of state.feed) addFeed(e);
    follow();
  });
})();
