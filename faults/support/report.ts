import { appendFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Where every scenario's figures of one run are appended (JSON lines), for docs/reliability.md. */
export const REPORT_FILE = process.env.FAULTS_REPORT_FILE ?? path.join(os.tmpdir(), 'herald-faults-report.jsonl');

/**
 * Prints what a scenario did and its figures, one block on stdout (not through console, which
 * Jest decorates with a stack), and appends them to REPORT_FILE.
 */
export function report(scenario: string, done: string, figures: Record<string, unknown>): void {
  const lines = [
    `\n[fault] ${scenario}`,
    `  done: ${done}`,
    ...Object.entries(figures).map(([name, value]) => `  ${name}: ${typeof value === 'object' ? JSON.stringify(value) : String(value)}`),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  appendFileSync(REPORT_FILE, `${JSON.stringify({ scenario, done, figures, at: new Date().toISOString() })}\n`);
}
