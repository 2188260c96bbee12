// Page script of the capture site: what a shop's own JavaScript does on load.
// Every request here goes through nginx and is recorded.
(function () {
  "use strict";
  document.cookie = "consent=1; path=/; max-age=31536000; SameSite=Lax";
  // The cross-origin API: another host of the same test site (see capture.py).
  var api = location.hostname === "127.0.0.1"
    ? location.protocol + "//localhost" + (location.port ? ":" + location.port : "")
    : location.origin.replace("//shop", "//api");
  var page = document.body.getAttribute("data-page");
  // Same-origin fetch() with the site's cookies, on every page.
  fetch("/api/cart", { credentials: "same-origin" })
    .then(function (r) { return r.json(); })
    .then(function (cart) { document.title = document.title + " (" + cart.items + ")"; })
    .catch(function () {});
  if (page === "product") {
    var id = document.body.getAttribute("data-product");
    // A simple cross-origin GET (no preflight) ...
    fetch(api + "/api/reviews?product=" + id)
      .then(function (r) { return r.json(); })
      .then(function (j) { document.getElementById("reviews").textContent = j.reviews.length + " reviews"; })
      .catch(function () {});
    // ... and a JSON POST, which a browser preflights with OPTIONS.
    fetch(api + "/api/events", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ event: "view", product: id })
    }).catch(function () {});
  } else if (page === "product-page") {
    // Stock of the product in the query's size, with an explicit JSON Accept.
    var size = new URLSearchParams(location.search).get("size") || "";
    fetch("/api/stock?sku=" + document.body.getAttribute("data-sku") + "&size=" + encodeURIComponent(size),
      { headers: { "Accept": "application/json" } })
      .then(function (r) { return r.json(); })
      .then(function (j) { document.getElementById("stock").textContent = j.available ? "In stock" : "Sold out"; })
      .catch(function () {});
  } else if (page === "article") {
    fetch("/api/comments?post=" + document.body.getAttribute("data-post"))
      .then(function (r) { return r.json(); })
      .then(function (j) { document.getElementById("comments").textContent = j.comments.length + " comments"; })
      .catch(function () {});
  }
})();
