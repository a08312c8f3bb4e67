// The live follow of a session page: the only script, and the page works
// without it. Each "item" event carries a piece of server-rendered (escaped)
// HTML with its element id: it replaces that element or is appended to the
// timeline. Tool outputs the reader opened stay open.
(function () {
  "use strict";
  var timeline = document.getElementById("timeline");
  if (!timeline || !window.EventSource) return;
  var src = timeline.getAttribute("data-live");
  if (!src) return;
  var events = new EventSource(src);
  // The state shows (and tests read) whether the page is following.
  events.onopen = function () { timeline.setAttribute("data-live-state", "open"); };
  events.onerror = function () { timeline.setAttribute("data-live-state", "reconnecting"); };
  events.addEventListener("item", function (ev) {
    var piece = JSON.parse(ev.data);
    var holder = document.createElement("div");
    holder.innerHTML = piece.html;
    var next = holder.firstElementChild;
    if (!next) return;
    var old = document.getElementById(piece.id);
    if (old) {
      if (old.tagName === "DETAILS" && next.tagName === "DETAILS") next.open = old.open;
      old.replaceWith(next);
    } else {
      timeline.appendChild(next);
    }
  });
})();
