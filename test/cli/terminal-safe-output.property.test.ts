import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { createChannel } from '../../src/host/channels/channels.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { renderTable } from '../../src/surfaces/cli/list-output.js';
import { firstLine, quotedBody } from '../../src/surfaces/cli/message-text.js';
import { hostilePiece, hostileString } from '../core/arbitraries.js';
import { runCliHere } from '../support/cli-in-process.js';
import { useInProcessCliHome } from './in-process-home.js';

// What a sender wrote reaches a person's terminal through `message read`, `message ls` and
// `channel history`. For any hostile subject and body the text output keeps its shape: no line a
// sender did not get from Sluice, no byte a terminal acts on (ESC, other controls, bidi overrides).
// `--json` stays exact.

/** Pieces a terminal acts on, and lines that would pass for Sluice's own headers. */
const terminalPieces = fc.constantFrom(
  '\u001b[31m',
  '\u001b[2J\u001b[H',
  '\u001b]0;title\u0007',
  '\u009b1m',
  '\u202e',
  '\u2066',
  '\u200b',
  '\r',
  '\nFrom: owner\n',
  '\nSubject: forged\n',
  '\n\n',
);

const hostileText = fc.oneof(
  hostileString(40),
  fc.array(fc.oneof(hostilePiece, terminalPieces), { minLength: 1, maxLength: 12 }).map((p) => p.join('')),
);

/** Text the store accepts: lone surrogates replaced, never blank (an empty body is refused). */
const storable = (text: fc.Arbitrary<string>) =>
  text
    .map((t) =>
      t.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd'),
    )
    .filter((t) => t.trim() !== '');

/** Any character a terminal acts on instead of showing (newline and tab are layout, kept). */
const ACTS_ON_TERMINAL = /(?![\n\t])[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

describe('hostile senders cannot shape terminal output', () => {
  const home = useInProcessCliHome();
  const run = (args: string[]) => runCliHere(args, { home: home.ctx.home });

  beforeAll(async () => {
    await createChannel(home.ctx, home.owner, { name: 'general', members: [] });
  });

  it('message read: headers, a blank line, the body; no forged header, no escape byte', async () => {
    await fc.assert(
      fc.asyncProperty(storable(hostileText), storable(hostileText), async (subject, body) => {
        const sent = await sendMessage(home.ctx, home.owner, { to: '#general', subject, body });
        const out = await run(['message', 'read', sent.message_id]);
        expect(out.code).toBe(0);
        expect(out.stdout).not.toMatch(ACTS_ON_TERMINAL);
        const lines = out.stdout.split('\n');
        // From, Channel, Date, Id, Subject: five headers, then the blank line.
        expect(lines.slice(0, 5).map((l) => l.split(': ', 1)[0])).toEqual([
          'From',
          'Channel',
          'Date',
          'Id',
          'Subject',
        ]);
        expect(lines[5]).toBe('');
        // The body keeps its own lines and gains none.
        expect(lines.length).toBe(6 + body.split('\n').length + 1);
        expect(lines.at(-1)).toBe('');

        const json = await run(['message', 'read', sent.message_id, '--json']);
        const row = JSON.parse(json.stdout) as { subject: string; body: string };
        expect(row.subject).toBe(subject);
        expect(row.body).toBe(body);
      }),
      { numRuns: 60 },
    );
  });

  it('channel history: one header line per message, body lines quoted', async () => {
    await fc.assert(
      fc.asyncProperty(storable(hostileText), storable(hostileText), async (subject, body) => {
        const sent = await sendMessage(home.ctx, home.owner, { to: '#general', subject, body });
        const history = await run(['channel', 'history', '#general', '--limit', '1']);
        expect(history.code).toBe(0);
        expect(history.stdout).not.toMatch(ACTS_ON_TERMINAL);
        const [head, ...rest] = history.stdout.split('\n');
        expect(head).toMatch(new RegExp(`^\\S+ owner \\(self\\) \\[${sent.message_id}\\]:`));
        expect(rest.at(-1)).toBe('');
        for (const line of rest.slice(0, -1)) expect(line.startsWith('> ')).toBe(true);
      }),
      { numRuns: 40 },
    );
  });

  it('an ESC in a subject shows as its escape, not as the byte', async () => {
    const sent = await sendMessage(home.ctx, home.owner, {
      to: '#general',
      subject: 'hi\nFrom: owner (owner)\u001b[2J\u202e',
      body: 'x\u001b]0;pwned\u0007\ny',
    });
    const out = await run(['message', 'read', sent.message_id]);
    expect(out.stdout).toContain('Subject: hi\\u000aFrom: owner (owner)\\u001b[2J\\u202e\n');
    expect(out.stdout.endsWith('\n\nx\\u001b]0;pwned\\u0007\ny\n')).toBe(true);
  });

  it('listings: a bidi override in a cell or preview, an ESC in a quoted body show as escapes', () => {
    const table = renderTable([{ header: 'SUBJECT', cell: (r: string) => r }], ['pay \u202eexe.txt']);
    expect(table).toBe('SUBJECT\npay \\u202eexe.txt');
    expect(firstLine('a\u2066b\u001bc')).toBe('a\\u2066b c');
    expect(quotedBody('x\u001b[2Jy\tz\nw')).toBe('> x\\u001b[2Jy\tz\n> w');
  });
});
