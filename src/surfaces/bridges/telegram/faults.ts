import { GrammyError } from 'grammy';
import { isTransientStoreError, oneLine, SluiceError } from '../../../core/errors.js';

/**
 * A Bot API refusal that retrying cannot fix: any 4xx but 429 (the user blocked the bot, the bot
 * may not write in a group, the chat is gone, the text is too long, the file is unknown).
 */
export function isRefusal(err: unknown): err is GrammyError {
  return (
    err instanceof GrammyError && err.error_code >= 400 && err.error_code < 500 && err.error_code !== 429
  );
}

/** Telegram answered, with a 5xx: its fault, retryable, but not to be waited on for ever. */
export function isServerError(err: unknown): err is GrammyError {
  return err instanceof GrammyError && err.error_code >= 500;
}

/** The store is down or busy: the one fault the bridge waits out without a bound (it heals). */
export function isStoreFault(err: unknown): boolean {
  return (err instanceof SluiceError && err.code === 'unavailable') || isTransientStoreError(err);
}

/**
 * One short line describing a fault, for the log. grammY's messages never carry the token
 * (its `sensitiveLogs` is off); Telegram's own description is kept whole but folded to one line.
 */
export function faultText(err: unknown): string {
  if (err instanceof GrammyError) return oneLine(`${err.error_code}: ${err.description}`);
  if (err instanceof Error) {
    const cause = (err as { error?: unknown; cause?: unknown }).error ?? err.cause;
    const detail = cause instanceof Error && cause.message !== err.message ? ` (${cause.message})` : '';
    return oneLine(`${err.message}${detail}`);
  }
  return oneLine(String(err));
}

/**
 * A fault in words for the person whose message it stopped: Telegram's code and description, or
 * Sluice's coded line; a program error is only named as one (its text is for the log).
 */
export function faultForPerson(err: unknown): string {
  if (err instanceof GrammyError)
    return oneLine(`Telegram kept failing: ${err.error_code} ${err.description}`);
  if (err instanceof SluiceError) return oneLine(`${err.code}: ${err.message}`);
  return 'an error on the host; its log says more';
}

/** Counts of the faults a bridge absorbed, so each log line can say how many so far. */
export class FaultCounts {
  refusedReplies = 0;
  refusedFiles = 0;
  unansweredStrangers = 0;
  abandonedUpdates = 0;
  abandonedParts = 0;
}
