/** The name the driver registers `sluice mcp` under (setup.ts writes it into the client's config). */
export const SLUICE_MCP_SERVER = 'sluice';

// These read what a client's own output stream shows its model; the driver reports each text to
// its turn as a `tool_result` sighting (host/turns: ClientSaw), which decides what it counts for.

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Text blocks of MCP content: `[{type:'text', text}]`, or one string (Claude's plain form). */
function textsOf(content: unknown): string[] {
  if (typeof content === 'string') return [content];
  if (!Array.isArray(content)) return [];
  return content.flatMap((c) =>
    isObject(c) && c.type === 'text' && typeof c.text === 'string' ? [c.text] : [],
  );
}

/**
 * Reads Claude Code's stream-json output: an `assistant` event names its tool calls
 * (`tool_use {id, name}`); the `user` event that follows carries each `tool_result` the client
 * gave the model. Returns the texts of successful results of `mcp__sluice__*` calls.
 */
export class ClaudeStreamResults {
  readonly #sluiceCalls = new Set<string>();

  resultsIn(line: unknown): string[] {
    if (!isObject(line) || !isObject(line.message) || !Array.isArray(line.message.content)) return [];
    // A subagent's (Task tool) calls and results carry the parent's tool_use id: what a subagent
    // read never reached the model this turn settles for (found in review).
    if (line.parent_tool_use_id !== undefined && line.parent_tool_use_id !== null) return [];
    const blocks = line.message.content.filter(isObject);
    if (line.type === 'assistant') {
      for (const b of blocks) {
        if (b.type === 'tool_use' && typeof b.id === 'string' && typeof b.name === 'string') {
          if (b.name.startsWith(`mcp__${SLUICE_MCP_SERVER}__`)) this.#sluiceCalls.add(b.id);
        }
      }
      return [];
    }
    if (line.type !== 'user') return [];
    return blocks.flatMap((b) =>
      b.type === 'tool_result' &&
      typeof b.tool_use_id === 'string' &&
      this.#sluiceCalls.has(b.tool_use_id) &&
      b.is_error !== true
        ? textsOf(b.content)
        : [],
    );
  }
}

/**
 * Reads a Codex app-server notification: `item/completed` with a completed `mcpToolCall` item of
 * the sluice server carries the result the client gave the model. Returns its text blocks.
 */
export function codexSluiceResults(method: string, params: unknown): string[] {
  if (method !== 'item/completed' || !isObject(params) || !isObject(params.item)) return [];
  const item = params.item;
  if (item.type !== 'mcpToolCall' || item.server !== SLUICE_MCP_SERVER || item.status !== 'completed')
    return [];
  return isObject(item.result) ? textsOf(item.result.content) : [];
}
