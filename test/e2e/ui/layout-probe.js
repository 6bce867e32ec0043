// Test-only, runs in the dashboard's page (added by playwright as an init script): measures what a person on a small screen would meet. Plain browser JS, as the project's tsconfig has no DOM types.
"use strict";

window.sbxLayout = {
  /** The page's width against the viewport's, and whether the page hides its own overflow (which is not fitting). */
  page() {
    return {
      scrollWidth: document.documentElement.scrollWidth,
      innerWidth: window.innerWidth,
      overflowX: [getComputedStyle(document.documentElement).overflowX, getComputedStyle(document.body).overflowX],
    };
  },

  /** Every visible piece of text whose line boxes leave the viewport or a box that clips or scrolls it, or that is under 14 px. */
  textProblems() {
    const out = [];
    const W = document.documentElement.clientWidth;
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const text = (n.textContent || "").trim();
      const parent = n.parentElement;
      if (!text || !parent || !parent.checkVisibility() || parent.closest(".sr-only, .skip")) continue;
      const size = Number.parseFloat(getComputedStyle(parent).fontSize);
      if (size < 14) out.push(size + "px: " + text.slice(0, 60));
      let left = 0;
      let right = W;
      for (let a = parent; a && a !== document.body; a = a.parentElement) {
        if (getComputedStyle(a).overflowX === "visible") continue;
        const r = a.getBoundingClientRect();
        left = Math.max(left, r.left);
        right = Math.min(right, r.right);
      }
      const range = document.createRange();
      range.selectNodeContents(n);
      for (const r of range.getClientRects()) {
        if (r.width === 0) continue;
        if (r.left < left - 0.5 || r.right > right + 0.5) {
          out.push("outside [" + Math.round(left) + ", " + Math.round(right) + "] at [" + Math.round(r.left) + ", " + Math.round(r.right) + "]: " + text.slice(0, 60));
          break;
        }
      }
    }
    return out;
  },

  /** Scrolls a button into view as the browser would to reveal it; where it is then, and how far the page went sideways. */
  reveal(b) {
    b.scrollIntoView({ block: "center", inline: "nearest" });
    const r = b.getBoundingClientRect();
    return { scrollX: window.scrollX, left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width, height: r.height };
  },

  /** Each visible button revealed in turn: what needed sideways scrolling, lies outside the viewport, or is under 44 px. */
  buttonProblems() {
    const out = [];
    const W = document.documentElement.clientWidth;
    const H = window.innerHeight;
    for (const b of document.querySelectorAll("button")) {
      if (!b.checkVisibility()) continue;
      const name = b.getAttribute("aria-label") || b.textContent || "";
      const r = this.reveal(b);
      if (r.scrollX !== 0) out.push("page scrolled sideways by " + r.scrollX + "px to reach: " + name);
      if (r.left < 0 || r.right > W + 0.5 || r.top < 0 || r.bottom > H + 0.5) {
        out.push("outside the " + W + "x" + H + " viewport at [" + [r.left, r.top, r.right, r.bottom].map(Math.round).join(", ") + "]: " + name);
      }
      if (r.height < 44 || r.width < 44) out.push(Math.round(r.width) + "x" + Math.round(r.height) + " px: " + name);
      window.scrollTo(0, 0);
    }
    return out;
  },

  /** The pending table's shape: whether its column headers show, and for each row how many different tops its cells have (1: a row). */
  pendingShape() {
    const head = document.querySelector("#pending-table thead");
    return {
      head: head.checkVisibility() && head.getBoundingClientRect().height > 1,
      tops: [...document.querySelectorAll("#pending-table tbody tr")].map((tr) => new Set([...tr.children].map((td) => Math.round(td.getBoundingClientRect().top))).size),
    };
  },
};
