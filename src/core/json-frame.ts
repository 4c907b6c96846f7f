import { SluiceError } from './errors.js';

/** The JSON text on either side of one member of an object. */
export interface JsonFrame {
  before: string;
  after: string;
}

/**
 * Splits `JSON.stringify(value)` around the member at `path` (a chain of object keys), so that
 * `before + JSON.stringify(member) + after` is exactly the text `JSON.stringify` gives for the
 * whole value. Readers use it to fit a variable member (rows, a body part) into a budget without
 * writing JSON by hand. Only plain objects along the path; members that are undefined are skipped
 * as `JSON.stringify` skips them.
 */
export function jsonAround(value: Record<string, unknown>, path: readonly string[]): JsonFrame {
  const [key, ...rest] = path;
  if (key === undefined) throw new SluiceError('internal', 'jsonAround needs a non-empty path');
  if (/^(0|[1-9]\d*)$/.test(key) || key === 'toJSON') {
    // Integer-like keys are reordered by JS objects and toJSON replaces the object.
    throw new SluiceError('internal', `jsonAround cannot split at key ${JSON.stringify(key)}`);
  }
  const members: string[] = [];
  let index = -1;
  let inner: JsonFrame = { before: '', after: '' };
  for (const [k, v] of Object.entries(value)) {
    if (k === key) {
      index = members.length;
      if (rest.length === 0) inner = { before: '', after: '' };
      else if (v !== null && typeof v === 'object' && !Array.isArray(v))
        inner = jsonAround(v as Record<string, unknown>, rest);
      else throw new SluiceError('internal', `jsonAround: ${JSON.stringify(k)} is not an object`);
      members.push(`${JSON.stringify(k)}:`);
      continue;
    }
    const text: string | undefined = JSON.stringify(v);
    if (text !== undefined) members.push(`${JSON.stringify(k)}:${text}`);
  }
  if (index < 0) throw new SluiceError('internal', `jsonAround: no member ${JSON.stringify(key)}`);
  const head = members.slice(0, index + 1);
  const tail = members.slice(index + 1);
  return {
    before: `{${head.join(',')}${inner.before}`,
    after: `${inner.after}${tail.length > 0 ? `,${tail.join(',')}` : ''}}`,
  };
}

/**
 * The value that {@link jsonAround}'s frame encodes around `member`: a copy of `value` with the
 * member at `path` replaced (plain objects along the path, key order kept), so a reader builds the
 * value it sends from objects instead of parsing `before + JSON.stringify(member) + after`.
 */
export function withMemberAt<T extends Record<string, unknown>>(
  value: T,
  path: readonly string[],
  member: unknown,
): T {
  const [key, ...rest] = path;
  if (key === undefined) throw new SluiceError('internal', 'withMemberAt needs a non-empty path');
  const inner =
    rest.length === 0 ? member : withMemberAt(value[key] as Record<string, unknown>, rest, member);
  return { ...value, [key]: inner };
}
