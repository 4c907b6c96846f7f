// "5 minutes ago" in the timeline, the exact time on hover. One shared ticker re-renders the
// relative labels every 30 s, so they never go stale while the page stays open.

import { useEffect, useState } from 'preact/hooks';
import { dueLabel, relativeLabel } from './time-labels.js';

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

/** `<time>` showing a relative label, with the exact local time (to the second) as its tooltip. */
export function RelativeTime({ iso, due = false }: { iso: string; due?: boolean }) {
  const now = useNow();
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return <time>{iso}</time>;
  const exact = at.toLocaleString(undefined, { dateStyle: 'full', timeStyle: 'medium' });
  return (
    <time dateTime={iso} title={exact}>
      {due ? dueLabel(at, now) : relativeLabel(at, now)}
    </time>
  );
}
