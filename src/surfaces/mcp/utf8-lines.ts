import { Transform, type TransformCallback } from 'node:stream';
import { decodeUtf8Exactly } from '../../core/text.js';

const NEWLINE = 0x0a;

/** The JSON-RPC reply to a line that is not UTF-8: a parse error, with the id when one can be read. */
export function notUtf8Reply(line: Buffer): string {
  let id: unknown = null;
  try {
    const parsed = JSON.parse(line.toString('utf8')) as { id?: unknown };
    if (typeof parsed.id === 'string' || typeof parsed.id === 'number') id = parsed.id;
  } catch {
    // Not JSON either: the reply has id null, as JSON-RPC says for an unreadable request.
  }
  return `${JSON.stringify({
    jsonrpc: '2.0',
    id,
    error: { code: -32700, message: 'parse error: the message is not valid UTF-8; nothing was done' },
  })}\n`;
}

/**
 * Passes newline-delimited JSON-RPC through unchanged, except a line whose bytes are not UTF-8:
 * the MCP SDK would decode it with U+FFFD and the host would store altered text, so that line is
 * dropped and `answer` is called with its parse-error reply instead (text is stored exactly or
 * refused). A line arriving in many chunks is held as chunks and joined once, when it ends.
 */
export class Utf8LineGuard extends Transform {
  readonly #answer: (reply: string) => void;
  #partial: Buffer[] = [];

  constructor(answer: (reply: string) => void) {
    super();
    this.#answer = answer;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    const passed: Buffer[] = [];
    let start = 0;
    for (let nl = chunk.indexOf(NEWLINE); nl !== -1; nl = chunk.indexOf(NEWLINE, start)) {
      this.#partial.push(chunk.subarray(start, nl + 1));
      this.#release(Buffer.concat(this.#partial), passed);
      this.#partial = [];
      start = nl + 1;
    }
    if (start < chunk.length) this.#partial.push(chunk.subarray(start));
    done(null, passed.length > 0 ? Buffer.concat(passed) : undefined);
  }

  override _flush(done: TransformCallback): void {
    const passed: Buffer[] = [];
    if (this.#partial.length > 0) this.#release(Buffer.concat(this.#partial), passed);
    done(null, passed.length > 0 ? Buffer.concat(passed) : undefined);
  }

  #release(line: Buffer, passed: Buffer[]): void {
    if (decodeUtf8Exactly(line) === undefined) this.#answer(notUtf8Reply(line));
    else passed.push(line);
  }
}
