// The direction rules of the README's workspace layout, checked by `pnpm lint` (depcruise):
// services depend on packages, never back; the two services never import each other; the domain
// does no I/O; only packages/db loads Prisma; tests, faults and the bench reach product code through
// packages' entry points. No exception is kept: any violation fails the lint.

const PRODUCT = '^(packages|services)/[^/]+/src/';
// What a package or service offers others: its index, the subpaths its package.json exports, and
// everything of packages/testing (the test helpers, Jest's global setup among them). A service's
// index is for what drives it from outside (faults, bench, packages/testing's harnesses' callers).
const ENTRY_POINTS =
  '^(packages|services)/[^/]+/src/index\\.ts$|^packages/db/src/prisma-client\\.ts$|^packages/domain/src/errors/herald-error\\.ts$|^packages/testing/src/';
const TEST_CODE = '(^|/)(test|tests)/|\\.(test|fault)\\.ts$';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'A cycle makes the two modules one; the import graph keeps none.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'packages-never-import-services',
      severity: 'error',
      comment: 'Dependencies point from services to packages, never back.',
      from: { path: '^packages/' },
      to: { path: '^services/' },
    },
    {
      name: 'services-never-import-each-other',
      severity: 'error',
      comment: 'The events-api and the delivery-worker share code through packages only.',
      from: { path: '^services/([^/]+)/' },
      to: { path: '^services/', pathNot: '^services/$1/' },
    },
    {
      name: 'domain-does-no-io',
      severity: 'error',
      comment: 'packages/domain: types, schemas, validators and pure rules. Everything may import it; it imports no other package and nothing that does I/O.',
      from: { path: '^packages/domain/src/' },
      to: {
        pathNot: '^packages/domain/',
        path: '^packages/|node_modules/(express|ioredis|bullmq|pg|@prisma|prisma|axios|undici|winston|kysely)/|^(fs|net|http|https|child_process|dgram|dns|tls)$',
      },
    },
    {
      name: 'only-db-loads-prisma',
      severity: 'error',
      comment: 'packages/db is the only importer of the generated Prisma client and of Prisma itself.',
      from: { pathNot: '^packages/db/' },
      to: { path: '^packages/db/src/generated/|node_modules/@prisma/client/' },
    },
    {
      name: 'express-stays-in-the-events-api',
      severity: 'error',
      comment: "HTTP status codes and Express's types belong to the events-api's HTTP layer; packages do not import express.",
      from: { path: '^packages/' },
      to: { path: 'node_modules/express/' },
    },
    {
      name: 'product-code-never-imports-tests',
      severity: 'error',
      comment: 'Test code may import product code, not the other way round.',
      from: { path: PRODUCT },
      to: { path: TEST_CODE },
    },
    {
      name: 'product-code-never-imports-scripts-bench-faults',
      severity: 'error',
      comment: 'scripts/, bench/ and faults/ drive the product; the product does not depend on them.',
      from: { path: PRODUCT },
      to: { path: '^(scripts|bench|faults)/' },
    },
    {
      name: 'faults-and-bench-use-entry-points',
      severity: 'error',
      comment:
        "faults/ and bench/ reach product code through packages' and services' entry points (and packages/testing), not their internals or test support.",
      from: { path: '^(faults|bench)/' },
      to: { path: '^(packages|services)/[^/]+/(src/.+|test/)', pathNot: ENTRY_POINTS },
    },
    {
      name: 'testing-imports-no-script',
      severity: 'error',
      comment: 'packages/testing is a package like the others: it imports no script of the repository root.',
      from: { path: '^packages/testing/' },
      to: { path: '^scripts/' },
    },
    {
      name: 'product-code-needs-no-dev-dependency',
      severity: 'error',
      comment: 'Product code imports only what its package.json lists as dependencies (a devDependency is missing in production).',
      from: { path: PRODUCT, pathNot: TEST_CODE },
      to: { dependencyTypes: ['npm-dev'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      comment: 'An import that resolves to nothing.',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|dist|generated)/|^packages/db/src/queries/' },
    tsPreCompilationDeps: true,
    parser: 'swc',
    combinedDependencies: true,
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.mts', '.cts', '.js', '.mjs', '.cjs', '.json', '.d.ts'],
      mainFields: ['types', 'main'],
    },
    moduleSystems: ['cjs', 'es6'],
  },
};
