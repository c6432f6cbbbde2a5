// Form behaviour that pages declare in attributes instead of inline handlers (the Content-Security-Policy
// runs no inline script): data-autosubmit submits a select's form when it changes, data-confirm asks first.
(function () {
  "use strict";
  document.querySelectorAll("[data-autosubmit]").forEach((field) => {
    field.addEventListener("change", () => field.form.submit());
  });
  document.querySelectorAll("form[data-confirm]").forEach((form) => {
    form.addEventListener("submit", (event) => {
      if (!window.confirm(form.dataset.confirm)) event.preventDefault();
    });
  });
})();
