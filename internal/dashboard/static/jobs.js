// The jobs list's selection: the box in the head ticks or clears every job
// of the page, and the bulk form says how many are ticked. Without it each
// box still works on its own.
(function () {
  "use strict";
  var all = document.getElementById("select-all");
  var said = document.getElementById("selected");
  var boxes = Array.prototype.slice.call(document.querySelectorAll('input[type=checkbox][name="job"]'));
  function update() {
    var n = boxes.filter(function (b) { return b.checked; }).length;
    if (said) {
      said.textContent = n === 0 ? "tick jobs below to act on them" : n + (n === 1 ? " job selected" : " jobs selected");
    }
    if (all) {
      all.checked = n > 0 && n === boxes.length;
      all.indeterminate = n > 0 && n < boxes.length;
    }
  }
  if (all) {
    all.addEventListener("change", function () {
      boxes.forEach(function (b) { b.checked = all.checked; });
      update();
    });
  }
  boxes.forEach(function (b) { b.addEventListener("change", update); });
  update();
})();
