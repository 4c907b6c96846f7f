import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';

/**
 * One MCP tool as the dispatcher (tools.ts) holds it: its strict argument schema (refuses unknown
 * names), and the one way to run it, through that schema. Built by {@link strictTool}, which types
 * the handler's arguments from the schema, so no handler casts what it was given.
 */
export interface StrictTool {
  name: string;
  description: string;
  readOnly: boolean;
  schema: z.ZodObject;
  /** Validates `raw` with `schema`: the call to make, or what is wrong with the arguments. */
  accept(raw: unknown): { run: () => Promise<CallToolResult> } | { issues: readonly z.core.$ZodIssue[] };
}

/** What a tool declares: `run` receives its arguments as `schema` parses them (the SDK's inference). */
export interface ToolDefinition<S extends z.ZodObject> {
  name: string;
  description: string;
  readOnly: boolean;
  schema: S;
  run(args: z.output<S>): Promise<CallToolResult>;
}

/** A {@link StrictTool} whose handler takes exactly what its schema parses. */
export function strictTool<S extends z.ZodObject>(definition: ToolDefinition<S>): StrictTool {
  const { name, description, readOnly, schema } = definition;
  return {
    name,
    description,
    readOnly,
    schema,
    accept(raw) {
      const parsed = schema.safeParse(raw);
      if (!parsed.success) return { issues: parsed.error.issues };
      return { run: () => definition.run(parsed.data) };
    },
  };
}
