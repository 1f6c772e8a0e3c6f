import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { testDatabaseUrl } from '@herald/config';
import type { Compilable } from 'kysely';
import { format } from 'sql-formatter';
import { closeDatabasePool, createDatabasePool } from '../src/pool';
import { credentialsRotationQueries } from '../src/credentials-rotation';
import { apiKeyQueries } from '../src/repositories/api-keys';
import { deliveryQueries } from '../src/repositories/deliveries';
import { deliveryAttemptQueries } from '../src/repositories/delivery-attempts';
import { objectOrderQueries } from '../src/repositories/object-order';
import { targetHealthQueries } from '../src/repositories/recorded-target-health';
import { deliveryHistoryQueries } from '../src/repositories/delivery-history';
import { recoveryQueries } from '../src/repositories/recoveries';
import { eventCountQueries } from '../src/repositories/event-counts';
import type { NewEvent } from '../src/repositories/event-ingest-statements';
import type { EventListQuery } from '../src/repositories/event-list-statements';
import { eventQueries } from '../src/repositories/event-queries';
import { targetQueries } from '../src/repositories/target-statements';
import { portalSessionQueries } from '../src/repositories/portal-sessions';
import { tenantQueries } from '../src/repositories/tenants';
import { db, type RowOf } from '../src/sql';

// The SQL every repository statement emits, checked in under packages/db/src/queries so that a
// query change is reviewed as SQL. This test compiles each statement with representative
// parameters and compares with the checked-in files; `UPDATE_SQL_SNAPSHOTS=1` rewrites them. It
// also has PostgreSQL parse and plan every statement (EXPLAIN) on the migrated test database, so a
// migration that breaks a query fails here even where the generated types could not tell.

const QUERIES_DIR = path.join(__dirname, '..', 'src', 'queries');
const UPDATE = process.env.UPDATE_SQL_SNAPSHOTS === '1';

const ID = '00000000-0000-4000-8000-000000000001';
const OTHER_ID = '00000000-0000-4000-8000-000000000002';
const AT = new Date('2026-01-02T03:04:05.678Z');

const event: NewEvent = {
  event: {
    id: 'Event-00000000-0000-4000-8000-000000000003',
    createdAt: AT.toISOString(),
    sourceSystem: 'subscription-module',
    origin: 'api',
    eventType: 'created',
    objectId: 'payment-1',
    objectType: 'payment',
    metadata: { order: '42' },
    context: 'checkout',
  },
  programId: 'program-1',
  merchantId: 'merchant-1',
  contentHash: 'a'.repeat(64),
};
const settings = {
  url: 'https://merchant.example/hooks',
  auth_mode: 'basic',
  auth_url: null,
  token_request: null,
  oauth_scope: null,
  credentials: 'v1.k1.iv.tag.ciphertext',
  credentials_key_id: 'k1',
  object_types: ['payment'],
  event_types: [],
  enabled: true,
  ordering: 'none',
  disabled_reason: null,
  disabled_at: null,
  failing_since: null,
  delivery_policy: null,
};
const programList: EventListQuery = { scope: { kind: 'program', programId: 'program-1' }, page: 1, pageSize: 20 };
const everyListFilter: EventListQuery = {
  scope: { kind: 'merchant', programId: 'program-1', merchantId: 'merchant-1' },
  origin: 'api',
  objectType: 'payment',
  eventType: 'created',
  objectId: 'payment-1',
  createdFrom: AT,
  createdTo: AT,
  page: 3,
  pageSize: 50,
};
const everyDeliveryFilter = {
  status: 'failed',
  programId: 'program-1',
  merchantId: 'merchant-1',
  eventId: event.event.id,
  objectId: 'object-1',
  targetId: ID,
  targetOwnerKey: 'merchant:merchant-1',
  createdFrom: AT,
  createdTo: AT,
} as const;

/**
 * Each repository's statements, one file each: a block per statement and per shape (a statement
 * whose text depends on its parameters, such as a filter, gets one block per kind of shape).
 */
const SNAPSHOTS: Record<string, { queries: Record<string, unknown>; statements: Record<string, Compilable<unknown>> }> = {
  'api-keys': {
    queries: apiKeyQueries,
    statements: {
      create: apiKeyQueries.create({ id: ID, keyHash: 'a'.repeat(64), prefix: 'hk_abcdef', programId: 'program-1', merchantId: null }),
      authenticate: apiKeyQueries.authenticate('a'.repeat(64)),
      knownPrefixes: apiKeyQueries.knownPrefixes(),
      revoke: apiKeyQueries.revoke(ID),
      'page (no filter)': apiKeyQueries.page({}, 20, 0),
      'page (program and merchant)': apiKeyQueries.page({ programId: 'program-1', merchantId: 'merchant-1' }, 20, 40),
      count: apiKeyQueries.count({ programId: 'program-1' }),
    },
  },
  tenants: {
    queries: tenantQueries,
    statements: {
      createProgram: tenantQueries.createProgram({ id: 'program-1', name: 'Program' }),
      createMerchant: tenantQueries.createMerchant({ id: 'merchant-1', programId: 'program-1', name: 'Merchant' }),
      findProgram: tenantQueries.findProgram('program-1'),
      findMerchant: tenantQueries.findMerchant('merchant-1'),
      programPage: tenantQueries.programPage(20, 0),
      programCount: tenantQueries.programCount(),
      'merchantPage (no filter)': tenantQueries.merchantPage({}, 20, 0),
      'merchantPage (a program)': tenantQueries.merchantPage({ programId: 'program-1' }, 20, 20),
      merchantCount: tenantQueries.merchantCount({ programId: 'program-1' }),
    },
  },
  'portal-sessions': {
    queries: portalSessionQueries,
    statements: {
      createLink: portalSessionQueries.createLink({ tokenHash: 'a'.repeat(64), programId: 'program-1', merchantId: 'merchant-1', expiresAt: AT }),
      useLink: portalSessionQueries.useLink('a'.repeat(64)),
      createSession: portalSessionQueries.createSession({
        tokenHash: 'b'.repeat(64),
        csrfToken: 'csrf',
        programId: 'program-1',
        merchantId: null,
        expiresAt: AT,
      }),
      findSession: portalSessionQueries.findSession('b'.repeat(64)),
      endSession: portalSessionQueries.endSession('b'.repeat(64)),
      removeExpiredLinks: portalSessionQueries.removeExpiredLinks(),
      removeExpiredSessions: portalSessionQueries.removeExpiredSessions(),
    },
  },
  targets: {
    queries: targetQueries,
    statements: {
      findProgram: targetQueries.findProgram('program-1'),
      findMerchant: targetQueries.findMerchant('merchant-1'),
      lockByOwner: targetQueries.lockByOwner('program:program-1'),
      update: targetQueries.update(ID, settings),
      insert: targetQueries.insert({ id: ID, ownerKey: 'program:program-1', programId: 'program-1', merchantId: null }, settings, {
        ciphertext: 'v1.k1.iv.tag.signing',
        keyId: 'k1',
      }),
      find: targetQueries.find('program:program-1'),
      findForChange: targetQueries.findForChange('program:program-1'),
      findSigning: targetQueries.findSigning('program:program-1'),
      fillSigning: targetQueries.fillSigning(ID, { ciphertext: 'v1.k1.iv.tag.signing', keyId: 'k1' }),
      withoutSigning: targetQueries.withoutSigning(ID, 100),
      readSigning: targetQueries.readSigning(ID),
      'rotateSigning (with a grace period)': targetQueries.rotateSigning(ID, 'v1.k1.iv.tag.old', { ciphertext: 'v1.k1.iv.tag.new', keyId: 'k1' }, AT),
      findForSending: targetQueries.findForSending('program:program-1'),
      remove: targetQueries.remove('program:program-1'),
      'page (no filter)': targetQueries.page({}, 20, 0),
      'page (program and merchant)': targetQueries.page({ programId: 'program-1', merchantId: 'merchant-1' }, 20, 40),
      count: targetQueries.count({ programId: 'program-1' }),
    },
  },
  'credentials-rotation': {
    queries: credentialsRotationQueries,
    statements: {
      'underOtherKey (credentials, first batch)': credentialsRotationQueries.underOtherKey('credentials', 'k2', undefined, 100),
      'underOtherKey (signing secrets, next batch)': credentialsRotationQueries.underOtherKey('signing secrets', 'k2', ID, 100),
      'replace (credentials)': credentialsRotationQueries.replace('credentials', ID, 'v1.k1.iv.tag.old', { ciphertext: 'v1.k2.iv.tag.new', keyId: 'k2' }),
      'replace (signing secrets)': credentialsRotationQueries.replace('signing secrets', ID, 'v1.k1.iv.tag.old', {
        ciphertext: 'v1.k2.iv.tag.new',
        keyId: 'k2',
      }),
    },
  },
  events: {
    queries: eventQueries,
    statements: {
      findTenants: eventQueries.findTenants(['program-1'], ['merchant-1']),
      holdIngestMonth: eventQueries.holdIngestMonth(),
      ingestMonthIsCurrent: eventQueries.ingestMonthIsCurrent(),
      takeIngestMonth: eventQueries.takeIngestMonth(),
      advanceIngestMonth: eventQueries.advanceIngestMonth(),
      insertNew: eventQueries.insertNew([event]),
      loadStored: eventQueries.loadStored([event.event.id]),
      'page (program, counted filters, shallow)': eventQueries.page(programList, { skip: 0 }),
      'page (program, counted filters, deep: from the bucket walk)': eventQueries.page(
        { ...programList, origin: 'api', page: 200 },
        { skip: 7, fromSecond: 1_767_323_045 },
      ),
      'page (merchant, every filter)': eventQueries.page(everyListFilter, { skip: 100 }),
      "page (merchant, one object's events after a sequence number)": eventQueries.page(
        { scope: everyListFilter.scope, objectType: 'payment', objectId: 'payment-1', afterSequence: 7, page: 1, pageSize: 20 },
        { skip: 0 },
      ),
      'page (merchant, counted filters and a time range: counted from the buckets)': eventQueries.page(
        { ...everyListFilter, eventType: undefined, objectId: undefined, page: 1 },
        { skip: 0 },
      ),
      'page (program, deep under createdFrom: from the bucket walk)': eventQueries.page(
        { ...programList, createdFrom: AT, page: 200 },
        { skip: 7, fromSecond: 1_767_323_045 },
      ),
      countBefore: eventQueries.countBefore({ ...programList, origin: 'api' }, AT),
    },
  },
  'event-counts': {
    queries: eventCountQueries,
    statements: {
      add: eventCountQueries.add(
        [{ scope: 'program:program-1', origin: '', objectType: '', count: 1 }],
        [{ scope: 'program:program-1', origin: '', objectType: '', granularity: 86_400, bucketStart: 1_767_312_000, count: 1 }],
      ),
      walk: eventCountQueries.walk({ scope: 'program:program-1', origin: '', objectType: '', offset: 4_000n }),
    },
  },
  deliveries: {
    queries: deliveryQueries,
    statements: {
      insert: deliveryQueries.insert([
        { deliveryId: ID, eventId: event.event.id, targetId: OTHER_ID, programId: 'program-1', merchantId: null, targetOwner: 'program' },
      ]),
      routingTargets: deliveryQueries.routingTargets(['program-1'], ['merchant-1']),
      markEnqueued: deliveryQueries.markEnqueued([ID]),
      clearEnqueued: deliveryQueries.clearEnqueued([ID]),
      unswept: deliveryQueries.unswept({ limit: 100, graceMs: 10_000 }),
      swept: deliveryQueries.swept([ID]),
      stale: deliveryQueries.stale({ limit: 100, staleMs: 300_000 }),
      checked: deliveryQueries.checked([ID], [OTHER_ID]),
    },
  },
  'delivery-attempts': {
    queries: deliveryAttemptQueries,
    statements: {
      load: deliveryAttemptQueries.load([ID, OTHER_ID]),
      record: deliveryAttemptQueries.record([
        {
          delivery_id: ID,
          outcome: 'pending',
          started_at: AT,
          duration_ms: 12,
          status_code: 500,
          error_kind: 'http_status',
          error_message: 'HTTP 500',
          response_body: 'down',
          url: 'https://merchant.example/hooks?token=***',
        },
      ]),
      defer: deliveryAttemptQueries.defer([{ deliveryId: ID, count: 2, at: AT, reason: 'breaker_open' }]),
    },
  },
  'object-order': {
    queries: objectOrderQueries,
    statements: {
      predecessor: objectOrderQueries.predecessor(ID, { from: AT, to: AT }),
      pending: objectOrderQueries.pending(ID),
      markWaiting: objectOrderQueries.markWaiting({ deliveryId: ID, predecessorId: OTHER_ID, at: AT, from: AT, to: AT }),
      waitingFor: objectOrderQueries.waitingFor([ID, OTHER_ID], { from: AT, to: AT }),
      orphanedWaits: objectOrderQueries.orphanedWaits(100),
    },
  },
  'target-health': {
    queries: targetHealthQueries,
    statements: {
      read: targetHealthQueries.read([ID, OTHER_ID]),
      'read (locked)': targetHealthQueries.read([ID, OTHER_ID], undefined, true),
      write: targetHealthQueries.write([
        { id: ID, last_success_at: AT, failing_since: null, enabled: true, disabled_reason: null, disabled_at: null },
        { id: OTHER_ID, last_success_at: null, failing_since: AT, enabled: false, disabled_reason: 'auto-disabled', disabled_at: AT },
      ]),
    },
  },
  'delivery-history': {
    queries: deliveryHistoryQueries,
    statements: {
      waitingFor: deliveryHistoryQueries.waitingFor([ID, OTHER_ID]),
      'page (no filter)': deliveryHistoryQueries.page({}, 20, 0),
      'page (every filter)': deliveryHistoryQueries.page(everyDeliveryFilter, 20, 40),
      'summaries (no filter)': deliveryHistoryQueries.summaries({}, 20, 0),
      'summaries (a tenant, every filter)': deliveryHistoryQueries.summaries(everyDeliveryFilter, 20, 40),
      'summaries (one of a tenant)': deliveryHistoryQueries.summaries({ id: ID, targetOwnerKey: 'merchant:merchant-1' }, 1, 0),
      'count (no filter)': deliveryHistoryQueries.count({}),
      'count (every filter)': deliveryHistoryQueries.count(everyDeliveryFilter),
      find: deliveryHistoryQueries.find(ID),
      ofEvent: deliveryHistoryQueries.ofEvent(event.event.id),
      eventExists: deliveryHistoryQueries.eventExists(event.event.id),
      targets: deliveryHistoryQueries.targets([ID]),
      attempts: deliveryHistoryQueries.attempts([ID]),
      'lockForReplay (one delivery)': deliveryHistoryQueries.lockForReplay({ id: ID }, 2),
      'lockForReplay (a filter)': deliveryHistoryQueries.lockForReplay({ status: 'failed', merchantId: 'merchant-1' }, 101),
      'reset (needs a new job)': deliveryHistoryQueries.reset([ID], true, AT),
      'reset (job still queued)': deliveryHistoryQueries.reset([ID], false, AT),
    },
  },
  recoveries: {
    queries: recoveryQueries,
    statements: {
      lockTarget: recoveryQueries.lockTarget('merchant:merchant-1'),
      unfinished: recoveryQueries.unfinished(ID),
      find: recoveryQueries.find(ID, 'merchant:merchant-1'),
      finish: recoveryQueries.finish(ID, AT, { sent: 3, delivered: 2, failed: 1 }),
      'candidates (a merchant target, first page)': recoveryQueries.candidates(
        { id: ID, programId: 'program-1', merchantId: 'merchant-1' },
        { from: AT, to: AT, storedSince: AT },
        null,
        500,
      ),
      'candidates (a program target, next page)': recoveryQueries.candidates(
        { id: ID, programId: 'program-1', merchantId: null },
        { from: AT, to: AT, storedSince: AT },
        { createdAt: AT, eventId: event.event.id },
        500,
      ),
      lockFailed: recoveryQueries.lockFailed([ID, OTHER_ID], { from: AT, to: AT }),
      insertDeliveries: recoveryQueries.insertDeliveries(ID, [{ id: OTHER_ID, eventId: event.event.id, createdAt: AT }]),
      'insertRecovery (callbacks queued)': recoveryQueries.insertRecovery({
        id: ID,
        targetId: OTHER_ID,
        ownerKey: 'merchant:merchant-1',
        from: AT,
        to: AT,
        coveredTo: AT,
        created: 1,
        deliveries: [{ deliveryId: OTHER_ID, deliveryCreatedAt: AT, attemptsBefore: 0 }],
      }),
      'insertRecovery (nothing to queue: finished at once)': recoveryQueries.insertRecovery({
        id: ID,
        targetId: OTHER_ID,
        ownerKey: 'merchant:merchant-1',
        from: AT,
        to: AT,
        coveredTo: AT,
        created: 0,
        deliveries: [],
      }),
      tagDeliveries: recoveryQueries.tagDeliveries(ID, [{ deliveryId: OTHER_ID, deliveryCreatedAt: AT, attemptsBefore: 2 }]),
    },
  },
};

function render(file: string, statements: Record<string, Compilable<unknown>>): string {
  const blocks = Object.entries(statements).map(([name, statement]) => {
    const text = format(statement.compile().sql, { language: 'postgresql', keywordCase: 'upper' });
    return `-- ${file}: ${name}\n${text};\n`;
  });
  return [
    '-- The SQL of each statement this repository sends, generated by packages/db/test/sql-snapshot.test.ts.',
    '-- Do not edit: run UPDATE_SQL_SNAPSHOTS=1 pnpm exec jest packages/db/test/sql-snapshot.test.ts after changing a query.',
    '',
    ...blocks,
  ].join('\n');
}

describe('the SQL snapshot of every repository statement (packages/db/src/queries)', () => {
  it.each(Object.keys(SNAPSHOTS))('has a block for each statement of %s', (file) => {
    const { queries, statements } = SNAPSHOTS[file]!;
    const covered = new Set(Object.keys(statements).map((name) => name.split(' ')[0]));
    expect(Object.keys(queries).filter((name) => !covered.has(name))).toEqual([]);
  });

  it.each(Object.keys(SNAPSHOTS))('matches the checked-in %s.sql', (file) => {
    const target = path.join(QUERIES_DIR, `${file}.sql`);
    const rendered = render(file, SNAPSHOTS[file]!.statements);
    if (UPDATE) writeFileSync(target, rendered);
    if (!existsSync(target)) throw new Error(`${target} is missing: run UPDATE_SQL_SNAPSHOTS=1 pnpm exec jest packages/db/test/sql-snapshot.test.ts`);
    expect(readFileSync(target, 'utf8')).toBe(rendered);
  });
});

describe('every repository statement against the migrated database', () => {
  const pool = createDatabasePool(testDatabaseUrl());
  afterAll(() => closeDatabasePool(pool));

  const all = Object.entries(SNAPSHOTS).flatMap(([file, { statements }]) =>
    Object.entries(statements).map(([name, statement]) => [`${file}: ${name}`, statement] as const),
  );

  it.each(all)('PostgreSQL parses and plans %s', async (_name, statement) => {
    const { sql, parameters } = statement.compile();
    await expect(pool.query(`EXPLAIN ${sql}`, parameters as unknown[])).resolves.toMatchObject({ rows: expect.any(Array) });
  });
});

// The typecheck (`pnpm typecheck`, part of CI) is the test that the schema and the statements'
// row types agree: these lines must stay errors. If one compiles, the generated types no longer
// guard the statements.
export function schemaGuards(): void {
  // @ts-expect-error: no such column in the schema.
  db.selectFrom('events').select('no_such_column');
  // @ts-expect-error: no such table in the schema.
  db.selectFrom('no_such_table');
  // @ts-expect-error: attempts_made is an integer column.
  db.updateTable('deliveries').set({ attempts_made: 'many' });
  const stored = {} as RowOf<ReturnType<typeof eventQueries.loadStored>>;
  // @ts-expect-error: a statement's row type follows the schema: origin is text.
  const origin: number = stored.origin;
  void origin;
}
