// Codex's `error` notifications as the driver reads them, and the retry bound's setting.
import { describe, expect, test } from 'vitest';
import {
  CODEX_RETRY_LIMIT_ENV,
  codexModelError,
  codexRetryLimitMs,
  DEFAULT_CODEX_RETRY_LIMIT_MS,
} from '../../src/surfaces/drivers/codex-model-errors.js';

describe('codexModelError', () => {
  test('a retrying connection failure, as Codex 0.171 sends it, keeps its details', () => {
    const params = {
      error: {
        message: 'Reconnecting... waiting for network',
        codexErrorInfo: { responseStreamDisconnected: { httpStatusCode: null } },
        additionalDetails: 'Connection failed: error sending request',
      },
      willRetry: true,
      threadId: 'th',
      turnId: 'tu',
    };
    expect(codexModelError('error', params)).toEqual({
      turnId: 'tu',
      message: 'Reconnecting... waiting for network (Connection failed: error sending request)',
      willRetry: true,
    });
  });

  test('a final error without details; other notifications are not errors', () => {
    expect(codexModelError('error', { error: { message: 'unauthorized' }, willRetry: false })).toEqual({
      turnId: undefined,
      message: 'unauthorized',
      willRetry: false,
    });
    expect(codexModelError('error', null)).toMatchObject({
      message: 'codex reported an error',
      willRetry: false,
    });
    expect(codexModelError('warning', { message: 'x' })).toBeUndefined();
  });
});

describe('codexRetryLimitMs', () => {
  test('the default, a set value, and a bad value refused with its name', () => {
    expect(codexRetryLimitMs({})).toBe(DEFAULT_CODEX_RETRY_LIMIT_MS);
    expect(codexRetryLimitMs({ [CODEX_RETRY_LIMIT_ENV]: '2500' })).toBe(2500);
    for (const bad of ['0', '-1', '3m', '1.5'])
      expect(() => codexRetryLimitMs({ [CODEX_RETRY_LIMIT_ENV]: bad })).toThrow(
        expect.objectContaining({
          code: 'invalid_params',
          message: expect.stringContaining(CODEX_RETRY_LIMIT_ENV),
        }),
      );
  });
});
