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
  var answerBox = document.getElementById("choose-answer");
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

  function badge(text, cls) {
    return el("span", text, "badge " + cls);
  }

  function recipeCell(tag, f) {
    var recipe = index.recipes[f[0]];
    var cell = el(tag);
    var link = el("a", recipe[1]);
    link.href = page("recipes/" + recipe[0] + "/");
    cell.appendChild(link);
    if (f[8]) { cell.appendChild(document.createTextNode(" ")); cell.appendChild(badge("contested", "warn")); }
    if (f[7] < 0) { cell.appendChild(document.createTextNode(" ")); cell.appendChild(badge("command not recorded", "muted")); }
    return cell;
  }

  /* "Use this": the first result that can be run as recorded, as the builder picked it. */
  function drawAnswer(metric, ranked) {
    answerBox.textContent = "";
    var at = (index.answers[settingSelect.value] || {})[metricSelect.value];
    var line = el("p");
    line.appendChild(el("strong", "Use this: "));
    if (!ranked.length) {
      line.appendChild(document.createTextNode("nothing was measured for " + metric[1] + " at " +
        index.setting_loads[Number(settingSelect.value)] + " on " + index.name + ". Loads measured: " +
        ((index.loads[metric[0]] || []).join(", ") || "none") + "."));
    } else if (at === undefined) {
      line.appendChild(document.createTextNode("none of these can be run as recorded (no repository id and complete serve command)."));
    } else {
      var f = index.figures[at];
      var name = recipeCell("span", f);
      line.appendChild(name);
      line.appendChild(document.createTextNode(", " + number(f[2]) + " " + metric[2]));
      if (String(f[1]) !== settingSelect.value) line.appendChild(document.createTextNode(" (measured at " + index.settings[f[1]] + ")"));
      answerBox.appendChild(line);
      var pre = el("pre", undefined, "cmd");
      pre.appendChild(el("code", index.commands[f[7]]));
      answerBox.appendChild(pre);
      answerBox.hidden = false;
      return;
    }
    answerBox.appendChild(line);
    answerBox.hidden = false;
  }

  function draw() {
    body.textContent = "";
    answerBox.hidden = true;
    if (!index) return;
    var metric = null;
    index.metrics.forEach(function (m) { if (m[0] === metricSelect.value) metric = m; });
    if (!metric) { tableBox.hidden = true; return; }
    var ranked = (index.rankings[settingSelect.value] || {})[metricSelect.value] || [];
    drawAnswer(metric, ranked);
    if (!ranked.length) {
      tableBox.hidden = true;
      status.textContent = "No recipe has a row with this metric at this load on " + index.name + ".";
      return;
    }
    valueHead.textContent = metric[1] + " (" + metric[2] + ")";
    var exact = 0;
    var section = null;
    ranked.forEach(function (entry, position) {
      var f = index.figures[entry[0]];
      if (!entry[1] && f[1] !== section) {
        /* Results at another prompt, output or context length: a section naming their setting. */
        section = f[1];
        var head = el("tr", undefined, "choose-section");
        var th = el("th", "Measured at another setting: " + index.settings[f[1]]);
        th.colSpan = 7;
        th.scope = "colgroup";
        head.appendChild(th);
        body.appendChild(head);
      }
      var tr = el("tr");
      tr.appendChild(el("td", String(position + 1), "n"));
      tr.appendChild(recipeCell("td", f));
      tr.appendChild(el("td", number(f[2]), "n figure-cell"));
      tr.appendChild(el("td", f[3]));
      if (entry[1]) exact += 1;
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
        answerBox.hidden = true;
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
