/**
 * Prints a table of figures: `columns` are the headings with their widths, the first column
 * (what was measured) left-aligned, the figures right-aligned.
 */
export function printTable(columns: [heading: string, width: number][], rows: string[][]): void {
  const widths = columns.map(([, width]) => width);
  const line = (cells: string[]) =>
    console.log(...cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))));
  line(columns.map(([heading]) => heading));
  for (const row of rows) line(row);
}
