// Codex's config.toml as a TOML document: parsed before Sluice edits it (an invalid file is
// refused, never overwritten), an inline `mcp_servers = { … }` rewritten as tables (a
// `[mcp_servers.sluice]` table cannot extend an inline table), and the edited text checked to
// mean what the user's file meant plus the sluice server. The edit itself stays textual
// (install-codex.ts), so every comment and line the user wrote outside the servers survives.
import { parse, stringify, TomlError } from 'smol-toml';
import { SluiceError } from '../../core/errors.js';

/** A parsed TOML table. */
export type TomlTable = Record<string, unknown>;

/** `text` parsed, or `invalid_params` naming `path`, the line and the column; nothing is written. */
export function parseCodexConfig(text: string, path: string): TomlTable {
  try {
    return parse(text) as TomlTable;
  } catch (err) {
    if (!(err instanceof TomlError)) throw err;
    const why = (err.message.split('\n', 1)[0] ?? '').replace(/^Invalid TOML document: /, '');
    throw new SluiceError(
      'invalid_params',
      `${path} is not valid TOML (line ${err.line}, column ${err.column}: ${why}); nothing was changed`,
    );
  }
}

const TABLE_HEADER = /^\s*\[/;
const SERVERS_KEY = /^\s*(mcp_servers|"mcp_servers"|'mcp_servers')\s*=/;

/** The lines [start, end) of a root-level `mcp_servers = …` statement, if the file has one. */
function inlineServersSpan(lines: readonly string[]): { start: number; end: number } | undefined {
  for (let start = 0; start < lines.length; start++) {
    const line = lines[start] as string;
    if (TABLE_HEADER.test(line)) return undefined; // the root table ends at the first header
    if (!SERVERS_KEY.test(line)) continue;
    // The statement ends at the first line after which it parses alone (an inline table may span
    // lines in TOML 1.1); the parser, not a hand-written scanner, says where.
    for (let end = start + 1; end <= lines.length; end++) {
      try {
        if ('mcp_servers' in parse(lines.slice(start, end).join('\n'))) return { start, end };
      } catch {
        // not the whole statement yet
      }
    }
    return undefined;
  }
  return undefined;
}

/**
 * `text` with a root-level inline `mcp_servers = { … }` replaced by one `[mcp_servers.NAME]` table
 * per server, at the end (same meaning, and Sluice's own table can follow). The sluice server is
 * left out: the caller writes its own. Any other text is returned as it is.
 */
export function inlineServersAsTables(text: string, meant: TomlTable): string {
  const lines = text.split('\n');
  const span = inlineServersSpan(lines);
  const servers = meant.mcp_servers;
  if (!span || typeof servers !== 'object' || servers === null) return text;
  const others = Object.fromEntries(Object.entries(servers).filter(([name]) => name !== 'sluice'));
  const kept = [...lines.slice(0, span.start), ...lines.slice(span.end)].join('\n').trimEnd();
  if (Object.keys(others).length === 0) return `${kept}\n`;
  return `${kept}\n\n${stringify({ mcp_servers: others }).trimEnd()}\n`;
}

/** `value` with every table's keys sorted and dates as ISO text: equal meaning, equal JSON. */
function canonical(value: unknown): unknown {
  if (value instanceof Date) return `date:${value.toISOString()}`;
  if (Array.isArray(value)) return value.map(canonical);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, canonical((value as TomlTable)[k])]),
    );
  }
  return value;
}

/**
 * Throws `invalid_params` (nothing written) unless `merged` means exactly `meant` with its sluice
 * server set to the one `block` defines: no other setting of the user's may change.
 */
export function assertOnlySluiceChanged(meant: TomlTable, merged: string, block: string, path: string): void {
  const sluice = (parse(block) as { mcp_servers: TomlTable }).mcp_servers.sluice;
  const servers = { ...((meant.mcp_servers as TomlTable | undefined) ?? {}), sluice };
  const expected = JSON.stringify(canonical({ ...meant, mcp_servers: servers }));
  let got: string | undefined;
  try {
    got = JSON.stringify(canonical(parse(merged)));
  } catch {
    got = undefined;
  }
  if (got !== expected) {
    throw new SluiceError(
      'invalid_params',
      `${path}: the sluice server cannot be added without changing other settings there; add the [mcp_servers.sluice] table by hand (sluice hooks install codex --dry-run prints it); nothing was changed`,
    );
  }
}
