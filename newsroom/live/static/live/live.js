// Live regions: acknowledge each frame, report a frame that did not fit, and go
// to the login screen when the server closes the stream with 4401 (logged out).
// htmx's ws extension swaps each top-level element of a frame by its id.
(function () {
  "use strict";
  if (window.newsroomLive) { return; }
  window.newsroomLive = true;

  var missed = false;
  var FRAME = /^<!--live (\d+)/;

  // A part whose id is not on the page: the server must send the whole region.
  document.addEventListener("htmx:oobErrorNoTarget", function () { missed = true; });

  document.addEventListener("htmx:wsAfterMessage", function (evt) {
    var match = FRAME.exec(evt.detail.message || "");
    if (!match) { return; }
    evt.detail.socketWrapper.send(JSON.stringify({ ack: Number(match[1]), ok: !missed }));
    missed = false;
  });

  document.addEventListener("htmx:wsClose", function (evt) {
    var event = evt.detail && evt.detail.event;
    if (event && event.code === 4401) {
      var login = evt.target.getAttribute("data-login-url") || "/accounts/login/";
      window.location.assign(login + "?next=" + encodeURIComponent(window.location.pathname));
    }
  });
})();
