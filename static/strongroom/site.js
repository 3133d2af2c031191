// Every page: after htmx has put a new address in the history (a calendar month, a catalog
// filter), the language switch returns to that address, not to the one the page was served at.
document.addEventListener("htmx:pushedIntoHistory", (event) => {
  const next = document.querySelector(".lang-switch input[name=next]");
  if (next && event.detail && typeof event.detail.path === "string") {
    next.value = event.detail.path;
  }
});
