/** @jest-config-loader esbuild-register */
import type { Config } from 'jest';

// One Jest run for the whole workspace. Tests talk to the real PostgreSQL and Redis; globalSetup
// creates and migrates the run's own database (globalTeardown drops it), and every test uses fresh
// ids and queue prefixes so that files can run in parallel and in any order.
const config: Config = {
  testEnvironment: 'node',
  roots: ['<rootDir>/packages', '<rootDir>/services', '<rootDir>/bench'],
  testMatch: ['**/test/**/*.test.ts'],
  transform: {
    '^.+\\.(m|c)?tsx?$': [
      '@swc/jest',
      {
        jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
        module: { type: 'commonjs' },
      },
    ],
  },
  moduleFileExtensions: ['ts', 'mts', 'cts', 'js', 'mjs', 'cjs', 'json'],
  // The generated Prisma client imports its siblings as './x.js'.
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.(m|c)?js$': '$1' },
  reporters: ['default', '<rootDir>/packages/testing/src/summary-reporter.cjs'],
  globalSetup: '<rootDir>/packages/testing/src/global-setup.ts',
  globalTeardown: '<rootDir>/packages/testing/src/global-teardown.ts',
  setupFilesAfterEnv: ['<rootDir>/packages/testing/src/teardown.ts'],
  testTimeout: 30_000,
  maxWorkers: 2,
};

export default config;
