// "5 minutes ago" in the timeline, the exact time on hover. One shared ticker re-renders the
// relative labels every 30 s, so they never go stale while the page stays open.

import { useEffect, useState } from 'preact/hooks';

const TICK_MS = 30_000;
const listeners = new Set<() => void>();
let timer: ReturnType<typeof setInterval> | null = null;

function useNow(): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const tick = () => setNow(Date.now());
    listeners.add(tick);
    timer ??= setInterval(() => {
      for (const listener of listeners) listener();
    }, TICK_MS);
    return () => {
      listeners.delete(tick);
      if (listeners.size === 0 && timer !== null) {
        clearInterval(timer);
        timer = null;
      }
    };
  }, []);
  return now;
}

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

/** `<time>` showing a relative label, with the exact local time (to the second) as its tooltip. */
export function RelativeTime({ iso }: { iso: string }) {
  const now = useNow();
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return <time>{iso}</time>;
  const exact = at.toLocaleString(undefined, { dateStyle: 'full', timeStyle: 'medium' });
  return (
    <time dateTime={iso} title={exact}>
      {relativeLabel(at, now)}
    </time>
  );
}
