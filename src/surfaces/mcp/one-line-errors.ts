import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';
import { describeIssues } from './argument-issues.js';

/** A zod issue list as the SDK prints it into an error message (a JSON array), or undefined. */
function issuesIn(message: string): z.core.$ZodIssue[] | undefined {
  if (!message.startsWith('[')) return undefined;
  try {
    const parsed: unknown = JSON.parse(message);
    const isIssue = (i: unknown) =>
      typeof i === 'object' && i !== null && Array.isArray((i as { path?: unknown }).path);
    return Array.isArray(parsed) && parsed.length > 0 && parsed.every(isIssue)
      ? (parsed as z.core.$ZodIssue[])
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The SDK checks the params of the requests it answers itself (`initialize`, `tools/list`, …)
 * with zod and, when they are wrong, answers "internal error" (-32603) with the issue list as
 * many lines of JSON. That is bad input, not our fault: it goes out as invalid params (-32602)
 * with one line naming the field, like every other refusal.
 */
export function oneLineError(message: JSONRPCMessage): JSONRPCMessage {
  if (!('error' in message) || message.error.code !== ErrorCode.InternalError) return message;
  const issues = issuesIn(message.error.message);
  if (!issues) return message;
  return { ...message, error: { code: ErrorCode.InvalidParams, message: describeIssues(issues) } };
}

/** `transport`, its outgoing error responses passed through {@link oneLineError}. */
export function withOneLineErrors<T extends Transport>(transport: T): T {
  const send = transport.send.bind(transport);
  transport.send = (message, options) => send(oneLineError(message), options);
  return transport;
}
