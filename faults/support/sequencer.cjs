// The order of `pnpm test:faults`: the scenarios by their number in issue 8 (then Redis Cluster,
// issue 19, and ordered delivery, issue 46), and scenario 8 (secrets) last, so that its search of everything the run produced
// comes literally "after all of the above". A file not listed runs before scenario 8. Jest asks a sequencer for `sort` and
// `cacheResults` only (there is no result cache to keep: the order is fixed).
const path = require('node:path');

const ORDER = [
  'worker-killed',
  'redis-restart',
  'postgres-down',
  'lock-table-full',
  'merchant-misbehaving',
  'oauth-failing',
  'bad-input',
  'connection-flood',
  'expensive-read-flood',
  'tenant-isolation',
  'noisy-neighbour',
  'redis-cluster',
  'ordered-delivery',
  'secrets',
];

function rank(file) {
  const index = ORDER.indexOf(path.basename(file).replace(/\.fault\.ts$/, ''));
  return index === -1 ? ORDER.length - 1.5 : index;
}

class FaultSequencer {
  sort(tests) {
    return [...tests].sort((a, b) => rank(a.path) - rank(b.path) || a.path.localeCompare(b.path));
  }

  cacheResults() {}
}

module.exports = FaultSequencer;
