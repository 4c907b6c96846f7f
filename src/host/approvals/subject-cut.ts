import { utf8Length } from '../../core/measure.js';
import type { ApprovalSubject } from './subject.js';

/**
 * The largest subject (JSON bytes) a push, a decision's reply or a card carries whole. A client may
 * ask to write a file of megabytes: a larger subject is shown cut, with the size of the whole, and
 * `sluice approval show ID` prints it whole (docs/approvals.md).
 */
export const APPROVAL_SUBJECT_SHOWN_BYTES = 16 * 1024;

/** What one `approval.list` reply spends on subjects at most: its rows share it (512 KiB in all). */
export const APPROVAL_LIST_SUBJECT_BYTES = 384 * 1024;

/** No listed subject is cut below this, however many rows share the list. */
const MIN_SHOWN_BYTES = 1024;

/** The most each of `rows` listed subjects shows whole, so that together they fit one reply. */
export function listedSubjectBytes(rows: number): number {
  const share = Math.floor(APPROVAL_LIST_SUBJECT_BYTES / Math.max(1, rows));
  return Math.max(MIN_SHOWN_BYTES, Math.min(APPROVAL_SUBJECT_SHOWN_BYTES, share));
}

/** Where a cut string ends: the reader sees that more follows and how much. */
function cutMark(omittedChars: number): string {
  return `… [${omittedChars} more characters: sluice approval show]`;
}

/**
 * `value` with its strings cut and its arrays and objects shortened so that its JSON stays near
 * `budget` bytes: the shape a card renders (keys, nesting, the start of every long text) survives.
 */
function cutValue(value: unknown, budget: { left: number }): unknown {
  if (typeof value === 'string') {
    const room = Math.max(64, budget.left);
    if (value.length <= room) {
      budget.left -= utf8Length(value) + 2;
      return value;
    }
    const kept = value.slice(0, room);
    budget.left -= utf8Length(kept) + 2;
    return kept + cutMark(value.length - kept.length);
  }
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (const item of value) {
      if (budget.left <= 0) {
        out.push(`… [${value.length - out.length} more items: sluice approval show]`);
        break;
      }
      out.push(cutValue(item, budget));
    }
    return out;
  }
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    const out: Record<string, unknown> = {};
    let kept = 0;
    for (const [key, item] of entries) {
      if (budget.left <= 0) {
        out['…'] = `${entries.length - kept} more keys: sluice approval show`;
        break;
      }
      budget.left -= utf8Length(key) + 4;
      out[key] = cutValue(item, budget);
      kept++;
    }
    return out;
  }
  budget.left -= 8;
  return value;
}

/**
 * The subject as lists and pushes show it: whole when its JSON is at most `shownBytes`, else cut
 * (`cut: true`) with the size of the whole (`subjectBytes`).
 */
export function shownSubject(
  subjectJson: string,
  shownBytes = APPROVAL_SUBJECT_SHOWN_BYTES,
): { subject: ApprovalSubject; cut: boolean; subjectBytes: number } {
  const subjectBytes = utf8Length(subjectJson);
  const subject = JSON.parse(subjectJson) as ApprovalSubject;
  if (subjectBytes <= shownBytes) return { subject, cut: false, subjectBytes };
  return { subject: cutValue(subject, { left: shownBytes }) as ApprovalSubject, cut: true, subjectBytes };
}
