// Small progressive enhancements; the admin works without them. No inline scripts (CSP).
document.addEventListener("DOMContentLoaded", function () {
  // Ask before removing a source.
  document.querySelectorAll("form.confirm-remove").forEach(function (f) {
    f.addEventListener("submit", function (ev) {
      if (!window.confirm("Remove this work from the library?")) { ev.preventDefault(); }
    });
  });
  // Keys n / p jump to the next / previous highlighted passage of the suspect text.
  var marks = Array.prototype.slice.call(document.querySelectorAll("#suspect-text mark"));
  var at = -1;
  document.addEventListener("keydown", function (ev) {
    if (!marks.length || /INPUT|TEXTAREA|SELECT/.test(ev.target.tagName)) { return; }
    if (ev.key === "n") { at = (at + 1) % marks.length; }
    else if (ev.key === "p") { at = (at - 1 + marks.length) % marks.length; }
    else { return; }
    location.hash = marks[at].id;
  });
});
