/** @jest-config-loader esbuild-register */
import path from 'node:path';
import type { Config } from 'jest';
import base from '../jest.config';

// The fault suite (`pnpm test:faults`): a Jest run of its own, so `pnpm test` stays fast. Same
// transform as the root run, and its global setup (faults/support/global-setup.ts wraps it);
// scenarios live in faults/**/*.fault.ts. Files run one at a time (each starts processes and
// servers of its own and the machine has 2 cores), in the order of faults/support/sequencer.cjs:
// scenario 8 (secrets) last, as it searches what all the others left.
const config: Config = {
  ...base,
  rootDir: path.resolve(__dirname, '..'),
  roots: ['<rootDir>/faults'],
  testMatch: ['**/*.fault.ts'],
  testTimeout: 180_000,
  maxWorkers: 1,
  globalSetup: '<rootDir>/faults/support/global-setup.ts',
  testSequencer: '<rootDir>/faults/support/sequencer.cjs',
};

export default config;
