// databaseLocation: the store a host hands to the agents it starts and to their clients' settings.
// Whether `--db` or SLUICE_DB named it, the value handed on names the same store from any folder,
// and is never empty (an empty SLUICE_DB in a client's settings once sent the agent's `sluice` to
// the home's SQLite file while the host ran on PostgreSQL: "not_found: no Sluice home").
import { isAbsolute, resolve } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { databaseLocation } from '../../src/host/identity/home.js';

const PG = 'postgres://sluice@db.example:5432/sluice?schema=s1';

/** Values `--db` / SLUICE_DB may hold: nothing, empty, a PostgreSQL URL, a relative or absolute file. */
const dbValue = fc.oneof(
  fc.constant(undefined),
  fc.constant(''),
  fc.constantFrom(PG, 'postgresql://h/db'),
  fc.stringMatching(/^[a-z0-9_./-]{1,20}$/).filter((s) => !s.includes('://')),
  fc.stringMatching(/^\/[a-z0-9_./-]{1,20}$/),
);

describe('databaseLocation', () => {
  it('the flag wins over the environment; empty means the home file; never an empty string', () => {
    fc.assert(
      fc.property(dbValue, dbValue, (flag, env) => {
        const got = databaseLocation(flag, env === undefined ? {} : { SLUICE_DB: env });
        const named = flag ?? env;
        if (named === undefined || named === '') expect(got).toBeUndefined();
        else if (named.includes('://')) expect(got).toBe(named);
        else {
          expect(got).toBe(resolve(named));
          expect(isAbsolute(got as string)).toBe(true);
        }
        expect(got).not.toBe('');
      }),
    );
  });

  it('SLUICE_DB alone is enough (the field bug: only --db was handed on)', () => {
    expect(databaseLocation(undefined, { SLUICE_DB: PG })).toBe(PG);
    expect(databaseLocation(undefined, { SLUICE_DB: 'data/sluice.db' })).toBe(resolve('data/sluice.db'));
    expect(databaseLocation('', { SLUICE_DB: PG })).toBeUndefined();
  });

  it('a URL of another scheme is refused with invalid_params, as openHost refuses it', () => {
    expect(() => databaseLocation(undefined, { SLUICE_DB: 'mysql://h/db' })).toThrow(
      expect.objectContaining({ code: 'invalid_params' }),
    );
  });
});
