// The reader's own time zone, and how long ago: the page says every time
// in UTC without this script.
(() => {
  const now = Date.now();
  const ago = ms => {
    const s = Math.round(Math.abs(ms) / 1000), past = ms >= 0;
    const n = s < 60 ? s + " s" : s < 3600 ? Math.round(s / 60) + " min" : s < 86400 ? Math.round(s / 3600) + " h" : Math.round(s / 86400) + " d";
    return past ? n + " ago" : "in " + n;
  };
  for (const t of document.querySelectorAll("time[datetime]")) {
    const d = new Date(t.dateTime);
    if (isNaN(d)) continue;
    const local = d.toLocaleString(undefined, {month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", timeZoneName: "short"});
    t.title = local + ", your time";
    if (!t.closest(".facts, .overall")) continue;
    const s = document.createElement("span");
    s.className = "local";
    s.textContent = " (" + ago(now - d) + (d.getTimezoneOffset() ? "; your time " + local : "") + ")";
    t.after(s);
  }
})();
