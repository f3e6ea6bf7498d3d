// Live reload for `python -m builder serve`. Added to pages by the preview server at serve time;
// never part of a built site. Long-polls the server; reloads this page once a rebuild that changed
// it has finished (keeping the scroll position) and shows build problems in an overlay.
(() => {
  "use strict";
  const script = document.currentScript;
  if (!script || window.__livereload) return;
  window.__livereload = true;
  const server = script.dataset.server;
  const path = location.pathname;
  const scrollKey = "livereload-scroll:" + path;
  let since = Number(script.dataset.epoch);
  let first = script.dataset.broken === "1";

  // The position still being restored, if any: a reload that comes before it sticks (a second
  // rebuild touching this page) must carry it on, not the clamped position of a half-laid-out page.
  let restoring = null;
  const saved = sessionStorage.getItem(scrollKey);
  if (saved) {
    sessionStorage.removeItem(scrollKey);
    const [x, y] = JSON.parse(saved);
    restoring = [x, y];
    if ("scrollRestoration" in history) history.scrollRestoration = "manual";
    // The page may still be growing (styles, fonts, late layout, a machine busy rebuilding): keep
    // restoring until the position sticks, for up to 10 s, but never against the reader: any
    // scrolling of their own ends it.
    const until = performance.now() + 10000;
    let mine = false;
    const stop = () => { mine = true; restoring = null; };
    for (const type of ["wheel", "touchstart", "keydown", "mousedown"]) {
      window.addEventListener(type, stop, { once: true, passive: true });
    }
    const restore = () => {
      if (mine) return;
      window.scrollTo(x, y);
      if (Math.abs(window.scrollY - y) < 1 || performance.now() >= until) restoring = null;
      else requestAnimationFrame(restore);
    };
    restore();
    window.addEventListener("load", restore, { once: true });
  }

  function reload() {
    sessionStorage.setItem(scrollKey, JSON.stringify(restoring || [window.scrollX, window.scrollY]));
    location.reload();
  }

  const OVERLAY_ID = "__livereload-overlay";

  function hideOverlay() {
    const old = document.getElementById(OVERLAY_ID);
    if (old) old.remove();
  }

  // Built with DOM calls and textContent only: a message is data, never markup. A shadow root
  // keeps the page's own styles off the overlay (and the overlay's off the page).
  function el(tag, css, text) {
    const node = document.createElement(tag);
    if (css) node.style.cssText = css;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function showOverlay(problems) {
    hideOverlay();
    const host = el("div", "position:fixed;inset:0;z-index:2147483647;");
    host.id = OVERLAY_ID;
    const root = host.attachShadow({ mode: "open" });
    const backdrop = el(
      "div",
      "position:absolute;inset:0;overflow:auto;padding:3rem 1rem;box-sizing:border-box;background:rgba(0,0,0,.55);"
    );
    const panel = el(
      "div",
      "max-width:60rem;margin:0 auto;padding:1.5rem 1.75rem;border-radius:8px;border-top:6px solid #e5484d;" +
        "background:#1b1b1f;color:#ececec;box-shadow:0 12px 40px rgba(0,0,0,.5);" +
        "font:15px/1.5 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;"
    );
    panel.setAttribute("role", "alertdialog");
    panel.setAttribute("aria-labelledby", "title");
    const title = el("h2", "margin:0 0 .25rem;color:#ff6369;font-size:1.15rem;", "Build failed");
    title.id = "title";
    const hint = el(
      "p",
      "margin:0 0 1.25rem;color:#a0a0a8;",
      "Still showing the last good build. Fix the problem and save: this goes away by itself."
    );
    const list = el("ul", "list-style:none;margin:0;padding:0;");
    for (const p of problems) {
      const item = el(
        "li",
        "margin:0 0 .75rem;padding:.6rem .8rem;border-left:3px solid #e5484d;background:#26262c;white-space:pre-wrap;overflow-wrap:anywhere;"
      );
      item.className = "livereload-problem";
      const where = el("strong", "color:#ffd166;", p.line == null ? p.path : p.path + ":" + p.line);
      where.className = "livereload-where";
      const message = el("span", "", p.message);
      message.className = "livereload-message";
      item.append(where, document.createTextNode("  "), message);
      list.append(item);
    }
    const close = el(
      "button",
      "margin-top:.5rem;font:inherit;padding:.3rem .9rem;cursor:pointer;border:1px solid #55555c;border-radius:4px;background:#2c2c33;color:#ececec;",
      "Dismiss"
    );
    close.type = "button";
    close.addEventListener("click", hideOverlay);
    panel.append(title, hint, list, close);
    backdrop.append(panel);
    root.append(backdrop);
    document.documentElement.append(host);
    close.focus({ preventScroll: true });
  }

  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  async function poll() {
    let backoff = 250;
    for (;;) {
      const timeout = first ? 0 : 25;
      const url =
        "/__livereload/poll?since=" + since + "&timeout=" + timeout + "&path=" + encodeURIComponent(path);
      let state;
      try {
        const response = await fetch(url, { cache: "no-store" });
        if (!response.ok) throw new Error("HTTP " + response.status);
        state = await response.json();
      } catch (err) {
        await sleep(backoff); // the server is restarting or gone: try again, gently
        backoff = Math.min(backoff * 2, 5000);
        continue;
      }
      backoff = 250;
      // Redraw only on news, so a dismissed overlay stays away until the next rebuild.
      const fresh = first || state.epoch !== since;
      first = false;
      if (state.server !== server || state.reload) {
        reload();
        return;
      }
      since = state.epoch;
      if (!fresh) continue;
      if (state.problems.length) showOverlay(state.problems);
      else hideOverlay();
    }
  }

  poll();
})();
