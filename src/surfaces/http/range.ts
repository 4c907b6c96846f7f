/** An inclusive byte range of a representation. */
export interface ByteRange {
  start: number;
  end: number;
}

/**
 * The one byte range a `Range` header asks of a `size`-byte representation (RFC 9110 §14.1.2):
 * `'full'` to send it all (no header, another unit, several ranges, or a malformed header, which
 * the RFC lets a server ignore), `'unsatisfiable'` for a well-formed range wholly past the end.
 */
export function resolveRange(header: string | undefined, size: number): ByteRange | 'full' | 'unsatisfiable' {
  if (header === undefined) return 'full';
  const match = /^bytes=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!match) return 'full';
  const [, first = '', last = ''] = match;
  if (first === '' && last === '') return 'full';
  if (first === '') {
    // A suffix: the last N bytes.
    const n = Number(last);
    if (!Number.isSafeInteger(n)) return 'full';
    if (n === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(first);
  const end = last === '' ? size - 1 : Math.min(Number(last), size - 1);
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end)) return 'full';
  if (last !== '' && Number(last) < start) return 'full';
  if (start >= size) return 'unsatisfiable';
  return { start, end };
}
