// Keeps an open Roster page current. Every 10 seconds it fetches the same
// address again (so filters and the page cursor stay) and swaps each region
// marked `data-live` for its fresh copy, in place: no reload, the scroll
// position and whatever is typed in the forms stay. Pages work the same
// without this script; they just do not update themselves.
(function () {
  "use strict";

  var PERIOD_MS = 10000;
  var state = document.getElementById("live-state");
  var busy = false;

  if (!window.fetch || !window.DOMParser) {
    return;
  }
  if (!document.querySelector("[data-live][id]")) {
    return;
  }

  function show(text, stale) {
    if (!state) {
      return;
    }
    state.hidden = false;
    state.textContent = text;
    state.className = stale ? "live-state stale" : "live-state";
  }

  function clock() {
    var now = new Date();
    function two(n) {
      return (n < 10 ? "0" : "") + n;
    }
    return two(now.getHours()) + ":" + two(now.getMinutes()) + ":" + two(now.getSeconds());
  }

  function swap(html) {
    var fresh = new DOMParser().parseFromString(html, "text/html");
    var regions = document.querySelectorAll("[data-live][id]");
    for (var i = 0; i < regions.length; i++) {
      var old = regions[i];
      // Never pull a region out from under someone using it.
      if (old.contains(document.activeElement) && document.activeElement !== document.body) {
        continue;
      }
      var replacement = fresh.getElementById(old.id);
      if (replacement) {
        old.replaceWith(document.importNode(replacement, true));
      }
    }
  }

  function refresh() {
    if (busy || document.hidden) {
      return;
    }
    busy = true;
    fetch(window.location.href, {
      credentials: "same-origin",
      cache: "no-store"
    })
      .then(function (response) {
        if (!response.ok) {
          throw new Error("HTTP " + response.status);
        }
        return response.text();
      })
      .then(function (html) {
        swap(html);
        show("live · updated " + clock(), false);
      })
      .catch(function () {
        show("not updating (server unreachable)", true);
      })
      .then(function () {
        busy = false;
      });
  }

  show("live", false);
  window.setInterval(refresh, PERIOD_MS);
  document.addEventListener("visibilitychange", function () {
    if (!document.hidden) {
      refresh();
    }
  });
})();
