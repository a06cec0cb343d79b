// Keeps the first page of an endpoint's delivery log current without a full reload: every few
// seconds it asks for the log as an HTML fragment and swaps it in when it changed.
(function () {
  "use strict";
  var log = document.getElementById("delivery-log");
  if (!log || !log.dataset.src) {
    return;
  }
  var every = Number(log.dataset.every) || 2000;

  function schedule() {
    window.setTimeout(refresh, document.hidden ? every * 5 : every);
  }

  function refresh() {
    fetch(log.dataset.src, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (response) {
        if (response.redirected) {
          // The session ended: sign in again, then come back to this page.
          var next = encodeURIComponent(window.location.pathname);
          window.location.assign("/dashboard/login?notice=expired&next=" + next);
          return null;
        }
        if (!response.ok) {
          return null;
        }
        var version = response.headers.get("Svc-Log-Version");
        if (version && version === log.dataset.version) {
          return null;
        }
        return response.text().then(function (html) {
          log.innerHTML = html;
          log.dataset.version = version || "";
        });
      })
      .catch(function () {})
      .then(schedule);
  }

  schedule();
})();
