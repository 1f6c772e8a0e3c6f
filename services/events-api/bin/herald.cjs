#!/usr/bin/env node
// The `herald` command (`pnpm exec herald …`, or node_modules/.bin/herald): the CLI run directly,
// so that no package manager echoes the command line it was given. tsx compiles the TypeScript.
require('tsx/cjs');
require('../src/cli/herald.ts');
