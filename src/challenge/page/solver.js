(function () {
  "use strict";
  // edgeguard's challenge: find a counter c such that SHA-256(nonce ":" c)
  // starts with `d` zero bits, then go to the endpoint with it. ES5 only,
  // so that an old browser runs it or says why it cannot. The data
  // (#edgeguard-data, JSON) is per request; this script is the same on
  // every page, so a Content-Security-Policy can allow it by its hash.
  var doc = document;
  function $(id) { return doc.getElementById(id); }
  var dataEl = $("edgeguard-data"), status = $("edgeguard-status"), bar = $("edgeguard-progress");
  var heading = $("edgeguard-heading"), actions = $("edgeguard-actions");
  if (!dataEl) { return; }
  var data = JSON.parse(dataEl.textContent), S = data.s, over = false, workers = [];
  var tune = window.edgeguardSolver || {};

  function fill(text) {
    return String(text).replace("{site}", data.site).replace("{seconds}", String(data.w));
  }
  function say(text) { if (status) { status.textContent = fill(text); } }
  function link(text, href) {
    if (!actions) { return; }
    var a = doc.createElement("a");
    a.href = href;
    a.textContent = fill(text);
    actions.appendChild(a);
  }
  function stop() {
    over = true;
    for (var i = 0; i < workers.length; i++) { workers[i].terminate(); }
    workers = [];
    if (bar) { bar.hidden = true; }
  }
  // A state the page cannot leave by itself: a heading, a message, ways on.
  function end(head, text) {
    if (over) { return; }
    stop();
    if (heading) { heading.textContent = fill(head); }
    doc.documentElement.className += " error";
    say(text);
    link(S.retry, location.href);
    if (data.t) { link(S.nojs_link, data.t); }
  }
  window.onerror = function () { end(S.error_heading, S.error); };

  // The hash itself (FIPS 180-4), with the nonce's full 64-byte blocks
  // hashed once: each counter then costs one or two compressions. The
  // function's text is also the workers' code.
  function core() {
    var K = new Int32Array([
      0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
      0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
      0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
      0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
      0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
      0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
      0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
      0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2]);
    var W = new Int32Array(64), B = new Uint8Array(128);
    function compress(H, bytes, off) {
      var i, x, y;
      for (i = 0; i < 16; i++) {
        W[i] = bytes[off + 4 * i] << 24 | bytes[off + 4 * i + 1] << 16 | bytes[off + 4 * i + 2] << 8 | bytes[off + 4 * i + 3];
      }
      for (i = 16; i < 64; i++) {
        x = W[i - 15]; y = W[i - 2];
        W[i] = W[i - 16] + ((x >>> 7 | x << 25) ^ (x >>> 18 | x << 14) ^ (x >>> 3)) + W[i - 7] +
          ((y >>> 17 | y << 15) ^ (y >>> 19 | y << 13) ^ (y >>> 10)) | 0;
      }
      var a = H[0], b = H[1], c = H[2], d = H[3], e = H[4], f = H[5], g = H[6], h = H[7], t1, t2;
      for (i = 0; i < 64; i++) {
        t1 = h + ((e >>> 6 | e << 26) ^ (e >>> 11 | e << 21) ^ (e >>> 25 | e << 7)) + (e & f ^ ~e & g) + K[i] + W[i] | 0;
        t2 = ((a >>> 2 | a << 30) ^ (a >>> 13 | a << 19) ^ (a >>> 22 | a << 10)) + (a & b ^ a & c ^ b & c) | 0;
        h = g; g = f; f = e; e = d + t1 | 0; d = c; c = b; b = a; a = t1 + t2 | 0;
      }
      H[0] = H[0] + a | 0; H[1] = H[1] + b | 0; H[2] = H[2] + c | 0; H[3] = H[3] + d | 0;
      H[4] = H[4] + e | 0; H[5] = H[5] + f | 0; H[6] = H[6] + g | 0; H[7] = H[7] + h | 0;
    }
    // Tries counters start, start + step, ... for about `ms` milliseconds.
    return function search(prefix, bits, start, step, ms) {
      var mid = new Int32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
      var p = new Uint8Array(prefix.length), i, full = prefix.length - prefix.length % 64;
      for (i = 0; i < prefix.length; i++) { p[i] = prefix.charCodeAt(i); }
      for (i = 0; i < full; i += 64) { compress(mid, p, i); }
      var tail = prefix.length - full, H = new Int32Array(8), c = start, tried = 0;
      var shift = 32 - bits, until = Date.now() + ms;
      for (i = 0; i < tail; i++) { B[i] = p[full + i]; }
      for (;;) {
        for (var n = 0; n < 1024; n++, c += step, tried++) {
          var s = String(c), len = tail + s.length, j;
          for (j = 0; j < s.length; j++) { B[tail + j] = s.charCodeAt(j); }
          B[len] = 0x80;
          var end = len + 9 <= 64 ? 64 : 128;
          for (j = len + 1; j < end - 4; j++) { B[j] = 0; }
          var total = (full + len) * 8;
          B[end - 4] = total >>> 24; B[end - 3] = total >>> 16 & 255; B[end - 2] = total >>> 8 & 255; B[end - 1] = total & 255;
          H.set(mid);
          compress(H, B, 0);
          if (end === 128) { compress(H, B, 64); }
          if (bits === 0 || H[0] >>> shift === 0) { return { found: c, tried: tried + 1 }; }
        }
        if (Date.now() >= until) { return { found: -1, tried: tried, next: c }; }
      }
    };
  }

  var expected = Math.pow(2, data.d), tried = [], prefix = data.n + ":";
  function progress() {
    var sum = 0;
    for (var i = 0; i < tried.length; i++) { sum += tried[i]; }
    // The chance the work would be done by now: 63% at the expected count.
    if (bar) { bar.value = Math.round(100 * (1 - Math.exp(-sum / expected))); }
  }
  function found(c) {
    if (over) { return; }
    stop();
    say(S.done);
    location.replace(data.e + "?n=" + data.n + "&c=" + c + "&r=" + data.r);
  }

  function onMain() {
    var search = core(), c = 0;
    tried = [0];
    (function step() {
      if (over) { return; }
      var r = search(prefix, data.d, c, 1, 40);
      tried[0] += r.tried;
      progress();
      if (r.found >= 0) { found(r.found); return; }
      c = r.next;
      setTimeout(step, 0);
    })();
  }

  function inWorkers(n) {
    var code = "var search = (" + core + ")();\n" +
      "onmessage = function (e) { var m = e.data, c = m.start;\n" +
      "  for (;;) { var r = search(m.prefix, m.bits, c, m.step, 150);\n" +
      "    if (r.found >= 0) { postMessage({ found: r.found, tried: r.tried }); return; }\n" +
      "    postMessage({ tried: r.tried }); c = r.next; } };";
    var url = URL.createObjectURL(new Blob([code], { type: "text/javascript" }));
    tried = [];
    for (var i = 0; i < n; i++) {
      (function (i) {
        var w = new Worker(url);
        tried.push(0);
        w.onmessage = function (e) {
          tried[i] += e.data.tried;
          progress();
          if (e.data.found !== undefined) { found(e.data.found); }
        };
        // A policy without `worker-src blob:` refuses the worker here: go
        // on in this thread instead.
        w.onerror = function (e) {
          if (e && e.preventDefault) { e.preventDefault(); }
          if (over || workers.length === 0) { return; }
          for (var k = 0; k < workers.length; k++) { workers[k].terminate(); }
          workers = [];
          onMain();
        };
        workers.push(w);
        w.postMessage({ prefix: prefix, bits: data.d, start: i, step: n });
      })(i);
    }
  }

  if (navigator.cookieEnabled === false) {
    end(S.cookies_heading, S.cookies_text);
    return;
  }
  if (!window.Uint8Array || !window.Int32Array || !Uint8Array.prototype.set) {
    end(S.error_heading, S.error);
    return;
  }
  say(S.working);
  if (bar) { bar.hidden = false; }
  var threads = tune.threads || Math.min(navigator.hardwareConcurrency || 2, 8);
  if (window.Worker && window.Blob && window.URL && URL.createObjectURL && !tune.main) {
    try {
      inWorkers(threads);
      return;
    } catch (e) {
      stop();
      over = false;
      if (bar) { bar.hidden = false; }
    }
  }
  onMain();
})();
