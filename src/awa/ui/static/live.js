// Live refresh: every few seconds, load this page again and swap in its <main id="live">.
// Served as a file (the Content-Security-Policy allows no inline script). A page opts in by
// rendering <body data-live-refresh="SECONDS"> and <main id="live">; the switch in the header
// turns it off and on (remembered in localStorage). Open <details> stay open across a refresh.
(function () {
  "use strict";
  var seconds = parseFloat(document.body.getAttribute("data-live-refresh") || "0");
  var toggle = document.getElementById("live-toggle");
  var status = document.getElementById("live-status");
  if (!(seconds > 0) || !document.getElementById("live") || !toggle) { return; }
  var KEY = "awa-live-refresh";
  var on = true;
  try { on = window.localStorage.getItem(KEY) !== "off"; } catch (e) { on = true; }
  var timer = null;
  var stopped = false;

  function say(text) { if (status) { status.textContent = text; } }

  function show() {
    toggle.hidden = false;
    toggle.textContent = on ? "live: on" : "live: off";
    toggle.setAttribute("aria-pressed", on ? "true" : "false");
  }

  function typing() {
    var active = document.activeElement;
    return !!active && /^(INPUT|SELECT|TEXTAREA)$/.test(active.tagName);
  }

  function openDetails(root) {
    var open = [];
    root.querySelectorAll("details[open][id]").forEach(function (d) { open.push(d.id); });
    return open;
  }

  function schedule() {
    if (timer !== null) { window.clearTimeout(timer); }
    timer = on && !stopped ? window.setTimeout(refresh, seconds * 1000) : null;
  }

  function refresh() {
    if (document.hidden || typing()) { schedule(); return; }
    window.fetch(window.location.href, { credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) { throw new Error("the page answered " + response.status); }
        return response.text();
      })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("live");
        var current = document.getElementById("live");
        if (!fresh || !current) { throw new Error("signed out or moved"); }
        var open = openDetails(current);
        current.replaceWith(document.importNode(fresh, true));
        open.forEach(function (id) {
          var d = document.getElementById(id);
          if (d) { d.open = true; }
        });
        say("updated " + new Date().toLocaleTimeString());
      })
      .catch(function (error) {
        stopped = true;
        say("live refresh stopped (" + error.message + "): reload the page");
      })
      .then(schedule);
  }

  toggle.addEventListener("click", function () {
    on = !on;
    try { window.localStorage.setItem(KEY, on ? "on" : "off"); } catch (e) { /* private mode */ }
    show();
    schedule();
  });
  document.addEventListener("visibilitychange", function () { if (!document.hidden) { schedule(); } });
  show();
  schedule();
})();
