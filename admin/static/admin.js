// Small progressive enhancements; the admin works without them. No inline scripts (CSP).
document.addEventListener("DOMContentLoaded", function () {
  // Ask before removing a source.
  document.querySelectorAll("form.confirm-remove").forEach(function (f) {
    f.addEventListener("submit", function (ev) {
      if (!window.confirm("Remove this work from the library?")) { ev.preventDefault(); }
    });
  });
  function typing(ev) {
    return ev.ctrlKey || ev.metaKey || ev.altKey || /INPUT|TEXTAREA|SELECT|BUTTON/.test(ev.target.tagName) &&
      !(ev.target.type === "checkbox" && ev.target.classList.contains("tick"));
  }
  // Match detail: n / p jump between the highlighted passages; c, d, l review and open the next
  // unreviewed match; j skips to it; k goes back.
  var marks = Array.prototype.slice.call(document.querySelectorAll("#suspect-text mark"));
  var at = -1;
  var review = document.getElementById("review-form");
  var detailKeys = {c: "btn-confirm-next", d: "btn-dismiss-next", l: "btn-license-next"};
  if (review || marks.length) {
    document.addEventListener("keydown", function (ev) {
      if (typing(ev)) { return; }
      if (marks.length && (ev.key === "n" || ev.key === "p")) {
        at = ev.key === "n" ? (at + 1) % marks.length : (at - 1 + marks.length) % marks.length;
        location.hash = marks[at].id;
      } else if (review && detailKeys[ev.key]) {
        ev.preventDefault();
        document.getElementById(detailKeys[ev.key]).click();
      } else if (review && ev.key === "j") {
        var next = document.getElementById("next-match") || document.getElementById("back-to-list");
        location.href = next.href;
      } else if (review && ev.key === "k") {
        history.back();
      }
    });
  }
  // Make-notice form: a known rights holder fills in the contact and address remembered for it.
  var holder = document.getElementById("holder");
  if (holder) {
    holder.addEventListener("change", function () {
      document.querySelectorAll("#known-holders li").forEach(function (li) {
        if (li.dataset.holder === holder.value) {
          document.getElementById("contact").value = li.dataset.contact;
          document.getElementById("address").value = li.dataset.address;
        }
      });
    });
  }
  // Matches list: j / k move the current row, x ticks it, Enter opens it, c / d / l submit the bulk
  // form for the ticked rows (or the current row when none is ticked).
  var bulk = document.getElementById("bulk-form");
  if (!bulk) { return; }
  var rows = Array.prototype.slice.call(bulk.querySelectorAll("tbody tr[data-id]"));
  var ticks = Array.prototype.slice.call(bulk.querySelectorAll("input.tick"));
  var counter = document.getElementById("ticked");
  var cur = -1;
  function count() {
    counter.textContent = ticks.filter(function (t) { return t.checked; }).length;
  }
  ticks.forEach(function (t) { t.addEventListener("change", count); });
  var all = document.getElementById("tick-all");
  if (all) {
    all.addEventListener("change", function () {
      ticks.forEach(function (t) { t.checked = all.checked; });
      count();
    });
  }
  function move(to) {
    if (!rows.length) { return; }
    if (cur >= 0) { rows[cur].classList.remove("current"); }
    cur = Math.max(0, Math.min(rows.length - 1, to));
    rows[cur].classList.add("current");
    rows[cur].scrollIntoView({block: "nearest"});
  }
  var listKeys = {c: "bulk-confirm", d: "bulk-dismiss", l: "bulk-license"};
  document.addEventListener("keydown", function (ev) {
    if (typing(ev)) { return; }
    if (ev.key === "j") { move(cur + 1); }
    else if (ev.key === "k") { move(cur - 1); }
    else if (ev.key === "x" && cur >= 0) { ticks[cur].checked = !ticks[cur].checked; count(); }
    else if (ev.key === "Enter" && cur >= 0) { location.href = rows[cur].querySelector("a.match-link").href; }
    else if (listKeys[ev.key]) {
      if (!ticks.some(function (t) { return t.checked; })) {
        if (cur < 0) { return; }
        ticks[cur].checked = true;
      }
      ev.preventDefault();
      document.getElementById(listKeys[ev.key]).click();
    } else { return; }
    ev.preventDefault();
  });
});
