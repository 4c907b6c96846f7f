/**
 * Longest prefix of `s` whose UTF-8 encoding is at most `maxBytes` bytes, cut on a code point
 * boundary (never half a surrogate pair). A lone surrogate counts 3 bytes, as it encodes to
 * U+FFFD. `truncated` says whether anything was cut.
 */
export function cutUtf8(s: string, maxBytes: number): { text: string; truncated: boolean } {
  const limit = Number.isNaN(maxBytes) ? 0 : maxBytes;
  let bytes = 0;
  let index = 0;
  while (index < s.length) {
    const code = s.charCodeAt(index);
    let width: number;
    let step = 1;
    if (code < 0x80) width = 1;
    else if (code < 0x800) width = 2;
    else if (code >= 0xd800 && code <= 0xdbff && isLowSurrogateAt(s, index + 1)) {
      width = 4;
      step = 2;
    } else width = 3;
    if (bytes + width > limit) return { text: s.slice(0, index), truncated: true };
    bytes += width;
    index += step;
  }
  return { text: s, truncated: false };
}

function isLowSurrogateAt(s: string, index: number): boolean {
  const code = s.charCodeAt(index);
  return code >= 0xdc00 && code <= 0xdfff;
}
