const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/**
 * A ULID-style sortable id: 48-bit milliseconds then 80 random bits, Crockford base32
 * (26 characters). Time and randomness are arguments so the function stays pure.
 */
export function formatSortableId(timeMs: number, random: Uint8Array): string {
  if (random.length < 10) throw new RangeError('formatSortableId needs 10 random bytes');
  let time = '';
  let t = Math.max(0, Math.floor(timeMs));
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[t % 32] + time;
    t = Math.floor(t / 32);
  }
  let bits = 0;
  let value = 0;
  let rand = '';
  for (let i = 0; i < 10; i++) {
    value = (value << 8) | (random[i] as number);
    bits += 8;
    while (bits >= 5) {
      rand += CROCKFORD[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
    value &= (1 << bits) - 1;
  }
  return time + rand;
}

/** A short random id with a kind prefix (`p_`, `c_`, `t_`, `a_`), base32 lowercase. */
export function formatPrefixedId(prefix: string, random: Uint8Array): string {
  let out = '';
  for (const byte of random) out += CROCKFORD[byte & 31]!.toLowerCase();
  return `${prefix}_${out}`;
}
