// stuntset console: the little script behind the three views (no build step, no CDN).
"use strict";
(function () {
  var main = document.querySelector("main");
  if (!main) return;
  var base = main.dataset.base;
  var view = main.dataset.view;
  // The token came in the page's address and goes on explicitly: never in a cookie, which a
  // browser would also send to every other server on this host, whatever its port.
  var token = main.dataset.token || "";
  function withToken(url) {
    return token ? url + (url.indexOf("?") >= 0 ? "&" : "?") + "token=" + encodeURIComponent(token) : url;
  }

  // --- Requests: filter and search in the page; new rows fetched as they arrive ---
  function requestsView() {
    var table = document.getElementById("requests");
    if (!table) return;
    var body = table.tBodies[0];
    var search = document.getElementById("request-search");
    var wire = document.getElementById("request-wire");
    var state = document.getElementById("request-state");
    var count = document.getElementById("request-count");
    function apply() {
      var q = search.value.trim().toLowerCase();
      var shown = 0;
      Array.prototype.forEach.call(body.rows, function (row) {
        var ok = (!q || row.dataset.search.indexOf(q) >= 0) &&
          (!wire.value || row.dataset.wire === wire.value) &&
          (!state.value || row.dataset.state === state.value);
        row.hidden = !ok;
        if (ok) shown++;
      });
      count.textContent = shown + " request(s)" + (shown !== body.rows.length ? " of " + body.rows.length : "");
    }
    [search, wire, state].forEach(function (el) { el.addEventListener("input", apply); });
    function poll() {
      fetch(withToken(base + "/requests/rows?after=" + table.dataset.last), { credentials: "omit" })
        .then(function (response) {
          if (response.status !== 200) return null;
          return response.text();
        })
        .then(function (html) {
          if (html) {
            body.insertAdjacentHTML("beforeend", html);
            table.dataset.last = body.rows[body.rows.length - 1].dataset.index;
            apply();
          }
        })
        .catch(function () {})
        .then(function () { window.setTimeout(poll, 500); });
    }
    apply();
    poll();
  }

  // --- Sessions: the timeline, live over the daemon's WebSocket ---
  function sessionView() {
    var timeline = document.getElementById("timeline");
    if (!timeline) return;
    var status = document.getElementById("connection");
    var notice = document.getElementById("notice");
    var session = main.dataset.session;
    var events = [];          // every event shown, in seq order (to cut back on a rollback)
    var cursor = { seq: 0, epoch: null };
    var pending = [];         // received, not yet painted
    var scheduled = false;
    var items = {};           // item_id -> text node of its bubble
    var tools = {};           // tool_call_id -> card
    var requests = {};        // request_id -> card
    var socket = null;
    var retry = 0;
    var resyncing = false;

    function el(tag, cls, text) {
      var node = document.createElement(tag);
      if (cls) node.className = cls;
      if (text !== undefined) node.textContent = text;
      return node;
    }
    function entry(event, cls, label) {
      var li = el("li", "event " + cls);
      li.dataset.seq = event.seq;
      if (label) li.appendChild(el("span", "label", label));
      timeline.appendChild(li);
      return li;
    }
    function show(value) {
      return typeof value === "string" ? value : JSON.stringify(value);
    }
    function bubble(event, kind) {
      var key = kind + ":" + (event.item_id || "");
      var node = items[key];
      if (!node) {
        var li = entry(event, kind, kind === "message" ? "assistant" : "reasoning");
        var p = el("p", "text");
        node = document.createTextNode("");
        p.appendChild(node);
        li.appendChild(p);
        items[key] = node;
      }
      return node;
    }
    function paintOne(event) {
      var t = event.type, li;
      if (t === "message.delta" || t === "reasoning.delta") {
        bubble(event, t.split(".")[0]).appendData(event.text || "");
      } else if (t === "message.completed" || t === "reasoning.completed") {
        var node = bubble(event, t.split(".")[0]);
        if (event.text !== undefined && event.text !== null) node.data = event.text;
        node.parentNode.parentNode.classList.add("done");
      } else if (t === "run.started") {
        entry(event, "run", "run " + event.run_id + " started (" + (event.provider || "") + ")");
      } else if (t === "tool.started") {
        li = entry(event, "tool", "tool " + event.name);
        li.appendChild(el("pre", "input", show(event.input)));
        li.appendChild(el("p", "state", "running…"));
        tools[event.tool_call_id] = li;
      } else if (t === "tool.completed") {
        li = tools[event.tool_call_id];
        if (!li) li = entry(event, "tool", "tool result");
        li.querySelector(".state") ? li.querySelector(".state").remove() : null;
        li.appendChild(el("pre", "output" + (event.is_error ? " error" : ""), (event.is_error ? "error: " : "") + show(event.output)));
        li.classList.add("done");
      } else if (t === "approval.requested" || t === "input.requested") {
        var what = t === "approval.requested" ? "approval requested: " + event.tool + " " + show(event.input) : "input requested: " + event.prompt;
        li = entry(event, "request", what);
        li.appendChild(el("p", "state", "waiting for an answer"));
        requests[event.request_id] = li;
      } else if (t === "approval.resolved" || t === "input.resolved") {
        li = requests[event.request_id];
        if (li) {
          li.querySelector(".state").textContent = "answered: " + show(event.decision !== undefined ? event.decision : event.text);
          li.classList.add("done");
        }
      } else if (t === "usage") {
        entry(event, "usage", "usage: " + event.input_tokens + " in, " + event.output_tokens + " out");
      } else if (t === "run.completed" || t === "run.crashed" || t === "run.killed") {
        var why = t === "run.completed" ? (event.stop_reason || "end_turn") : t === "run.crashed" ? (event.error_kind || event.kind || "") + ": " + (event.message || "") : (event.reason || "");
        entry(event, "terminal " + t.split(".")[1], t.replace("run.", "run ") + (why ? " — " + why : ""));
        timeline.dataset.state = t.split(".")[1];
      } else {
        entry(event, "other", t);
      }
      timeline.dataset.seq = event.seq;
    }
    function paint() {
      scheduled = false;
      var batch = pending;
      pending = [];
      for (var i = 0; i < batch.length; i++) paintOne(batch[i]);
      status.textContent = "live · " + events.length + " event(s)";
      timeline.dataset.painted = String(performance.timeOrigin + performance.now());
    }
    function receive(event, epoch) {
      if (resyncing || event.seq <= cursor.seq) return; // seen before a reconnect
      if (event.seq !== cursor.seq + 1) {
        // a frame went missing (or came out of order): resubscribe from the cursor
        resyncing = true;
        timeline.dataset.resyncs = String(Number(timeline.dataset.resyncs || "0") + 1);
        socket.close();
        return;
      }
      cursor = { seq: event.seq, epoch: epoch };
      events.push(event);
      pending.push(event);
      if (!scheduled) { scheduled = true; window.requestAnimationFrame(paint); }
    }
    function rollback(to) {
      // drop what came after ``to`` and paint the rest again
      events = events.filter(function (e) { return e.seq <= to; });
      pending = [];
      items = {}; tools = {}; requests = {};
      timeline.textContent = "";
      timeline.dataset.state = "running";
      timeline.dataset.seq = "0";
      events.forEach(paintOne);
      cursor.seq = to;
      notice.hidden = false;
      notice.textContent = "The session was rolled back to event " + to + "; what came after it is gone.";
      timeline.dataset.rolledBack = String(to);
    }
    function subscribe() {
      var request = { op: "subscribe", session_id: session, after: cursor.seq, id: "console" };
      if (cursor.epoch !== null) request.epoch = cursor.epoch;
      socket.send(JSON.stringify(request));
    }
    function connect() {
      var url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + withToken(main.dataset.ws);
      socket = new WebSocket(url);
      status.textContent = "connecting…";
      socket.onopen = function () { retry = 0; resyncing = false; subscribe(); };
      socket.onmessage = function (message) {
        var data = JSON.parse(message.data);
        if (data.type === "event") receive(data.event, data.epoch);
        else if (data.type === "ok") status.textContent = "live · " + events.length + " event(s)";
        else if (data.type === "stale" || (data.type === "error" && data.resume_at !== undefined)) {
          rollback(data.resume_at);
          if (data.type === "error") subscribe(); else { socket.close(); }
        } else if (data.type === "error") {
          notice.hidden = false;
          notice.textContent = data.message;
        }
      };
      socket.onclose = function () {
        timeline.dataset.reconnects = String(Number(timeline.dataset.reconnects || "0") + 1);
        status.textContent = "disconnected at event " + cursor.seq + "; reconnecting…";
        timeline.dataset.connected = "false";
        retry = Math.min(retry + 1, 6);
        window.setTimeout(connect, 50 * Math.pow(2, retry - 1));
      };
      socket.addEventListener("open", function () { timeline.dataset.connected = "true"; });
    }
    connect();
  }

  if (view === "requests") requestsView();
  if (view === "sessions") sessionView();
})();
