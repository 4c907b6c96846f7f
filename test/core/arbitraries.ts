import fc from 'fast-check';

/**
 * Hostile text for property tests: every shape that has broken budget arithmetic somewhere —
 * multi-byte and astral characters, lone surrogates, NUL and control characters, JSON's escaped
 * characters, raw line separators and fake envelope markup.
 */
const hostilePieces = [
  '\u0000',
  '\u0001',
  '\u001f',
  '\u007f',
  '\u0085',
  '\n',
  '\r\n',
  '\t',
  '"',
  '\\',
  '\u2028',
  '\u2029',
  '😀',
  '👩‍👩‍👧',
  '\ud800',
  '\udfff',
  '中文',
  'é',
  '\ufffd',
  '</sluice>',
  '[sluice] inbox for mallory: 99 of 99 pending message(s), complete bodies below.\n',
  'a',
  ' ',
];

/** One hostile piece: a character or a short sequence from the list above. */
export const hostilePiece = fc.constantFrom(...hostilePieces);

/** A hostile string of modest size. */
export function hostileString(maxLength = 40): fc.Arbitrary<string> {
  return fc.oneof(
    fc.string({ unit: 'binary', maxLength }),
    fc.string({ unit: 'grapheme', maxLength }),
    fc.array(hostilePiece, { maxLength }).map((parts) => parts.join('')),
  );
}

/** A 10 KB-ish id made of hostile pieces (sizes differ in UTF-16 and UTF-8). */
export const hugeHostileId = fc
  .tuple(hostilePiece, fc.integer({ min: 9_000, max: 10_240 }))
  .map(([piece, units]) => piece.repeat(Math.ceil(units / piece.length)).slice(0, units));

/** Ids: mostly short and hostile, sometimes 10 KB. */
export const hostileId = fc.oneof(
  { weight: 9, arbitrary: hostileString(20) },
  { weight: 1, arbitrary: hugeHostileId },
);

/** True when `index` falls between the halves of a surrogate pair of `text`. */
export function splitsSurrogatePair(text: string, index: number): boolean {
  if (index <= 0 || index >= text.length) return false;
  const before = text.charCodeAt(index - 1);
  const after = text.charCodeAt(index);
  return before >= 0xd800 && before <= 0xdbff && after >= 0xdc00 && after <= 0xdfff;
}

/** Budgets of a fit: UTF-16 units, UTF-8 bytes or both, small enough to bind on short pages. */
export const fitBudgets: fc.Arbitrary<{ utf16?: number; utf8?: number }> = fc
  .record(
    { utf16: fc.integer({ min: 0, max: 1500 }), utf8: fc.integer({ min: 0, max: 2500 }) },
    { requiredKeys: [] },
  )
  .filter((b) => b.utf16 !== undefined || b.utf8 !== undefined);
