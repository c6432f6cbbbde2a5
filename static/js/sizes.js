// Sizes and colours known only when a page is rendered (a bar's width, a booking's place on the timeline).
// The Content-Security-Policy refuses style="" in markup (style-src 'self'), so templates write them as
// data-css-<property> attributes and this applies them through the CSSOM, which the policy leaves alone.
// It runs before the page's own scripts, so a live update never meets the value it replaces.
(function () {
  for (const property of ["width", "left", "background"]) {
    for (const element of document.querySelectorAll(`[data-css-${property}]`)) {
      element.style.setProperty(property, element.getAttribute(`data-css-${property}`));
    }
  }
})();
