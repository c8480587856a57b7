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

  // Reconnect with capped exponential backoff and full jitter: after a server
  // dies, its viewers come back spread over a few seconds, not all at once.
  // htmx's ws extension reconnects by itself on 1006/1011/1012/1013 and asks
  // this function for the delay; the codes it leaves alone are handled below.
  var RECONNECT_CAP_MS = 10000;
  function reconnectDelay(retry) {
    return Math.random() * Math.min(RECONNECT_CAP_MS, 500 * Math.pow(2, retry));
  }
  if (window.htmx) { htmx.config.wsReconnectDelay = reconnectDelay; }
  var HTMX_RETRIES = [1006, 1011, 1012, 1013];
  var NO_RETRY = [1000, 4401, 4404];  // closed on purpose: logged out, not found
  var leaving = false;
  window.addEventListener("pagehide", function () { leaving = true; });
  var retries = new WeakMap();

  document.addEventListener("htmx:wsOpen", function (evt) {
    retries.delete(evt.target);
    missed = false;
  });

  // A server going away (1001, e.g. daphne stopping) or a close without a code:
  // reconnect too; the new socket asks for the whole region (see above).
  document.addEventListener("htmx:wsClose", function (evt) {
    var event = evt.detail && evt.detail.event;
    var code = event ? event.code : 1005;
    if (leaving || HTMX_RETRIES.indexOf(code) >= 0 || NO_RETRY.indexOf(code) >= 0) { return; }
    var wrapper = evt.detail.socketWrapper;
    if (!wrapper || !wrapper.reconnect) { return; }
    var retry = retries.get(evt.target) || 0;
    retries.set(evt.target, retry + 1);
    setTimeout(function () { wrapper.reconnect(); }, reconnectDelay(retry));
  });

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
