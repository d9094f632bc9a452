// Reloads the page every data-refresh seconds of the body, unless the
// reader is typing in a form, has ticked a box (a selection of jobs), or the
// tab is hidden. The page reads the same without it.
(function () {
  "use strict";
  var secs = parseInt(document.body.getAttribute("data-refresh") || "0", 10);
  if (!(secs > 0)) {
    return;
  }
  window.setInterval(function () {
    var a = document.activeElement;
    if (document.hidden || (a && (a.tagName === "INPUT" || a.tagName === "SELECT" || a.tagName === "TEXTAREA")) ||
        document.querySelector("input[type=checkbox]:checked")) {
      return;
    }
    window.location.reload();
  }, secs * 1000);
})();
