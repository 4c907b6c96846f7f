import { CLAUDE_ADDITIONAL_CONTEXT_LIMIT, type DeliveryLimits } from '../../core/envelope.js';
import { defaultPageBytes, shellOutputCap } from '../../core/output-cap.js';

/** The harnesses whose hooks `sluice hook` speaks. */
export type HookClient = 'claude' | 'codex';

/** Hook events Sluice answers, by their CLI spelling. */
export type HookEventArg = 'session-start' | 'user-prompt-submit';

/** The event names both clients use on the wire (stdin `hook_event_name`, stdout `hookEventName`). */
export const HOOK_EVENT_NAMES: Readonly<Record<HookEventArg, string>> = Object.freeze({
  'session-start': 'SessionStart',
  'user-prompt-submit': 'UserPromptSubmit',
});

/**
 * Codex 0.171 truncates hook `additionalContext` above 2,500 tokens, counted as UTF-8 bytes / 4
 * (10,004 bytes arrived cut, 10,000 whole), so its hook budget is 10,000 bytes, not the 16 KiB
 * default that the app-server `turn/start` path keeps.
 */
export const CODEX_HOOK_CONTEXT_BYTES = 10_000;

/**
 * Per-client caps for the whole `additionalContext` text. Sluice adds no wrapper inside
 * additionalContext, so each cap applies to the rendered envelope itself. `pageBytes` is the
 * client's default listing page, so an oldest message over the hook's cap but within a page is
 * fetched with that page.
 */
export const HOOK_LIMITS: Readonly<Record<HookClient, Partial<DeliveryLimits>>> = Object.freeze({
  claude: Object.freeze({
    maxMessages: 16,
    maxBytes: 16_384,
    maxUnits: CLAUDE_ADDITIONAL_CONTEXT_LIMIT,
    pageBytes: defaultPageBytes(shellOutputCap('claude')),
  }),
  codex: Object.freeze({
    maxMessages: 16,
    maxBytes: CODEX_HOOK_CONTEXT_BYTES,
    pageBytes: defaultPageBytes(shellOutputCap('codex')),
  }),
});

export function isHookClient(value: unknown): value is HookClient {
  return value === 'claude' || value === 'codex';
}

export function isHookEventArg(value: unknown): value is HookEventArg {
  return value === 'session-start' || value === 'user-prompt-submit';
}

/** The JSON both Claude Code and Codex read from a hook's stdout to add model context. */
export function hookOutput(event: HookEventArg, additionalContext: string): string {
  return JSON.stringify({
    hookSpecificOutput: { hookEventName: HOOK_EVENT_NAMES[event], additionalContext },
  });
}
