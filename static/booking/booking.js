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
        // "Held for you until ..." is no longer so: the whole line goes, the status says why.
        (box.closest(".hold-timer") || box).hidden = true;
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

  // The pickers' hour selects. htmx sends the form on every change, and a keyboard steps a
  // closed select one option at a time, each step a change: a buyer stepping "To" down from
  // 09:00 was sent (and answered) at every hour on the way. A change made by keys is sent when
  // the select is left or Enter is pressed; one made with a pointer at once. Without
  // JavaScript the form's own button sends both.
  var HOUR_SELECTS = /^hour-(start|end)$/;

  function hourSelect(target) {
    return target && target.tagName === "SELECT" && HOUR_SELECTS.test(target.id) ? target : null;
  }

  function hourLabel(hour) { return pad(hour) + ":00"; }

  // "To" offers only hours after "From"; a From moved to or past the end takes the end along
  // (the same length of range, up to 24:00) rather than leaving a range that ends first.
  function followStart(start) {
    var end = document.getElementById("hour-end");
    if (!end) { return; }
    var first = start.value === "" ? 0 : parseInt(start.value, 10);
    var before = start.querySelector("option[selected]");
    var was = before && before.value !== "" ? parseInt(before.value, 10) : null;
    var chosen = end.value === "" ? null : parseInt(end.value, 10);
    if (chosen !== null && chosen <= first) {
      var span = was !== null && chosen > was ? chosen - was : 1;
      chosen = Math.min(24, first + span);
    }
    while (end.options.length > 1) { end.remove(1); }
    for (var hour = first + 1; hour <= 24; hour++) {
      end.add(new Option(hourLabel(hour), String(hour), false, hour === chosen));
    }
    if (chosen === null) { end.selectedIndex = 0; }
  }

  function sendHeld(select) {
    if (!select.strongroomHeld) { return; }
    select.strongroomHeld = false;
    select.strongroomSending = true;
    try {
      select.dispatchEvent(new Event("change", { bubbles: true }));
    } finally {
      select.strongroomSending = false;
    }
  }

  document.addEventListener("keydown", function (evt) {
    var select = hourSelect(evt.target);
    if (!select) { return; }
    if (evt.key === "Enter") {
      if (select.strongroomHeld) { evt.preventDefault(); sendHeld(select); }
      return;
    }
    select.strongroomKeyed = evt.key !== "Tab";
  }, true);
  document.addEventListener("pointerdown", function (evt) {
    var select = hourSelect(evt.target);
    if (select) { select.strongroomKeyed = false; }
  }, true);
  document.addEventListener("change", function (evt) {
    var select = hourSelect(evt.target);
    if (!select || select.strongroomSending) { return; }
    if (select.id === "hour-start") { followStart(select); }
    if (select.strongroomKeyed) {
      evt.stopPropagation();  // htmx listens on the form: it hears of it on leaving
      select.strongroomHeld = true;
    }
  }, true);
  document.addEventListener("focusout", function (evt) {
    var select = hourSelect(evt.target);
    if (select) { sendHeld(select); }
  }, true);

  // The box grid (100 buttons) and the hour row (24) are one Tab stop each, the arrow keys
  // moving inside (Home and End to either end): by Tab alone class C was some 130 presses.
  // Without JavaScript every button stays a stop of its own.
  function gridButtons(grid) {
    return Array.prototype.slice.call(grid.querySelectorAll(":scope > button"));
  }

  function rove(grid) {
    var buttons = gridButtons(grid);
    var usable = buttons.filter(function (b) { return !b.disabled; });
    if (!usable.length) { return; }
    var stop = usable.filter(function (b) { return b === document.activeElement; })[0] ||
      usable.filter(function (b) { return b.getAttribute("aria-pressed") === "true"; })[0] ||
      usable[0];
    buttons.forEach(function (b) { b.tabIndex = b === stop ? 0 : -1; });
  }

  function columns(buttons) {
    var top = buttons[0].offsetTop;
    var n = buttons.filter(function (b) { return b.offsetTop === top; }).length;
    return Math.max(1, n);
  }

  var STEPS = { ArrowLeft: -1, ArrowRight: 1, ArrowUp: "-row", ArrowDown: "row" };

  document.addEventListener("keydown", function (evt) {
    var button = evt.target;
    var grid = button && button.parentElement;
    if (!grid || button.tagName !== "BUTTON" || !grid.classList.contains("grid") ||
        evt.altKey || evt.ctrlKey || evt.metaKey) { return; }
    var buttons = gridButtons(grid);
    var at = buttons.indexOf(button);
    var step = STEPS[evt.key];
    var next = null;
    if (evt.key === "Home" || evt.key === "End") {
      var usable = buttons.filter(function (b) { return !b.disabled; });
      next = evt.key === "Home" ? usable[0] : usable[usable.length - 1];
    } else if (step !== undefined) {
      var by = step === "row" ? columns(buttons) : step === "-row" ? -columns(buttons) : step;
      for (var i = at + by; i >= 0 && i < buttons.length; i += by) {
        if (!buttons[i].disabled) { next = buttons[i]; break; }
      }
    } else {
      return;
    }
    evt.preventDefault();
    if (!next || next === button) { return; }
    button.tabIndex = -1;
    next.tabIndex = 0;
    next.focus();
  });

  function roveAll() { document.querySelectorAll(".pickers .grid").forEach(rove); }
  document.addEventListener("htmx:afterSettle", roveAll);

  function init() {
    document.querySelectorAll("[data-countdown]").forEach(startCountdown);
    document.querySelectorAll("[data-copy]").forEach(startCopy);
    roveAll();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
