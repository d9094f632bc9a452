// Refreshes a running job's output every 2 seconds from /runs/ID/live, and
// reloads the page once when the job has ended, to show how. The page reads
// the same without it: a reload shows the output stored so far.
(function () {
  "use strict";
  var box = document.getElementById("live");
  if (!box || !window.fetch || !window.DOMParser) {
    return;
  }
  var url = box.getAttribute("data-live");
  var busy = false;
  var timer = window.setInterval(function () {
    if (busy || document.hidden) {
      return;
    }
    busy = true;
    window.fetch(url, { credentials: "same-origin", cache: "no-store" }).then(function (r) {
      if (!r.ok) {
        throw new Error("status " + r.status);
      }
      return r.text();
    }).then(function (text) {
      var fresh = new DOMParser().parseFromString(text, "text/html").getElementById("live-body");
      var old = document.getElementById("live-body");
      if (!fresh || !old) {
        window.clearInterval(timer); // logged out: the answer is the login page
        return;
      }
      old.replaceWith(fresh);
      if (fresh.getAttribute("data-state") !== "running") {
        window.clearInterval(timer);
        window.location.reload();
      }
    }).catch(function () {
      // The next tick tries again.
    }).then(function () {
      busy = false;
    });
  }, 2000);
})();
