// Booking pages: a countdown for a hold and a copy button for the pickup code.
// Both only add to what the server already shows (the hold's end time, the code as text).
(function () {
  "use strict";

  function pad(n) { return (n < 10 ? "0" : "") + n; }

  function startCountdown(box) {
    var until = document.querySelector("[data-expires]");
    var clock = box.querySelector("[data-countdown-clock]");
    var status = document.querySelector("[data-countdown-status]");
    if (!until || !clock || !status) { return; }
    // The seconds left as the server counted them when it sent the page, counted down on this
    // device's monotonic clock: a device whose clock is wrong still shows the right time left.
    var sent = parseInt(until.getAttribute("data-left"), 10);
    if (isNaN(sent)) { return; }
    var end = window.performance.now() + sent * 1000;
    box.hidden = false;
    function tick() {
      var left = Math.max(0, Math.round((end - window.performance.now()) / 1000));
      clock.textContent = pad(Math.floor(left / 60)) + ":" + pad(left % 60);
      if (left === 0) {
        box.hidden = true;
        status.textContent = status.getAttribute("data-expired-text");
        return;
      }
      window.setTimeout(tick, 1000);
    }
    tick();
  }

  function startCopy(button) {
    var target = document.getElementById(button.getAttribute("data-copy"));
    if (!target || !navigator.clipboard) { return; }
    button.hidden = false;
    button.addEventListener("click", function () {
      navigator.clipboard.writeText(target.textContent.trim()).then(function () {
        button.textContent = button.getAttribute("data-copied-text");
      });
    });
  }

  // Parts that refresh themselves (hx-trigger="every ...", marked data-poll) skip a turn
  // while the tab is hidden, and while the buyer is typing or choosing inside them or has
  // the focus on something htmx could not give the focus back to (an element without an id).
  function skipPoll(evt) {
    var part = evt.detail && evt.detail.elt;
    if (!part || !part.hasAttribute || !part.hasAttribute("data-poll")) { return; }
    var region = part.getAttribute("data-poll") ?
      document.querySelector(part.getAttribute("data-poll")) || part : part;
    var active = document.activeElement;
    var busy = active && active !== document.body && region.contains(active) &&
      (!active.id || /^(INPUT|SELECT|TEXTAREA)$/.test(active.tagName) &&
        !/^(radio|checkbox|submit|button)$/.test(active.type));
    if (document.hidden || busy) { evt.preventDefault(); }
  }
  document.addEventListener("htmx:beforeRequest", skipPoll);

  // A month link pressed on the calendar is gone after the swap when it led to the first or
  // the last month on sale: the focus goes to the other month link (not back to the top of
  // the page, where the next Tab would start again).
  // (Only the month link's own request counts: a poll settling meanwhile changes nothing.)
  document.addEventListener("htmx:afterSettle", function (evt) {
    var config = evt.detail && evt.detail.requestConfig;
    var pressed = config && config.elt && config.elt.id;
    if (!/^calendar-(next|previous)$/.test(pressed || "") ||
        document.getElementById(pressed)) { return; }
    var other = document.getElementById(
      pressed === "calendar-next" ? "calendar-previous" : "calendar-next");
    var active = document.activeElement;
    if (other && (!active || active === document.body)) { other.focus(); }
  });

  function init() {
    document.querySelectorAll("[data-countdown]").forEach(startCountdown);
    document.querySelectorAll("[data-copy]").forEach(startCopy);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
