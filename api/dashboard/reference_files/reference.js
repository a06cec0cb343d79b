// Starts Swagger UI on the OpenAPI document the page names. It is a file of its own because
// the page's Content-Security-Policy allows no inline script.
"use strict";
(function () {
  // The page opens on what most readers come for, Payments; Operations (health, the
  // document itself) goes last; the other sections keep the document's order (the sort is
  // stable).
  var FIRST = "Payments";
  var LAST = "Operations";
  function rank(tag) {
    return tag === FIRST ? 0 : tag === LAST ? 2 : 1;
  }
  var root = document.getElementById("reference");
  window.ui = SwaggerUIBundle({
    url: root.dataset.document,
    domNode: root,
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    docExpansion: "list",
    tagsSorter: function (a, b) {
      return rank(a) - rank(b);
    },
    defaultModelsExpandDepth: 0,
  });
})();
