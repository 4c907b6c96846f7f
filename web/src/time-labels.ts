// The words a time reads as on the page: how long ago, or how long until (time.tsx renders them).

const UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ['minute', 60],
  ['hour', 3600],
  ['day', 86_400],
];

/** A short relative label: "just now", "5 minutes ago", "3 hours ago", "2 days ago", else the date. */
export function relativeLabel(at: Date, now: number, locale?: string): string {
  const seconds = Math.round((now - at.getTime()) / 1000);
  if (Math.abs(seconds) < 45) return 'just now';
  if (seconds < 0 || seconds >= 7 * 86_400)
    return at.toLocaleDateString(locale, { year: 'numeric', month: 'short', day: 'numeric' });
  const format = new Intl.RelativeTimeFormat(locale, { numeric: 'auto' });
  let label = format.format(-Math.max(1, Math.round(seconds / 60)), 'minute');
  for (const [unit, size] of UNITS)
    if (seconds >= size) label = format.format(-Math.round(seconds / size), unit);
  return label;
}

/**
 * When something due will happen: "in 10 minutes", "in 2 hours", "in 3 days"; "within a minute"
 * when it is that close, "now" once it has passed. (A due time shown as a date read as if the
 * timeout were days away.)
 */
export function dueLabel(at: Date, now: number, locale?: string): string {
  const seconds = Math.round((at.getTime() - now) / 1000);
  if (seconds <= 0) return 'now';
  if (seconds < 60) return 'within a minute';
  const format = new Intl.RelativeTimeFormat(locale, { numeric: 'always' });
  let label = format.format(Math.round(seconds / 60), 'minute');
  // A unit once there are at least two of it: 90 minutes reads "in 90 minutes", not "in 2 hours".
  for (const [unit, size] of UNITS)
    if (seconds >= 2 * size) label = format.format(Math.round(seconds / size), unit);
  return label;
}
