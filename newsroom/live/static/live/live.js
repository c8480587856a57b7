// Live regions: acknowledge each frame, report a frame that did not fit, and go
// to the login screen when the server closes the stream with 4401 (logged out).
// htmx's ws extension swaps each top-level element of a frame by its id.
(function () {
  "use strict";
  if (window.newsroomLive) { return; }
  window.newsroomLive = true;

  var missed = false;
  var FRAME = /^<!--live (\d+)/;

  // The first connection says which render the page was served with, so an
  // unchanged region costs no frame. A reconnect cannot say what the page shows
  // by then: it asks for the whole region.
  var connected = {};
  var createWebSocket = window.htmx && htmx.createWebSocket;
  if (createWebSocket) {
    htmx.createWebSocket = function (url) {
      var again = connected[url];
      connected[url] = true;
      return createWebSocket(again ? url.replace(/([?&])have=[^&]*/, "$1have=") : url);
    };
  }

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
