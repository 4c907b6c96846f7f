import type { RenderedDelivery } from '../../core/envelope.js';

/** One entry of Codex app-server `turn/start` `additionalContext`. */
export interface CodexContextEntry {
  value: string;
  kind: 'application';
}

/** The key Sluice uses in `additionalContext`; Codex shows it to the model as `<sluice>…</sluice>`. */
export const CODEX_CONTEXT_KEY = 'sluice';

/**
 * UTF-16 units Codex wraps around the value (`<sluice>` and `</sluice>`): pass this as the
 * delivery's `wrapperUnits` when a units cap applies.
 */
export const CODEX_CONTEXT_WRAPPER_UNITS = `<${CODEX_CONTEXT_KEY}></${CODEX_CONTEXT_KEY}>`.length;

/**
 * The Codex app-server `turn/start` `additionalContext` for a rendered delivery:
 * `{"sluice": {"value": text, "kind": "application"}}`, which reaches the model as a developer
 * message. Empty (`{}`) when there is nothing to deliver, so it can always be spread into params.
 */
export function codexAdditionalContext(
  rendered: Pick<RenderedDelivery, 'text'>,
): Record<string, CodexContextEntry> {
  if (rendered.text === '') return {};
  return { [CODEX_CONTEXT_KEY]: { value: rendered.text, kind: 'application' } };
}
