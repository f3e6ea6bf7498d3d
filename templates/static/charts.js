/* Chart loader. Pages with charts include this file (deferred); it loads the vega runtime, served by
   this site, the first time a chart comes near the viewport, then draws each chart as it scrolls into
   view. The page's chart data is one inert JSON block (<script type="application/json"
   id="chart-data">): {"specs": {key: Vega-Lite spec}, "charts": {figure id: {"spec": key, "fields":
   [...], "rows": [[...]], "strings": [...]}}}. A chart's rows become objects (null fields left out)
   and its spec's data.values; a field with a list in "strings" (by field position) gives a
   position in that list, not the text itself. Nothing from the data is evaluated. The data tables (or links to the rows) stay in
   the page for readers without JavaScript and for screen readers. */
(function () {
  "use strict";
  var loader = document.currentScript;
  var runtimeUrl = loader && loader.getAttribute("data-runtime");
  var figures = Array.prototype.slice.call(document.querySelectorAll("figure.chart"));
  var holder = document.getElementById("chart-data");
  if (!runtimeUrl || !figures.length || !holder) return;

  var pageData = null;
  function chartSpec(id) {
    if (!pageData) pageData = JSON.parse(holder.textContent);
    var chart = pageData.charts[id];
    var spec = chart && pageData.specs[chart.spec];
    if (!spec) return null;
    var strings = chart.strings || [];
    var values = chart.rows.map(function (row) {
      var value = {};
      for (var i = 0; i < chart.fields.length; i++) {
        if (row[i] !== null) value[chart.fields[i]] = strings[i] ? strings[i][row[i]] : row[i];
      }
      return value;
    });
    var copy = JSON.parse(JSON.stringify(spec)); // each chart its own spec: vega-embed may change it
    copy.data = { values: values };
    return copy;
  }

  var runtime = null;
  function loadRuntime() {
    if (!runtime) {
      runtime = new Promise(function (resolve, reject) {
        var script = document.createElement("script");
        script.src = runtimeUrl;
        script.async = true;
        script.onload = function () {
          if (typeof window.vegaEmbed === "function") resolve(window.vegaEmbed);
          else reject(new Error("the chart runtime did not define vegaEmbed"));
        };
        script.onerror = function () { reject(new Error("could not load the chart runtime " + runtimeUrl)); };
        document.head.appendChild(script);
      });
    }
    return runtime;
  }

  function dark() {
    return !!(window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches);
  }

  function draw(figure) {
    var view = figure.querySelector(".chart-view");
    var spec = view && chartSpec(view.getAttribute("data-chart"));
    if (!spec) return;
    view.hidden = false;
    loadRuntime()
      .then(function (vegaEmbed) {
        return vegaEmbed(view, spec, {
          actions: false,
          renderer: "svg",
          theme: dark() ? "dark" : undefined,
          config: { background: "transparent" }
        });
      })
      .then(function () {
        figure.classList.add("chart-drawn");
        var table = figure.querySelector("details.chart-data");
        if (table) table.open = false; // the chart now shows it; the table stays one click away
      })
      .catch(function (err) {
        view.hidden = true; // the data table is still there
        console.error(err);
      });
  }

  if ("IntersectionObserver" in window) {
    var observer = new IntersectionObserver(function (entries) {
      entries.forEach(function (entry) {
        if (entry.isIntersecting) {
          observer.unobserve(entry.target);
          draw(entry.target);
        }
      });
    }, { rootMargin: "200px 0px" });
    figures.forEach(function (figure) { observer.observe(figure); });
  } else {
    figures.forEach(draw);
  }
})();
