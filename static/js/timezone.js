// Tell the server the browser's time zone (the same `tz` cookie the reservation pages set), so pages show local time.
(function () {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  if (zone && !document.cookie.split("; ").some((c) => c.startsWith("tz="))) {
    document.cookie = "tz=" + encodeURIComponent(zone) + "; path=/; max-age=31536000; samesite=lax";
  }
})();
