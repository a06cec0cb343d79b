// Starts Swagger UI on the OpenAPI document the page names. It is a file of its own because
// the page's Content-Security-Policy allows no inline script.
"use strict";
(function () {
  var root = document.getElementById("reference");
  window.ui = SwaggerUIBundle({
    url: root.dataset.document,
    domNode: root,
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    docExpansion: "list",
    defaultModelsExpandDepth: 0,
  });
})();
