/* Site search. Loaded only by the search page.
 * Served over HTTP(S) it runs Pagefind's index (pagefind/). Browsers refuse fetch() and module
 * imports on file:// pages, so there it loads the records file the build writes (a classic
 * script, which file:// allows) and matches words itself.
 * Result text is inserted as text nodes; only Pagefind's <mark> highlights become elements. */
(function () {
  "use strict";
  var box = document.getElementById("search");
  if (!box) return;
  var input = document.getElementById("search-q");
  var form = box.querySelector("form");
  var status = document.getElementById("search-status");
  var list = document.getElementById("search-results");
  var root = new URL(box.getAttribute("data-root"), location.href);
  var fileMode = location.protocol === "file:";
  var engine = null;
  var latest = 0;
  var MAX = 20;

  function kindOf(url) {
    var path = url.replace(root.pathname, "/");
    if (path.indexOf("#faq-") !== -1) return "Troubleshooting";
    if (path.indexOf("/recipes/") === 0) return "Recipe";
    if (path.indexOf("/case-studies/") === 0) return "Case study";
    if (path.indexOf("/news/") === 0) return "News";
    return "Page";
  }

  function href(url) {
    var target = new URL(url, root);
    if (fileMode && /\/$/.test(target.pathname)) target.pathname += "index.html";
    return target.href;
  }

  /* Pagefind excerpts are HTML with <mark>; keep their text and the marks, nothing else. */
  function appendExcerpt(parent, html) {
    var tpl = document.createElement("template");
    tpl.innerHTML = html;
    tpl.content.childNodes.forEach(function (node) {
      if (node.nodeName === "MARK") {
        var mark = document.createElement("mark");
        mark.textContent = node.textContent;
        parent.appendChild(mark);
      } else {
        parent.appendChild(document.createTextNode(node.textContent));
      }
    });
  }

  /* A stand-in page names the page it stands for (meta "target"); a recipe's questions are its
   * sections, headed by the answer's anchor, which Pagefind returns as sub-results. Each matching
   * section is a hit: questions as Troubleshooting, the rest as the page; most matches first. */
  function pageHits(d) {
    var meta = d.meta || {};
    var page = meta.target ? root.pathname + meta.target.slice(1) : d.url;
    var pageHit = { url: page, title: meta.title || d.url, kind: meta.kind || kindOf(d.url), excerptHtml: d.excerpt };
    var sections = (d.sub_results || []).map(function (s, order) { return { s: s, order: order }; });
    if (!sections.length) return [pageHit];
    sections.sort(function (a, b) {
      return (b.s.locations || []).length - (a.s.locations || []).length || a.order - b.order;
    });
    return sections.map(function (entry) {
      var s = entry.s;
      var id = s.anchor && s.anchor.id;
      if (!id || id.indexOf("faq-") !== 0) return { url: page, title: pageHit.title, kind: pageHit.kind, excerptHtml: s.excerpt };
      return { url: page + "#" + id, title: s.title, kind: "Troubleshooting", excerptHtml: s.excerpt };
    });
  }

  function pagefindEngine() {
    return import(new URL(box.getAttribute("data-bundle"), location.href).href).then(function (pf) {
      /* A big site's index comes in shards: merge the others into the first, all at once (Pagefind
         adds each in the order asked and loads them in parallel: one round trip, not one per shard). */
      var shards = (box.getAttribute("data-shards") || "").split(" ").filter(Boolean);
      return Promise.all(shards.map(function (shard) {
        return pf.mergeIndex(new URL(shard, location.href).href);
      })).then(function () { return pf; });
    }).then(function (pf) {
      return {
        search: function (query) {
          return pf.search(query).then(function (found) {
            return Promise.all(found.results.slice(0, MAX).map(function (r) { return r.data(); }));
          }).then(function (items) {
            var hits = [];
            items.forEach(function (d) { hits.push.apply(hits, pageHits(d)); });
            return hits.slice(0, MAX);
          });
        }
      };
    });
  }

  function fallbackEngine() {
    return new Promise(function (resolve, reject) {
      var script = document.createElement("script");
      script.src = new URL(box.getAttribute("data-fallback"), location.href).href;
      script.onload = function () { resolve(wordEngine(window.SEARCH_RECORDS || [])); };
      script.onerror = function () { reject(new Error("records file missing")); };
      document.head.appendChild(script);
    });
  }

  function wordEngine(records) {
    var prepared = records.map(function (r) {
      return { r: r, title: r.t.toLowerCase(), text: r.x.toLowerCase() };
    });
    return {
      search: function (query) {
        var terms = query.toLowerCase().split(/\s+/).filter(Boolean);
        var hits = [];
        prepared.forEach(function (p) {
          var score = 0;
          for (var i = 0; i < terms.length; i++) {
            var inTitle = p.title.indexOf(terms[i]) !== -1;
            var inText = p.text.indexOf(terms[i]) !== -1;
            if (!inTitle && !inText) return;
            score += (inTitle ? 5 : 0) + (inText ? 1 : 0);
          }
          hits.push({ p: p, score: score });
        });
        hits.sort(function (a, b) { return b.score - a.score; });
        return Promise.resolve(hits.slice(0, MAX).map(function (h) {
          return { url: h.p.r.u, title: h.p.r.t, kind: h.p.r.k, excerptText: around(h.p.r.x, h.p.text, terms), terms: terms };
        }));
      }
    };
  }

  function around(text, lower, terms) {
    var at = -1;
    terms.forEach(function (t) { var i = lower.indexOf(t); if (i !== -1 && (at === -1 || i < at)) at = i; });
    var start = Math.max(0, at - 80);
    var piece = text.slice(start, start + 220);
    return (start > 0 ? "…" : "") + piece + (start + 220 < text.length ? "…" : "");
  }

  function appendMarked(parent, text, terms) {
    var lower = text.toLowerCase();
    var pos = 0;
    while (pos < text.length) {
      var next = -1, len = 0;
      terms.forEach(function (t) {
        var i = lower.indexOf(t, pos);
        if (i !== -1 && (next === -1 || i < next)) { next = i; len = t.length; }
      });
      if (next === -1) break;
      parent.appendChild(document.createTextNode(text.slice(pos, next)));
      var mark = document.createElement("mark");
      mark.textContent = text.slice(next, next + len);
      parent.appendChild(mark);
      pos = next + len;
    }
    parent.appendChild(document.createTextNode(text.slice(pos)));
  }

  function show(query, results) {
    list.textContent = "";
    results.forEach(function (r) {
      var li = document.createElement("li");
      var kind = document.createElement("span");
      kind.className = "badge";
      kind.textContent = r.kind;
      var link = document.createElement("a");
      link.href = href(r.url);
      link.textContent = r.title;
      var title = document.createElement("p");
      title.className = "result-title";
      title.appendChild(link);
      title.appendChild(document.createTextNode(" "));
      title.appendChild(kind);
      var excerpt = document.createElement("p");
      excerpt.className = "small muted";
      if (r.excerptHtml !== undefined) appendExcerpt(excerpt, r.excerptHtml);
      else appendMarked(excerpt, r.excerptText, r.terms);
      li.appendChild(title);
      li.appendChild(excerpt);
      list.appendChild(li);
    });
    var n = results.length;
    status.textContent = n === 0 ? "No results for “" + query + "”."
      : (n === MAX ? "The first " + n : n) + " result" + (n === 1 ? "" : "s") + " for “" + query + "”.";
  }

  function run(query) {
    query = query.trim();
    var ticket = ++latest;
    if (!query) { list.textContent = ""; status.textContent = ""; return; }
    status.textContent = "Searching…";
    if (!engine) engine = fileMode ? fallbackEngine() : pagefindEngine().catch(fallbackEngine);
    engine.then(function (e) { return e.search(query); }).then(function (results) {
      if (ticket === latest) show(query, results);
    }).catch(function () {
      if (ticket === latest) status.textContent = "Search could not load its index. The troubleshooting page lists every question.";
    });
  }

  function remember(query) {
    try { history.replaceState(null, "", query ? "?q=" + encodeURIComponent(query) : location.pathname); } catch (e) { /* file:// may refuse */ }
  }

  var timer = null;
  input.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(function () { run(input.value); remember(input.value.trim()); }, 150);
  });
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    run(input.value);
    remember(input.value.trim());
  });
  var initial = new URLSearchParams(location.search).get("q");
  if (initial) { input.value = initial; run(initial); }
})();
