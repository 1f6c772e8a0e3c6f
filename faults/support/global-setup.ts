import { rmSync } from 'node:fs';
import globalSetup from '../../packages/testing/src/global-setup';
import { REPORT_FILE } from './report';
import { resetRunDir } from './run-dir';

// The root run's setup (test database created and migrated), and a fresh report file and run
// directory per run.
export default async function faultsGlobalSetup(): Promise<void> {
  rmSync(REPORT_FILE, { force: true });
  resetRunDir();
  await globalSetup();
}
