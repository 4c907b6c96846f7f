/**
 * Splits a body into chat-sized parts whose concatenation is exactly the body.
 *
 * Chat transports (Telegram: 4,096 characters a message) cap one message; a body is never cut
 * short, it goes out as ordered parts instead. Each part ends, by preference, right after a line
 * break in the second half of its window (a reader sees whole lines), else on a code-point
 * boundary (a surrogate pair is never split). Lengths count UTF-16 code units, as Telegram does.
 */
export function splitIntoParts(body: string, maxUnits: number): string[] {
  if (!Number.isInteger(maxUnits) || maxUnits < 2) throw new RangeError('maxUnits must be an integer ≥ 2');
  const parts: string[] = [];
  let start = 0;
  while (body.length - start > maxUnits) {
    const end = cutPoint(body, start, maxUnits);
    parts.push(body.slice(start, end));
    start = end;
  }
  if (start < body.length || parts.length === 0) parts.push(body.slice(start));
  return parts;
}

function cutPoint(body: string, start: number, maxUnits: number): number {
  const limit = start + maxUnits;
  const newline = body.lastIndexOf('\n', limit - 1);
  if (newline >= start + maxUnits / 2) return newline + 1;
  // A high surrogate as the last unit would leave its pair in the next part.
  const last = body.charCodeAt(limit - 1);
  return last >= 0xd800 && last <= 0xdbff ? limit - 1 : limit;
}
