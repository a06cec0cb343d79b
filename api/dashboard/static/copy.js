// Copy buttons: a button with data-copy="<id>" copies that element's text to the clipboard.
// The buttons stay hidden without this script (or without a clipboard); the text stays selectable.
(function () {
  "use strict";
  if (!navigator.clipboard) {
    return;
  }
  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    var source = document.getElementById(button.dataset.copy);
    if (!source) {
      return;
    }
    button.hidden = false;
    button.addEventListener("click", function () {
      navigator.clipboard.writeText(source.textContent).then(
        function () { button.textContent = "Copied"; },
        function () { button.textContent = "Copy failed: select the text instead"; }
      );
    });
  });
})();
