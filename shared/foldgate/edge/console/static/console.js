// foldgate console: the one script of ours (the CSP allows scripts from this origin only, none inline).
// A form carrying data-confirm asks first; cancelling the dialog sends nothing.
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || !form.dataset.confirm) return;
  if (!window.confirm(form.dataset.confirm)) event.preventDefault();
}, true);
