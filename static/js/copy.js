// A button with data-copy="ID" copies the text of the element with that id, and says whether it did.
(function () {
  "use strict";

  function selectText(element) {
    const range = document.createRange();
    range.selectNodeContents(element);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }

  async function copy(button) {
    const target = document.getElementById(button.dataset.copy);
    if (!target) return;
    const text = target.textContent.trim();
    let copied = false;
    try {
      await navigator.clipboard.writeText(text);
      copied = true;
    } catch (error) {
      // No clipboard API (a page over plain HTTP on another host): the selected text is copied the old way.
      selectText(target);
      copied = document.execCommand && document.execCommand("copy");
    }
    button.textContent = copied ? "Copied" : "Selected: press Ctrl+C";
  }

  document.addEventListener("click", function (event) {
    const button = event.target.closest("button[data-copy]");
    if (button) copy(button);
  });
})();
