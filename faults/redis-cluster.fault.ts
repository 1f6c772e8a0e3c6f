import { createRedisConnection, scanKeys } from '@herald/queue';
import { lastRead, startHttpRecorder, startRedisCluster, waitFor, useMigratedDatabase, type HttpRecorder, type PrivateRedisCluster } from '@herald/testing';
import { report } from './support/report';
import { newEvents, System } from './support/system';

// Herald on a Redis Cluster (REDIS_URL=redis+cluster://…): a real cluster of six redis-server
// processes (three masters, a replica each), an events-api and a delivery-worker process. Events
// are ingested and their callbacks must all arrive as accepted: in steady state, across a worker
// restart (the jobs wait in the cluster meanwhile), and across a failover of the master that
// holds Herald's hash slot (its replica promoted while events are ingested and delivered), first a
// manual failover (CLUSTER FAILOVER: no write lost), then a crash (SIGKILL: the replica is elected
// after the node timeout, and writes not yet replicated are lost, which the reconciler requeues).

const database = useMigratedDatabase('herald_faults_cluster');

// In a describe block, so that its afterAll (which keeps the keys for scenario 8, then removes
// them) runs before the test setup's own, which would remove them first.
describe('Herald on a Redis Cluster', () => {
  let cluster: PrivateRedisCluster | undefined;
  let system: System;
  let receiver: HttpRecorder;
  let tenant: { programId: string; merchantId: string; key: string };

  beforeAll(async () => {
    cluster = await startRedisCluster();
    // Callbacks take a little time, so that jobs are queued and in flight when things happen.
    receiver = await startHttpRecorder(() => ({ status: 200, delayMs: 20 }));
    system = new System('redis-cluster', database.url, cluster.url, {
      DELIVERY_ATTEMPTS: '20',
      DELIVERY_BACKOFF_MS: '200',
      ENQUEUE_TIMEOUT_MS: '500',
      SWEEPER_GRACE_MS: '1000',
      SWEEPER_INTERVAL_MS: '500',
      RECONCILER_INTERVAL_MS: '1000',
      RECONCILER_STALE_AFTER_MS: '2000',
      WORKER_CONCURRENCY: '4',
    });
    await system.startApi();
    await system.startWorker();
    tenant = await system.createTenant(`${receiver.origin}/hook`);
  }, 90_000);

  afterAll(async () => {
    await system?.close();
    await receiver?.close();
    await cluster?.remove();
    cluster = undefined;
  }, 60_000);

  /** Ingests `batches` batches of `size` events, `pauseMs` apart, and answers the events accepted (201). */
  async function ingest(
    tag: string,
    batches: number,
    size: number,
    pauseMs: number,
    between?: (batch: number) => void,
  ): Promise<{ accepted: Array<Record<string, unknown>>; statuses: Record<string, number> }> {
    const accepted: Array<Record<string, unknown>> = [];
    const statuses: Record<string, number> = {};
    for (let b = 0; b < batches; b++) {
      between?.(b);
      const events = newEvents(tenant, size, `${tag}${b}`);
      const answer = await system.ingest(events, 20_000);
      statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
      if (answer.status === 201) accepted.push(...events);
      if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
    return { accepted, statuses };
  }

  /**
   * Waits (at most `timeoutMs`) until every accepted event has been received, then answers which
   * were never received, which arrived with another body than accepted, and how many were sent twice.
   */
  async function deliveries(
    accepted: ReadonlyArray<Record<string, unknown>>,
    timeoutMs = 60_000,
  ): Promise<{ missing: string[]; altered: string[]; duplicates: number }> {
    const ids = new Set(accepted.map((event) => String(event.id)));
    const received = () => receiver.requests.filter((request) => ids.has(String(request.headers['webhook-id'])));
    // Goes on after the time is up: what never arrived is the answer.
    await waitFor(
      () => new Set(received().map((request) => String(request.headers['webhook-id']))).size,
      (n) => n >= ids.size,
      timeoutMs,
      'every accepted event called back',
      200,
    ).catch(lastRead);
    const requests = received();
    const got = new Map(requests.map((request) => [String(request.headers['webhook-id']), JSON.parse(request.body) as Record<string, unknown>]));
    const altered = accepted
      .filter((event) => got.has(String(event.id)))
      .filter((event) => {
        const body = got.get(String(event.id))!;
        return (['id', 'origin', 'eventType', 'objectId', 'objectType'] as const).some((field) => body[field] !== event[field]);
      })
      .map((event) => String(event.id));
    return { missing: [...ids].filter((id) => !got.has(id)), altered, duplicates: requests.length - got.size };
  }

  /** Every key of this system on the cluster, from every master. */
  async function systemKeys(): Promise<string[]> {
    const redis = createRedisConnection(cluster!.url, { role: 'client', name: 'faults-cluster-keys' });
    redis.on('error', () => undefined);
    try {
      const keys: string[] = [];
      for await (const page of scanKeys(redis, `*${system.queuePrefix}*`)) keys.push(...page.keys);
      return keys;
    } finally {
      redis.disconnect();
    }
  }

  it('delivers ingested events through the cluster, every key of the system in its one hash-tagged slot', async () => {
    const started = Date.now();
    const { accepted, statuses } = await ingest('steady', 5, 10, 0);
    const result = await deliveries(accepted);
    // A merchant's read goes through the API key rate limit, counted on the cluster too: the
    // events-api adds its count there within RATE_LIMIT_SYNC_MS (the key then lives two windows).
    // A count whose window ends before its sync is dropped (it can no longer limit anything), so
    // the read is made just after a window begins (windows of 1 s, aligned on the clock).
    await new Promise((resolve) => setTimeout(resolve, 1_000 - (Date.now() % 1_000) + 10));
    const listed = await system.listEvents(tenant.key, '?objectType=payment');
    const keys = await waitFor(
      systemKeys,
      (found) => found.some((key) => key.startsWith(`${system.keyPrefix}:ratelimit`)),
      2_000,
      'the rate-limit count on the cluster',
      50,
    ).catch(lastRead<string[]>);

    report(
      'Redis Cluster: steady state',
      '5 batches of 10 events ingested through an events-api and delivered by a delivery-worker on a 3-master Redis Cluster',
      {
        'events accepted': accepted.length,
        'ingest answers by status': statuses,
        'never delivered': result.missing.length,
        'delivered with another body': result.altered.length,
        duplicates: result.duplicates,
        'keys of the system on the cluster': keys.length,
        seconds: ((Date.now() - started) / 1000).toFixed(1),
      },
    );
    expect(statuses).toEqual({ 201: 5 });
    expect(result).toEqual({ missing: [], altered: [], duplicates: 0 });
    expect(listed.status).toBe(200);
    // The queue, the gate, the fair-share records and the rate limit all under the hash tag.
    expect(system.keyPrefix).toBe(`{${system.queuePrefix}}`);
    expect(keys.some((key) => key.startsWith(`${system.keyPrefix}:deliveries:`))).toBe(true);
    expect(keys.some((key) => key.startsWith(`${system.keyPrefix}:gate:`))).toBe(true);
    expect(keys.some((key) => key.startsWith(`${system.keyPrefix}:ratelimit`))).toBe(true);
    expect(keys.filter((key) => !key.startsWith(`${system.keyPrefix}:`))).toEqual([]);
  });

  it('loses nothing across a worker restart: events accepted while no worker runs wait in the cluster', async () => {
    const started = Date.now();
    const before = await ingest('restart-before', 3, 10, 50);
    const old = system.services.find((service) => service !== system.api)!;
    await old.stop('SIGTERM');
    system.services.splice(system.services.indexOf(old), 1);
    const receivedAtStop = receiver.requests.length;
    const during = await ingest('restart-during', 3, 10, 50);
    const receivedWhileDown = receiver.requests.length - receivedAtStop;
    await system.startWorker();
    const accepted = [...before.accepted, ...during.accepted];
    const result = await deliveries(accepted);

    report(
      'Redis Cluster: worker restart',
      '30 events ingested, the delivery-worker stopped (SIGTERM), 30 more ingested while no worker ran, a new worker started',
      {
        'events accepted': accepted.length,
        'ingest answers by status': Object.fromEntries(
          Object.keys({ ...before.statuses, ...during.statuses }).map((status) => [status, (before.statuses[status] ?? 0) + (during.statuses[status] ?? 0)]),
        ),
        'old worker exit code': old.child.exitCode,
        'callbacks received while no worker ran': receivedWhileDown,
        'never delivered': result.missing.length,
        'delivered with another body': result.altered.length,
        duplicates: result.duplicates,
        seconds: ((Date.now() - started) / 1000).toFixed(1),
      },
    );
    expect(accepted).toHaveLength(60);
    expect(old.child.exitCode).toBe(0);
    // Nothing was delivered while no worker ran, so the new worker delivered what waited.
    expect(receivedWhileDown).toBe(0);
    expect(result).toEqual({ missing: [], altered: [], duplicates: 0 });
  });

  it('delivers every event accepted across a failover of the master holding the queue', async () => {
    const started = Date.now();
    const shard = await cluster!.shardOf(system.keyPrefix);
    let failover: Promise<void> | undefined;
    let failoverMs = 0;
    const { accepted, statuses } = await ingest('failover', 30, 5, 100, (batch) => {
      if (batch !== 10) return;
      const at = Date.now();
      failover = cluster!.failover(shard).then(() => {
        failoverMs = Date.now() - at;
      });
    });
    await failover;
    const after = await cluster!.shardOf(system.keyPrefix);
    const result = await deliveries(accepted);

    report(
      'Redis Cluster: master failover',
      `30 batches of 5 events, 100 ms apart; before batch 11 the replica (${shard.replica}) of the master holding the queue's slot (${shard.master}) took over with CLUSTER FAILOVER`,
      {
        'events accepted': accepted.length,
        'ingest answers by status': statuses,
        'failover took (ms)': failoverMs,
        'master after': after.master,
        'never delivered': result.missing.length,
        'delivered with another body': result.altered.length,
        duplicates: result.duplicates,
        'processes alive': system.services.every((service) => service.child.exitCode === null),
        seconds: ((Date.now() - started) / 1000).toFixed(1),
      },
    );
    expect(after).toEqual({ master: shard.replica, replica: shard.master });
    expect(Object.keys(statuses).filter((status) => Number(status) >= 500)).toEqual([]);
    expect(accepted.length).toBeGreaterThan(0);
    expect(result.missing).toEqual([]);
    expect(result.altered).toEqual([]);
    expect(system.services.every((service) => service.child.exitCode === null)).toBe(true);
  });

  it('delivers every event accepted across a crash of the master holding the queue (its replica elected)', async () => {
    const started = Date.now();
    const shard = await cluster!.shardOf(system.keyPrefix);
    const leftToSweeper = (): number =>
      system
        .api!.output()
        .split('\n')
        .filter((line) => line.includes('deliveries stored but not enqueued')).length;
    const leftBefore = leftToSweeper();
    let crash: Promise<void> | undefined;
    let electionMs = 0;
    const { accepted, statuses } = await ingest('crash', 40, 5, 100, (batch) => {
      if (batch !== 10) return;
      const at = Date.now();
      crash = cluster!.killMaster(shard).then(() => {
        electionMs = Date.now() - at;
      });
    });
    await crash;
    const after = await cluster!.shardOf(system.keyPrefix);
    const result = await deliveries(accepted, 90_000);
    const left = leftToSweeper() - leftBefore;

    report(
      'Redis Cluster: master crash',
      `40 batches of 5 events, 100 ms apart; before batch 11 the master holding the queue's slot (${shard.master}) was killed with SIGKILL and its replica (${shard.replica}) elected (cluster-node-timeout 1 s)`,
      {
        'events accepted': accepted.length,
        'ingest answers by status': statuses,
        'kill to election (ms)': electionMs,
        'ingest batches whose enqueue failed (left to the sweeper)': left,
        'master after': after.master,
        'never delivered': result.missing.length,
        'delivered with another body': result.altered.length,
        duplicates: result.duplicates,
        'processes alive': system.services.every((service) => service.child.exitCode === null),
        seconds: ((Date.now() - started) / 1000).toFixed(1),
      },
    );
    expect(after.master).toBe(shard.replica);
    // The crash was felt (enqueues failed while the slot had no master), or this proved nothing.
    expect(left).toBeGreaterThan(0);
    expect(Object.keys(statuses).filter((status) => Number(status) >= 500)).toEqual([]);
    expect(accepted.length).toBeGreaterThan(0);
    expect(result.missing).toEqual([]);
    expect(result.altered).toEqual([]);
    expect(system.services.every((service) => service.child.exitCode === null)).toBe(true);
  });
});

// A managed cluster's usual access: TLS only (the cluster bus and replication too) and a password.
// The services trust the cluster's self-signed certificate through NODE_EXTRA_CA_CERTS, as they
// would a private CA's.
describe('Herald on a Redis Cluster over TLS, with a password', () => {
  let cluster: PrivateRedisCluster | undefined;
  let system: System;
  let receiver: HttpRecorder;

  beforeAll(async () => {
    cluster = await startRedisCluster({ tls: true, password: 'cluster-password-1' });
    receiver = await startHttpRecorder(() => ({ status: 200 }));
    system = new System('redis-cluster-tls', database.url, cluster.url, { NODE_EXTRA_CA_CERTS: cluster.caFile! });
    await system.startApi();
    await system.startWorker();
  }, 90_000);

  afterAll(async () => {
    await system?.close();
    await receiver?.close();
    await cluster?.remove();
    cluster = undefined;
  }, 60_000);

  it('is ready, and delivers ingested events through a rediss+cluster:// REDIS_URL', async () => {
    expect(cluster!.url).toMatch(/^rediss\+cluster:\/\/:cluster-password-1@127\.0\.0\.1:\d+,/);
    const tenant = await system.createTenant(`${receiver.origin}/hook`);
    const ready = await system.request('GET', '/readyz', {});
    const events = newEvents(tenant, 10, 'tls');
    const answer = await system.ingest(events);
    const received = () => new Set(receiver.requests.map((request) => String(request.headers['webhook-id'])));
    await waitFor(received, (got) => events.every((event) => got.has(String(event.id))), 30_000, 'every event called back', 100).catch(lastRead);

    expect(ready.status).toBe(200);
    expect(answer.status).toBe(201);
    expect(events.filter((event) => !received().has(String(event.id)))).toEqual([]);
    // The password never reaches a log.
    expect(system.services.map((service) => service.output()).join('\n')).not.toContain('cluster-password-1');
  });
});
