import { rmSync } from 'node:fs';
import globalSetup from '../../packages/testing/src/global-setup';
import { REPORT_FILE } from './report';
import { resetRunDir } from './run-dir';

// The root run's setup (its database created and migrated; the root run's teardown, which this
// run's config keeps, drops it), and a fresh report file and run directory per run.
export default async function faultsGlobalSetup(): Promise<void> {
  rmSync(REPORT_FILE, { force: true });
  resetRunDir();
  await globalSetup();
}
