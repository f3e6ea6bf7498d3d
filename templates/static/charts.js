/* Chart loader. Pages with charts include this file (deferred); it loads the vega runtime, served by
   this site, the first time a chart comes near the viewport, then draws each chart as it scrolls into
   view. The specs are inert JSON in <script type="application/json">; the data tables stay in the
   page for readers without JavaScript and for screen readers. */
(function () {
  "use strict";
  var loader = document.currentScript;
  var runtimeUrl = loader && loader.getAttribute("data-runtime");
  var figures = Array.prototype.slice.call(document.querySelectorAll("figure.chart"));
  if (!runtimeUrl || !figures.length) return;

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
    var holder = view && document.getElementById(view.getAttribute("data-chart-spec"));
    if (!holder) return;
    var spec = JSON.parse(holder.textContent);
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
