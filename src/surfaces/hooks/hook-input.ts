import { SluiceError } from '../../core/errors.js';

/** The fields Sluice uses from a Claude Code / Codex hook payload; the rest is ignored. */
export interface HookInput {
  sessionId: string | null;
  hookEventName: string | null;
  /** SessionStart only: `startup`, `resume`, `clear` or `compact`. */
  source: string | null;
  cwd: string | null;
  /** Claude Code's id of the prompt a turn answers (UserPromptSubmit, Stop); null elsewhere. */
  promptId: string | null;
}

/**
 * Hook stdin carries the user's whole prompt, which can be large (pasted logs); past this many
 * bytes the payload is refused rather than buffered without bound.
 */
export const MAX_HOOK_STDIN_BYTES = 16 * 1024 * 1024;

/** Reads a stream to the end as UTF-8, refusing more than `limitBytes`. */
export async function readBounded(stream: AsyncIterable<unknown>, limitBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of stream) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    total += buf.length;
    if (total > limitBytes) throw new SluiceError('too_large', `hook input is over ${limitBytes} bytes`);
    chunks.push(buf);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function optionalString(value: unknown, field: string): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string')
    throw new SluiceError('invalid_params', `hook input field ${field} is not a string`);
  return value;
}

/** Parses a hook payload: a JSON object; unknown fields are ignored, known ones are type-checked. */
export function parseHookInput(text: string): HookInput {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new SluiceError('invalid_params', 'hook input on stdin is not JSON');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new SluiceError('invalid_params', 'hook input on stdin is not a JSON object');
  }
  const record = value as Record<string, unknown>;
  return {
    sessionId: optionalString(record.session_id, 'session_id'),
    hookEventName: optionalString(record.hook_event_name, 'hook_event_name'),
    source: optionalString(record.source, 'source'),
    cwd: optionalString(record.cwd, 'cwd'),
    promptId: optionalString(record.prompt_id, 'prompt_id'),
  };
}
