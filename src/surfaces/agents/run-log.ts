import { closeSync, mkdirSync, openSync, readSync, renameSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/** Bytes the current log may reach before it becomes `<log>.1` (so at most twice this on disk). */
export const DEFAULT_RUN_LOG_BYTES = 1024 * 1024;

/** `<home>/logs/agent-<agent>.log`: what a host-run agent's driver printed, and the supervisor's lines. */
export function runLogPath(home: string, agent: string): string {
  return join(home, 'logs', `agent-${agent}.log`);
}

/**
 * An append-only log bounded in size: past `maxBytes` the file is renamed to `<path>.1` (replacing
 * the previous one) and a new one starts. Writes are synchronous and small (a driver prints a line
 * per turn), so a crash loses nothing that was written. A log that cannot be written (a full disk)
 * drops the text: the agent keeps running (the state and last error line live in the store).
 */
export class RunLog {
  private fd: number | undefined;
  private size = 0;

  constructor(
    readonly path: string,
    private readonly maxBytes = DEFAULT_RUN_LOG_BYTES,
  ) {}

  private open(): number | undefined {
    if (this.fd !== undefined) return this.fd;
    try {
      mkdirSync(join(this.path, '..'), { recursive: true, mode: 0o700 });
      this.fd = openSync(this.path, 'a', 0o600);
      this.size = statSync(this.path).size;
    } catch {
      this.fd = undefined;
    }
    return this.fd;
  }

  private rotate(): void {
    this.close();
    try {
      renameSync(this.path, `${this.path}.1`);
    } catch {
      // Nothing to rotate, or not allowed: the next open appends to what is there.
    }
  }

  /** Appends text as given (child output keeps its own newlines). */
  write(text: string): void {
    if (text === '') return;
    const bytes = Buffer.from(text);
    if (this.open() !== undefined && this.size > 0 && this.size + bytes.length > this.maxBytes) this.rotate();
    const fd = this.open();
    if (fd === undefined) return;
    try {
      writeSync(fd, bytes);
      this.size += bytes.length;
    } catch {
      // Full disk or gone: dropped (see the class comment).
    }
  }

  /** One line of the supervisor's own, stamped: `2026-12-01T16:00:00.000Z [sluice] started …`. */
  note(at: Date, line: string): void {
    this.write(`${at.toISOString()} [sluice] ${line}\n`);
  }

  close(): void {
    if (this.fd === undefined) return;
    try {
      closeSync(this.fd);
    } catch {
      // already closed
    }
    this.fd = undefined;
  }
}

function readTail(path: string, bytes: number): Buffer {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return Buffer.alloc(0);
  }
  try {
    const size = statSync(path).size;
    const length = Math.min(size, bytes);
    const buffer = Buffer.alloc(length);
    const read = readSync(fd, buffer, 0, length, size - length);
    return buffer.subarray(0, read);
  } finally {
    closeSync(fd);
  }
}

/**
 * The last whole lines of a run log within `maxBytes` UTF-8 bytes (the previous file's end too
 * when the current one is short), or '' when there is none. A first line cut by the byte limit is
 * dropped, so the text never starts mid-line or mid-character.
 */
export function runLogTail(path: string, maxBytes: number): string {
  let tail = readTail(path, maxBytes + 1);
  if (tail.length <= maxBytes) {
    const older = readTail(`${path}.1`, maxBytes + 1 - tail.length);
    tail = Buffer.concat([older, tail]);
  }
  if (tail.length > maxBytes) {
    const newline = tail.indexOf(0x0a, tail.length - maxBytes - 1);
    tail = newline < 0 ? Buffer.alloc(0) : tail.subarray(newline + 1);
  }
  return tail.toString('utf8');
}
