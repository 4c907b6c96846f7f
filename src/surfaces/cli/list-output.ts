import { revealInvisible } from '../../core/text.js';
import { writeOut } from './io.js';

/** One column of a listing: its header and how to show a row's cell. */
export interface Column<T> {
  header: string;
  cell(row: T): string;
}

// A cell is one line: a tab, newline or other control character would break the columns, and a
// bidi override would reorder them; the first become spaces, the rest show as escapes.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]+/g;

/**
 * The text every `… ls` prints (like `gh` and `docker`): a header row in capitals and columns
 * aligned with two spaces; trailing spaces trimmed.
 */
export function renderTable<T>(columns: readonly Column<T>[], rows: readonly T[]): string {
  const cells = [
    columns.map((c) => c.header),
    ...rows.map((row) => columns.map((c) => revealInvisible(c.cell(row).replace(CONTROL, ' ')))),
  ];
  const widths = columns.map((_, i) => Math.max(...cells.map((r) => (r[i] as string).length)));
  return cells
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i] as number))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/**
 * Prints a listing in the one shape all list commands share: `--json` prints one JSON array,
 * otherwise a table, or `empty` (e.g. `no channels`) when there is nothing to list.
 */
export async function writeList<T>(
  rows: readonly T[],
  options: {
    json?: boolean | undefined;
    columns: readonly Column<T>[];
    empty: string;
    toJson?: (row: T) => unknown;
  },
): Promise<void> {
  if (options.json) {
    await writeOut(`${JSON.stringify(options.toJson ? rows.map(options.toJson) : rows)}\n`);
    return;
  }
  await writeOut(rows.length === 0 ? `${options.empty}\n` : `${renderTable(options.columns, rows)}\n`);
}
