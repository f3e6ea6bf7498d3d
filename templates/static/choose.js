/* The chooser. Loaded only by /choose/: shows the form, reads choose/<hardware>/rankings.json
 * (written by the build, every ranking already made by the builder) and draws the ranking of the
 * picked workload and metric. Text from the index is inserted as text nodes only. */
(function () {
  "use strict";
  var box = document.getElementById("chooser");
  if (!box) return;
  var root = box.getAttribute("data-root");
  var hwSelect = document.getElementById("choose-hw");
  var settingSelect = document.getElementById("choose-setting");
  var metricSelect = document.getElementById("choose-metric");
  var status = document.getElementById("choose-status");
  var tableBox = document.getElementById("choose-table");
  var body = document.getElementById("choose-results");
  var valueHead = document.getElementById("choose-value-h");
  var STATUS = { matches: "matches", not_recorded: "not recorded", differs: "differs" };
  var loaded = {};
  var index = null;
  var asked = 0;
  /* The picks live in the address (?hardware=…&workload=…&metric=…), so an answer can be shared. */
  var params = new URLSearchParams(location.search);
  var wanted = { workload: params.get("workload"), metric: params.get("metric") };

  function el(tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== undefined) node.textContent = text;
    if (cls) node.className = cls;
    return node;
  }

  function number(value) {
    return value.toLocaleString("en-US", { maximumFractionDigits: 20 });
  }

  function page(path) {
    var url = root + path;
    return location.protocol === "file:" ? url + "index.html" : url;
  }

  function fill(select, options, keep) {
    select.textContent = "";
    options.forEach(function (o) {
      var option = el("option", o[1]);
      option.value = o[0];
      select.appendChild(option);
    });
    if (keep !== null && options.some(function (o) { return o[0] === keep; })) select.value = keep;
  }

  function draw() {
    body.textContent = "";
    if (!index) return;
    var metric = null;
    index.metrics.forEach(function (m) { if (m[0] === metricSelect.value) metric = m; });
    var ranked = (index.rankings[settingSelect.value] || {})[metricSelect.value] || [];
    if (!metric || !ranked.length) {
      tableBox.hidden = true;
      status.textContent = "No recipe has a row with this metric on " + index.name + ".";
      return;
    }
    valueHead.textContent = metric[1] + " (" + metric[2] + ")";
    var exact = 0;
    ranked.forEach(function (entry, position) {
      var f = index.figures[entry[0]];
      var recipe = index.recipes[f[0]];
      var tr = el("tr");
      tr.appendChild(el("td", String(position + 1), "n"));
      var name = el("td");
      var link = el("a", recipe[1]);
      link.href = page("recipes/" + recipe[0] + "/");
      name.appendChild(link);
      tr.appendChild(name);
      tr.appendChild(el("td", number(f[2]), "n figure-cell"));
      var when = el("td", f[3]);
      if (entry[1]) exact += 1;
      else when.appendChild(el("span", " · nearest setting: " + index.settings[f[1]], "muted small nearest"));
      tr.appendChild(when);
      tr.appendChild(el("td", STATUS[f[4]] || f[4]));
      tr.appendChild(el("td", String(f[6]), "n"));
      var row = el("td");
      row.appendChild(el("code", f[5], "small"));
      tr.appendChild(row);
      body.appendChild(tr);
    });
    tableBox.hidden = false;
    var picked = new URLSearchParams();
    picked.set("hardware", hwSelect.value);
    picked.set("workload", index.settings[Number(settingSelect.value)]);
    picked.set("metric", metricSelect.value);
    history.replaceState(null, "", "?" + picked.toString());
    status.textContent = ranked.length + (ranked.length === 1 ? " recipe" : " recipes") + ", " + exact +
      " measured at this workload; " + (metric[3] ? "lower" : "higher") + " is better.";
  }

  function show(data) {
    index = data;
    var keepSetting = settingSelect.options.length ? settingSelect.options[settingSelect.selectedIndex].text : wanted.workload;
    var settings = data.settings.map(function (text, i) { return [String(i), text]; });
    fill(settingSelect, settings, null);
    var kept = false;
    settings.forEach(function (s) { if (s[1] === keepSetting) { settingSelect.value = s[0]; kept = true; } });
    if (!kept && data.metrics.length) {
      /* First time: the workload at which most recipes were measured for the first metric. */
      var best = -1;
      settings.forEach(function (s) {
        var count = ((data.rankings[s[0]] || {})[data.metrics[0][0]] || []).filter(function (e) { return e[1]; }).length;
        if (count > best) { best = count; settingSelect.value = s[0]; }
      });
    }
    fill(metricSelect, data.metrics.map(function (m) { return [m[0], m[1] + " (" + m[2] + ")"]; }), metricSelect.value || wanted.metric);
    draw();
  }

  function load() {
    var hw = hwSelect.value;
    var mine = ++asked;
    if (loaded[hw]) { show(loaded[hw]); return; }
    status.textContent = "Loading…";
    fetch(root + "choose/" + encodeURIComponent(hw) + "/rankings.json")
      .then(function (r) { if (!r.ok) throw new Error(r.status); return r.json(); })
      .then(function (data) { loaded[hw] = data; if (mine === asked) show(data); })
      .catch(function () {
        if (mine !== asked) return;
        index = null;
        body.textContent = "";
        tableBox.hidden = true;
        status.textContent = "The rankings could not be loaded here; the hardware pages above have them.";
      });
  }

  box.hidden = false;
  if (params.get("hardware")) {
    Array.prototype.forEach.call(hwSelect.options, function (o) { if (o.value === params.get("hardware")) hwSelect.value = o.value; });
  }
  hwSelect.addEventListener("change", load);
  settingSelect.addEventListener("change", draw);
  metricSelect.addEventListener("change", draw);
  if (hwSelect.value) load();
})();
