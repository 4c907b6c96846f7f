import { PassThrough } from 'node:stream';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { notUtf8Reply, Utf8LineGuard } from '../../src/surfaces/mcp/utf8-lines.js';

/** Pushes `chunks` through a guard; resolves with what passed and the replies it gave instead. */
async function guard(chunks: Buffer[]): Promise<{ passed: Buffer; replies: string[] }> {
  const replies: string[] = [];
  const input = new PassThrough();
  const out: Buffer[] = [];
  const guarded = input.pipe(new Utf8LineGuard((reply) => replies.push(reply)));
  guarded.on('data', (d: Buffer) => out.push(d));
  const ended = new Promise((resolve) => guarded.on('end', resolve));
  for (const c of chunks) input.write(c);
  input.end();
  await ended;
  return { passed: Buffer.concat(out), replies };
}

/** Cuts bytes into chunks at the given offsets (so lines and characters are split anywhere). */
function cut(bytes: Buffer, offsets: number[]): Buffer[] {
  const points = [...new Set(offsets.map((o) => o % (bytes.length + 1)))].sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let start = 0;
  for (const p of [...points, bytes.length]) {
    if (p > start) chunks.push(bytes.subarray(start, p));
    start = Math.max(start, p);
  }
  return chunks;
}

describe('MCP stdio lines: UTF-8 passes untouched, anything else is answered with a parse error', () => {
  it('passes every well-formed line byte for byte, however the bytes are chunked (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.string({ unit: 'grapheme', maxLength: 30 }), { maxLength: 8 }),
        fc.array(fc.nat(), { maxLength: 10 }),
        async (texts, offsets) => {
          const bytes = Buffer.from(texts.map((t) => `${JSON.stringify({ t })}\n`).join(''), 'utf8');
          const { passed, replies } = await guard(cut(bytes, offsets));
          expect(passed.equals(bytes)).toBe(true);
          expect(replies).toEqual([]);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('drops a line that is not UTF-8 and answers it with a parse error carrying its id', async () => {
    const good = Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping"}\n');
    const bad = Buffer.concat([
      Buffer.from('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{"body":"caf'),
      Buffer.from([0xe9]),
      Buffer.from('"}}}\n'),
    ]);
    const { passed, replies } = await guard(cut(Buffer.concat([good, bad, good]), [5, 60, 61, 90]));
    expect(passed.equals(Buffer.concat([good, good]))).toBe(true);
    expect(replies.map((r) => JSON.parse(r))).toEqual([
      {
        jsonrpc: '2.0',
        id: 7,
        error: { code: -32700, message: 'parse error: the message is not valid UTF-8; nothing was done' },
      },
    ]);
  });

  it('answers with id null when the bad line is not JSON either', () => {
    expect(JSON.parse(notUtf8Reply(Buffer.from([0xff, 0xfe, 0x0a]))).id).toBeNull();
  });
});
