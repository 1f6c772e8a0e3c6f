import { appendFileSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * Where one run of the suite keeps what scenario 8 searches for credentials "after all of the
 * above": every service's log, the Redis keys of every queue and the API answers of every
 * scenario, and the credentials the scenarios used. Emptied by the global setup.
 */
const RUN_DIR = process.env.FAULTS_RUN_DIR ?? path.join(os.tmpdir(), 'herald-faults-run');

/** Empties the run directory (global setup). */
export function resetRunDir(): void {
  rmSync(RUN_DIR, { recursive: true, force: true });
  for (const dir of ['logs', 'redis', 'responses']) mkdirSync(path.join(RUN_DIR, dir), { recursive: true });
}

let serial = 0;
const fileName = (name: string): string => `${name.replace(/[^A-Za-z0-9_.-]+/g, '_')}-${process.pid}-${++serial}`;

/** Keeps the output of one service process (or in-process worker) for the secrets search. */
export function saveServiceLog(name: string, output: string): void {
  writeFileSync(path.join(RUN_DIR, 'logs', `${fileName(name)}.log`), output);
}

/** Keeps a dump of Redis keys (one JSON line each) for the secrets search. */
export function saveRedisDump(name: string, lines: readonly string[]): void {
  writeFileSync(path.join(RUN_DIR, 'redis', `${fileName(name)}.jsonl`), lines.join('\n'));
}

/** Appends API answers (bodies) a scenario received, for the secrets search. */
export function saveResponses(name: string, bodies: readonly string[]): void {
  if (bodies.length > 0) appendFileSync(path.join(RUN_DIR, 'responses', `${name.replace(/[^A-Za-z0-9_.-]+/g, '_')}.txt`), `${bodies.join('\n')}\n`);
}

/** What a credential is, for the report: where it was found tells which kind leaked. */
export type SecretKind =
  | 'api key'
  | 'basic password'
  | 'oauth client secret'
  | 'oauth access token'
  | 'admin token'
  | 'ingest token'
  | 'dashboard password'
  | 'signing secret';

/** Records a credential a scenario used; scenario 8 searches everything for each. */
export function recordSecret(kind: SecretKind, value: string): void {
  appendFileSync(path.join(RUN_DIR, 'secrets.jsonl'), `${JSON.stringify({ kind, value })}\n`);
}

/** Every credential recorded in this run. */
export function recordedSecrets(): Array<{ kind: SecretKind; value: string }> {
  const file = path.join(RUN_DIR, 'secrets.jsonl');
  try {
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { kind: SecretKind; value: string });
  } catch {
    return [];
  }
}

/** Every file kept under `dir` (logs, redis or responses), with its text. */
export function keptFiles(dir: 'logs' | 'redis' | 'responses'): Array<{ name: string; text: string }> {
  const root = path.join(RUN_DIR, dir);
  return readdirSync(root)
    .filter((name) => statSync(path.join(root, name)).isFile())
    .map((name) => ({ name, text: readFileSync(path.join(root, name), 'utf8') }));
}
