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

  const saved = sessionStorage.getItem(scrollKey);
  if (saved) {
    sessionStorage.removeItem(scrollKey);
    const [x, y] = JSON.parse(saved);
    if ("scrollRestoration" in history) history.scrollRestoration = "manual";
    const restore = () => window.scrollTo(x, y);
    restore();
    window.addEventListener("load", restore, { once: true });
  }

  function reload() {
    sessionStorage.setItem(scrollKey, JSON.stringify([window.scrollX, window.scrollY]));
    location.reload();
  }

  const OVERLAY_ID = "__livereload-overlay";

  function hideOverlay() {
    const old = document.getElementById(OVERLAY_ID);
    if (old) old.remove();
  }

  // Built with DOM calls and textContent only: a message is data, never markup.
  function showOverlay(problems) {
    hideOverlay();
    const box = document.createElement("div");
    box.id = OVERLAY_ID;
    box.setAttribute("role", "alertdialog");
    box.setAttribute("aria-labelledby", OVERLAY_ID + "-title");
    box.style.cssText =
      "position:fixed;inset:0;z-index:2147483647;overflow:auto;padding:2rem;" +
      "background:rgba(20,20,24,.92);color:#f5f5f5;font:15px/1.5 ui-monospace,Menlo,Consolas,monospace;";
    const title = document.createElement("h2");
    title.id = OVERLAY_ID + "-title";
    title.style.cssText = "margin:0 0 .5rem;color:#ff8a80;font-size:1.2rem;";
    title.textContent = "Build failed — still showing the last good build";
    const hint = document.createElement("p");
    hint.style.cssText = "margin:0 0 1rem;color:#bbb;";
    hint.textContent = "Fix the problem and save: this overlay goes away by itself.";
    const list = document.createElement("ul");
    list.style.cssText = "list-style:none;margin:0;padding:0;";
    for (const p of problems) {
      const item = document.createElement("li");
      item.className = "livereload-problem";
      item.style.cssText = "margin:0 0 .75rem;padding:.5rem .75rem;border-left:3px solid #ff8a80;background:rgba(255,255,255,.05);white-space:pre-wrap;";
      const where = document.createElement("strong");
      where.className = "livereload-where";
      where.textContent = p.line == null ? p.path : p.path + ":" + p.line;
      const message = document.createElement("span");
      message.className = "livereload-message";
      message.textContent = p.message;
      item.append(where, document.createTextNode(": "), message);
      list.append(item);
    }
    const close = document.createElement("button");
    close.type = "button";
    close.textContent = "Dismiss";
    close.style.cssText = "margin-top:.5rem;font:inherit;padding:.25rem .75rem;cursor:pointer;";
    close.addEventListener("click", hideOverlay);
    box.append(title, hint, list, close);
    document.body.append(box);
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
