import { ERROR_TABLE, isTransientStoreError, oneLine, renderingOf, SluiceError } from '../../core/errors.js';
import { asStoreFault } from '../../core/store-faults.js';
import { revealInvisible } from '../../core/text.js';
import { recordInternalError } from './internal-error.js';

/**
 * Whether `err` says the reader of a pipe went away (`sluice … | head -1`): not a failure of the
 * command, and never a database fault (EPIPE is also what a lost database socket reports).
 */
export function isReaderGone(err: unknown): boolean {
  return (err as NodeJS.ErrnoException | null)?.code === 'EPIPE';
}

/**
 * Writes to stdout and resolves once the bytes are handed to the OS (large bodies, pipes). Once
 * the reader has gone, the rest of the output is dropped and the command ends as it would have.
 */
export function writeOut(text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    process.stdout.write(text, (err) => (err && !isReaderGone(err) ? reject(err) : resolve()));
  });
}

/**
 * Reads all of stdin as UTF-8 (so bodies of any size never pass through argv). Bytes that are not
 * UTF-8 are refused as `invalid_params` naming `field`, never replaced by U+FFFD; a BOM is kept.
 */
export async function readStdinText(limitBytes: number, field = 'body'): Promise<string> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of process.stdin) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    total += buf.length;
    if (total > limitBytes) throw new SluiceError('too_large', `stdin is over ${limitBytes} bytes`);
    chunks.push(buf);
  }
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(Buffer.concat(chunks));
  } catch {
    throw new SluiceError('invalid_params', `${field} from stdin is not valid UTF-8; nothing was stored`, {
      field,
    });
  }
}

/** Exit codes: 0 ok, then core's ERROR_TABLE (1 usage/validation, 2 not found/denied, 70 a bug). */
export function exitCodeFor(code: string): number {
  return renderingOf(code).exit;
}

/** An error message as the terminal gets it: one line, every invisible character as its escape. */
const errorLine = (message: string) => revealInvisible(oneLine(message));

/**
 * One clear line on stderr for any failure. Input a message echoes is quoted where it is made
 * (quoteInput); the line is made safe here too, whatever a message holds. A bug gets an error id on that line and its stack in
 * `<home>/logs/errors.log` (never on the terminal).
 */
export function reportError(thrown: unknown, home?: string): number {
  // A fault outside the process (full disk, database gone) is `unavailable` with its cause.
  const err = asStoreFault(thrown);
  if (err instanceof SluiceError) {
    process.stderr.write(`sluice: ${err.code}: ${errorLine(err.message)}\n`);
    return exitCodeFor(err.code);
  }
  const e = err as { code?: string; message?: string };
  if (e && typeof e.code === 'string' && e.code.startsWith('commander.')) return 1;
  if (isTransientStoreError(err)) {
    process.stderr.write(`sluice: unavailable: ${errorLine(String(e.message))}\n`);
    return ERROR_TABLE.unavailable.exit;
  }
  process.stderr.write(`${recordInternalError(err, home)}\n`);
  return ERROR_TABLE.internal.exit;
}

export function parseLimit(value: string | undefined, name: string, max: number, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value)) throw new SluiceError('invalid_params', `${name} must be a positive integer`);
  const n = Number(value);
  if (n < 1 || n > max) throw new SluiceError('invalid_params', `${name} must be from 1 to ${max}`);
  return n;
}
