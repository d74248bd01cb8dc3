// Shared by the benchmarks: medians, the machine line, markdown tables, and writing one "## <title>" section of
// docs/benchmarks.md in place (the rest of the file is kept as it is).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** "2 cores, AMD EPYC, 24 GiB, Node v24.21.0": what the numbers were measured on. */
export function machine(): string {
  const model = (cpus()[0]?.model ?? 'unknown CPU').replace(/\s+/g, ' ').trim();
  return `${cpus().length} cores, ${model}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`;
}

/** The 1-, 5- and 15-minute load averages, e.g. "6.1 / 5.8 / 4.9". */
export function loadAverage(): string {
  return loadavg()
    .map((value) => value.toFixed(1))
    .join(' / ');
}

export function table(header: string[], alignRight: boolean[], rows: string[][]): string[] {
  const widths = header.map((cell, i) => Math.max(cell.length, ...rows.map((row) => row[i]!.length), 3));
  const line = (cells: string[]) =>
    `| ${cells.map((cell, i) => (alignRight[i] ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!))).join(' | ')} |`;
  const rule = `| ${widths.map((w, i) => (alignRight[i] ? `${'-'.repeat(w - 1)}:` : '-'.repeat(w))).join(' | ')} |`;
  return [line(header), rule, ...rows.map(line)];
}

/** Replaces the section "## <title>" of docs/benchmarks.md (up to the next "## ") or appends it. */
export function writeSection(title: string, body: string[]): void {
  const file = new URL('../docs/benchmarks.md', import.meta.url);
  const current = existsSync(file) ? readFileSync(file, 'utf8') : '# Benchmarks\n';
  const section = [`## ${title}`, '', ...body].join('\n').trimEnd();
  const heading = `\n## ${title}\n`;
  const start = current.indexOf(heading);
  let next: string;
  if (start === -1) next = `${current.trimEnd()}\n\n${section}`;
  else {
    const after = current.indexOf('\n## ', start + heading.length - 1);
    next = current.slice(0, start + 1) + section + (after === -1 ? '' : `\n${current.slice(after)}`);
  }
  writeFileSync(file, `${next.trimEnd()}\n`);
  console.log(`wrote the "${title}" section of docs/benchmarks.md`);
}
