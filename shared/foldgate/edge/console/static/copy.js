// The console's copy buttons: <button data-copy="ID"> copies the text of the element with that id.
// Loaded as a file (the CSP allows no inline script); nothing else on the page is scripted by it.
"use strict";
(function () {
  function selectAndCopy(source) {
    const range = document.createRange();
    range.selectNodeContents(source);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    return document.execCommand("copy");
  }
  function said(button, text) {
    button.textContent = text;
    window.setTimeout(function () { button.textContent = "Copy"; }, 2000);
  }
  document.addEventListener("click", function (event) {
    const button = event.target.closest("button[data-copy]");
    if (!button) return;
    const source = document.getElementById(button.getAttribute("data-copy"));
    if (!source) return;
    const text = source.textContent;
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(
        function () { said(button, "Copied"); },
        function () { said(button, selectAndCopy(source) ? "Copied" : "Press Ctrl+C"); }
      );
    } else {
      said(button, selectAndCopy(source) ? "Copied" : "Press Ctrl+C");
    }
  });
})();
