import { randomUUID } from 'node:crypto';
import { createTenantApi } from './support/api';
import { createRandom, faultSeed } from './support/prng';
import { report } from './support/report';
import { recordSecret, saveResponses } from './support/run-dir';

// Scenario 7: randomized programs, merchants and keys (seeded). Every key pages through GET /events
// with random filters and must see exactly its tenant's events: a merchant key its merchant's, a
// program key its program's (program-wide and all its merchants'); and probes of other tenants'
// objectIds with each key must come back empty.

const SEED = faultSeed(7);
const EVENTS = 600;
const PROBES = 300;

const api = createTenantApi('7-tenant-isolation');
afterAll(() => api.close());

interface Key {
  key: string;
  programId: string;
  /** Absent for a program key. */
  merchantId?: string;
}

const ORIGINS = ['api', 'widget', 'automated'] as const;
const OBJECT_TYPES = ['subscription', 'payment', 'refund', 'transactions', 'billing-cycle'] as const;

it("never shows a key another tenant's event", async () => {
  const r = createRandom(SEED);
  const started = Date.now();
  const keys: Key[] = [];
  const owner = new Map<string, { programId: string; merchantId?: string; objectId: string; origin: string; objectType: string }>();
  const programs: Array<{ id: string; merchants: string[] }> = [];
  const programCount = r.int(3, 5);
  for (let p = 0; p < programCount; p++) {
    const program = (
      await api
        .admin('post', '/programs')
        .send({ name: `P${p}` })
        .expect(201)
    ).body as { id: string };
    const merchants: string[] = [];
    for (let m = 0, n = r.int(1, 4); m < n; m++) {
      const merchant = (
        await api
          .admin('post', '/merchants')
          .send({ programId: program.id, name: `M${m}` })
          .expect(201)
      ).body as { id: string };
      merchants.push(merchant.id);
      // Sometimes two keys for one merchant, and a revoked one that must see nothing.
      for (let k = 0, nk = r.int(1, 2); k < nk; k++) {
        const key = (await api.admin('post', '/api-keys').send({ merchantId: merchant.id }).expect(201)).body as { key: string };
        keys.push({ key: key.key, programId: program.id, merchantId: merchant.id });
      }
    }
    const programKey = (await api.admin('post', '/api-keys').send({ programId: program.id }).expect(201)).body as { key: string };
    keys.push({ key: programKey.key, programId: program.id });
    programs.push({ id: program.id, merchants });
  }
  const revoked = (await api.admin('post', '/api-keys').send({ merchantId: programs[0]!.merchants[0] }).expect(201)).body as { id: string; key: string };
  await api.admin('delete', `/api-keys/${revoked.id}`).expect(200);
  for (const key of [...keys.map((k) => k.key), revoked.key]) recordSecret('api key', key);
  const answers: string[] = [];

  for (let sent = 0; sent < EVENTS; sent += 50) {
    const batch = Array.from({ length: 50 }, () => {
      const program = r.pick(programs);
      const merchantId = r.chance(0.75) ? r.pick(program.merchants) : undefined;
      const event = {
        id: `Event-${randomUUID()}`,
        programId: program.id,
        ...(merchantId ? { merchantId } : {}),
        origin: r.pick(ORIGINS),
        eventType: 'created',
        // Object ids shared across tenants now and then: a filter must not join them.
        objectId: r.chance(0.2) ? `shared-${r.int(0, 5)}` : `obj-${r.int(0, 1e9)}`,
        objectType: r.pick(OBJECT_TYPES),
      };
      owner.set(event.id, { programId: program.id, merchantId, objectId: event.objectId, origin: event.origin, objectType: event.objectType });
      return event;
    });
    await api.ingest({ events: batch }).expect(201);
  }

  const visibleTo = (key: Key, id: string): boolean => {
    const o = owner.get(id);
    return o !== undefined && o.programId === key.programId && (key.merchantId === undefined || o.merchantId === key.merchantId);
  };

  let requests = 0;
  let leaks = 0;
  let missing = 0;
  const leakSamples: string[] = [];
  for (const key of keys) {
    const filter: Record<string, string> = r.pick<Record<string, string>>([
      {},
      { origin: r.pick(ORIGINS) },
      { objectType: r.pick(OBJECT_TYPES) },
      { objectId: `shared-${r.int(0, 5)}` },
    ]);
    const pageSize = r.pick([7, 50, 100]);
    const seen = new Set<string>();
    for (let page = 1; ; page++) {
      const res = await api.listEvents(key.key, { ...filter, page, pageSize });
      answers.push(res.text);
      requests++;
      expect(res.status).toBe(200);
      const body = res.body as { data: Array<{ id: string }>; totalPages: number };
      for (const event of body.data) {
        seen.add(event.id);
        if (!visibleTo(key, event.id)) {
          leaks++;
          if (leakSamples.length < 5) leakSamples.push(`${key.merchantId ?? key.programId} saw ${event.id}`);
        }
      }
      if (page >= body.totalPages) break;
    }
    const expected = [...owner.entries()].filter(
      ([id, o]) => visibleTo(key, id) && Object.entries(filter).every(([name, value]) => (o as Record<string, unknown>)[name] === value),
    );
    missing += expected.filter(([id]) => !seen.has(id)).length;
  }

  for (let i = 0; i < PROBES; i++) {
    const key = r.pick(keys);
    const foreign = [...owner.values()].filter((o) => o.programId !== key.programId || (key.merchantId !== undefined && o.merchantId !== key.merchantId));
    const target = r.pick(foreign);
    const res = await api.listEvents(key.key, { objectId: target.objectId });
    answers.push(res.text);
    requests++;
    for (const event of (res.body as { data: Array<{ id: string }> }).data) if (!visibleTo(key, event.id)) leaks++;
  }
  const revokedAnswer = await api.listEvents(revoked.key);
  answers.push(revokedAnswer.text);
  requests++;
  saveResponses('7-tenant-isolation', answers);

  report(
    '7. tenant isolation',
    `${programCount} programs, ${programs.reduce((n, p) => n + p.merchants.length, 0)} merchants, ${keys.length} keys (+1 revoked), ${EVENTS} events (seed ${SEED}); every key paged through its events with a random filter, then ${PROBES} probes of other tenants' objectIds`,
    {
      'events accepted': EVENTS,
      'requests tried': requests,
      'events shown to a key outside its tenant': leaks,
      'events of its tenant a key did not see': missing,
      'revoked key answer': revokedAnswer.status,
      seconds: ((Date.now() - started) / 1000).toFixed(1),
      ...(leakSamples.length ? { samples: leakSamples } : {}),
    },
  );
  expect(leakSamples).toEqual([]);
  expect(leaks).toBe(0);
  expect(missing).toBe(0);
  expect(revokedAnswer.status).toBe(401);
});
