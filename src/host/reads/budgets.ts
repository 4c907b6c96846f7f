import { budgetedSlice } from '../../core/budgeted-slice.js';
import { ERROR_TABLE, isSluiceError, type SluiceErrorCode } from '../../core/errors.js';
import { jsonAround } from '../../core/json-frame.js';
import { utf8Length } from '../../core/measure.js';
import { asStoreFault } from '../../core/store-faults.js';
import type { HostContext } from '../identity/context.js';

/** The output budgets of a tool result: UTF-16 units, and UTF-8 bytes when that cap is set. */
export function toolBudgets(ctx: HostContext): { utf16: number; utf8?: number } {
  const bytes = ctx.limits.toolOutputBytes;
  return bytes > 0
    ? { utf16: ctx.limits.toolOutputUnits, utf8: bytes }
    : { utf16: ctx.limits.toolOutputUnits };
}

/** True when a result text fits every tool budget. */
export function fitsToolOutput(ctx: HostContext, text: string): boolean {
  const budgets = toolBudgets(ctx);
  return text.length <= budgets.utf16 && (budgets.utf8 === undefined || utf8Length(text) <= budgets.utf8);
}

const ELLIPSIS = '…';

/** The error result text `{"error":{"code","message"}}`, its message cut so the whole fits `budget`. */
export function errorText(code: SluiceErrorCode | string, message: string, budget: number): string {
  const full = JSON.stringify({ error: { code, message } });
  if (full.length <= budget) return full;
  const frame = jsonAround({ error: { code, message: '' } }, ['error', 'message']);
  // The quotes and the ellipsis are part of the frame.
  const room = budget - frame.before.length - frame.after.length - 2 - ELLIPSIS.length;
  const { end } = budgetedSlice(message, 0, { utf16: Math.max(0, room) });
  return JSON.stringify({ error: { code, message: `${message.slice(0, end)}${ELLIPSIS}` } });
}

/**
 * Error text for anything a read throws, as core's ERROR_TABLE says an MCP result shows it: user
 * errors keep their code and line, bugs become `internal` with a generic line.
 */
export function errorTextFor(thrown: unknown, budget: number): { code: string; text: string } {
  const err = asStoreFault(thrown);
  if (isSluiceError(err) && ERROR_TABLE[err.code].mcp.message === 'shown')
    return { code: err.code, text: errorText(err.code, err.message, budget) };
  return {
    code: 'internal',
    text: errorText('internal', 'internal error while reading; the failure is logged', budget),
  };
}
