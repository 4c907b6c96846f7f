// The driver loop's view of the database's weather (src/surfaces/drivers/outage.ts): which errors
// it waits out and which end the driver, and how it waits.
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { SluiceError, type SluiceErrorCode } from '../../src/core/errors.js';
import {
  classifyFault,
  isDatabaseAway,
  type OutageEvent,
  throughOutage,
} from '../../src/surfaces/drivers/outage.js';

/** An error as `pg` throws it: an Error with a SQLSTATE `code` (and the server's fields). */
function pgError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code, severity: 'FATAL', routine: 'ProcessInterrupts' });
}

/** An error as Node's net module throws it. */
function socketError(code: string): Error {
  return Object.assign(new Error(`connect ${code} 127.0.0.1:5432`), {
    code,
    errno: -111,
    syscall: 'connect',
  });
}

describe('classifyFault', () => {
  test.each([
    ['57P01 admin shutdown', pgError('57P01', 'terminating connection due to administrator command')],
    ['57P03 starting up', pgError('57P03', 'the database system is starting up')],
    ['08006 connection failure', pgError('08006', 'connection failure')],
    ['ECONNREFUSED', socketError('ECONNREFUSED')],
    ['ECONNRESET', socketError('ECONNRESET')],
    ['pg: Connection terminated (no code)', new Error('Connection terminated unexpectedly')],
    ['53300 too many connections', pgError('53300', 'sorry, too many clients already')],
    [
      'the store’s own unavailable (weather.ts)',
      new SluiceError('unavailable', 'cannot reach PostgreSQL at h:5432/db (connect ECONNREFUSED)', {
        reason: 'database',
        applied: 'no',
      }),
    ],
  ])('%s is waited out', (_, err) => {
    expect(classifyFault(err)).toBe('transient');
  });

  test.each([
    ['an unknown error', new Error('Cannot read properties of undefined')],
    ['28P01 wrong password', pgError('28P01', 'password authentication failed for user "sluice"')],
    ['3D000 no such database', pgError('3D000', 'database "nope" does not exist')],
    ['42P01 table dropped', pgError('42P01', 'relation "inbox" does not exist')],
    ['a denied Sluice error', new SluiceError('denied', 'bot may not do that')],
    ['a conflict (identity)', new SluiceError('conflict', 'agent bot is already driven by another process')],
    [
      'unavailable without a store reason',
      new SluiceError('unavailable', 'codex app-server exited (code 1)'),
    ],
    ['a string', 'ECONNREFUSED'],
    ['null', null],
    ['undefined', undefined],
    ['a numeric code', { code: 57, message: 'boom' }],
    ['an unknown SQLSTATE', pgError('XX000', 'internal error')],
    ['an unknown socket-like code', socketError('EWHATEVER')],
    ['a message that only mentions a lost connection', new Error('oops: Connection terminated later')],
  ])('%s ends the driver', (_, err) => {
    expect(classifyFault(err)).toBe('fatal');
  });

  test('any value at all is classified without throwing, and only an unavailable Sluice error of a store reason is transient among Sluice errors', () => {
    fc.assert(
      fc.property(fc.anything(), (value) => {
        expect(['transient', 'fatal']).toContain(classifyFault(value));
      }),
    );
    const codes: SluiceErrorCode[] = [
      'invalid_params',
      'invalid_cursor',
      'not_found',
      'not_member',
      'denied',
      'conflict',
      'too_large',
      'unavailable',
      'rate_limited',
      'internal',
    ];
    fc.assert(
      fc.property(fc.constantFrom(...codes), fc.option(fc.string()), (code, reason) => {
        const err = new SluiceError(code, 'x', reason === null ? undefined : { reason });
        const expected =
          code === 'unavailable' &&
          ['database', 'connection', 'busy', 'io', 'disk_full'].includes(reason ?? '')
            ? 'transient'
            : 'fatal';
        expect(classifyFault(err)).toBe(expected);
      }),
    );
  });

  test('a hostile error whose properties throw when read is fatal, not a crash of the classifier', () => {
    const hostile = new Proxy(
      {},
      {
        get() {
          throw new Error('no reading me');
        },
      },
    );
    expect(() => classifyFault(hostile)).not.toThrow();
    expect(classifyFault(hostile)).toBe('fatal');
  });
});

describe('isDatabaseAway', () => {
  const unavailable = (reason: string) => new SluiceError('unavailable', 'x', { reason });
  test.each([
    ['the database unreachable', unavailable('database'), true],
    ['a connection lost mid-request', unavailable('connection'), true],
    ['a raw ECONNRESET', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }), true],
    ['a disk I/O error', unavailable('io'), false],
    ['a full disk', unavailable('disk_full'), false],
    ['SQLite busy', unavailable('busy'), false],
    ['a denial', new SluiceError('denied', 'no'), false],
    ['null', null, false],
  ])('%s: %s', (_, err, away) => {
    expect(isDatabaseAway(err)).toBe(away);
  });
});

describe('throughOutage', () => {
  const never = new Promise<'aborted'>(() => {});

  test('waits out transient failures, reporting each attempt and the recovery, then returns the value', async () => {
    const events: OutageEvent[] = [];
    let calls = 0;
    const value = await throughOutage(
      async () => {
        calls++;
        if (calls === 1) throw pgError('57P01', 'terminating connection due to administrator command');
        if (calls === 2) throw socketError('ECONNREFUSED');
        return 'settled';
      },
      { aborted: never, onOutage: (e) => events.push(e), backoffMs: () => 1 },
    );
    expect(value).toBe('settled');
    expect(events.map((e) => e.phase)).toEqual(['unavailable', 'unavailable', 'back']);
    expect(events[0]).toMatchObject({
      attempt: 1,
      error: 'terminating connection due to administrator command',
    });
    expect(events[1]).toMatchObject({ attempt: 2, error: 'connect ECONNREFUSED 127.0.0.1:5432' });
  });

  test('throws a fatal failure at once, reporting no outage', async () => {
    const events: OutageEvent[] = [];
    const denied = new SluiceError('denied', 'no');
    await expect(
      throughOutage(
        async () => {
          throw denied;
        },
        { aborted: never, onOutage: (e) => events.push(e), backoffMs: () => 1 },
      ),
    ).rejects.toBe(denied);
    expect(events).toEqual([]);
  });

  test('a stop during the wait ends it with aborted, without another attempt', async () => {
    let calls = 0;
    let abort!: () => void;
    const aborted = new Promise<'aborted'>((resolve) => {
      abort = () => resolve('aborted');
    });
    const result = throughOutage(
      async () => {
        calls++;
        throw socketError('ECONNRESET');
      },
      { aborted, onOutage: (e) => e.phase === 'unavailable' && abort(), backoffMs: () => 60_000 },
    );
    expect(await result).toBe('aborted');
    expect(calls).toBe(1);
  });
});
