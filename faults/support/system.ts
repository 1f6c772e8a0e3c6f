import { randomUUID } from 'node:crypto';
import { parseRedisUrl, redisKeyPrefix } from '@herald/config';
import { removeQueueKeys, requestJson, startService, uniqueId, type JsonAnswer, type ServiceProcess } from '@herald/testing';
import { dumpRedisKeys } from './redis-dump';
import { recordSecret, saveRedisDump, saveResponses, saveServiceLog } from './run-dir';

const ADMIN = 'dev-admin-token';
const INGEST = 'dev-ingest-token';
const BROWSER_HEADERS = { 'content-type': 'application/json', 'accept-language': 'en-US', origin: 'https://shop.example', 'user-agent': 'herald-faults/1.0' };

/** One answer and how long it took. */
export type Timed = JsonAnswer;

/**
 * An events-api process and delivery-worker processes on the given PostgreSQL and Redis, with a
 * fresh queue prefix, driven over HTTP on 127.0.0.1 as producers and merchants would.
 */
export class System {
  readonly queuePrefix = uniqueId('faults');
  readonly services: ServiceProcess[] = [];
  api?: ServiceProcess;
  origin = '';
  /** Where the services' keys are: QUEUE_PREFIX, hash-tagged on a cluster (as the services do). */
  readonly keyPrefix: string;
  /** Bodies of the API's answers, kept for scenario 8's search at `close()`. */
  readonly #answers: string[] = [];

  /** `scenario` names what this system leaves in the run directory (logs, Redis keys, answers). */
  constructor(
    readonly scenario: string,
    readonly databaseUrl: string,
    readonly redisUrl: string,
    readonly env: Record<string, string> = {},
  ) {
    this.keyPrefix = redisKeyPrefix(this.queuePrefix, parseRedisUrl(redisUrl));
    recordSecret('admin token', ADMIN);
    recordSecret('ingest token', INGEST);
  }

  #env(extra: Record<string, string>): Record<string, string> {
    return {
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      DATABASE_URL: this.databaseUrl,
      REDIS_URL: this.redisUrl,
      QUEUE_PREFIX: this.queuePrefix,
      METRICS_PORT: '0',
      ...this.env,
      ...extra,
    };
  }

  async startApi(extra: Record<string, string> = {}): Promise<void> {
    this.api = startService('services/events-api/src/server.ts', this.#env({ PORT: '0', ...extra }));
    this.services.push(this.api);
    const listening = await this.api.waitForLog('events-api listening');
    this.origin = `http://127.0.0.1:${String(listening.port)}`;
  }

  async startWorker(extra: Record<string, string> = {}): Promise<ServiceProcess> {
    const worker = startService('services/delivery-worker/src/main.ts', this.#env(extra));
    this.services.push(worker);
    await worker.waitForLog('delivery-worker ready', 30_000);
    return worker;
  }

  /** One request with a time limit; a missing answer is status 0. */
  async request(method: string, path: string, headers: Record<string, string>, body?: unknown, timeoutMs = 15_000): Promise<Timed> {
    const started = Date.now();
    try {
      const answer = await requestJson(method, `${this.origin}${path}`, { headers, body, timeoutMs });
      // The answers that hold a credential by design: a new API key, shown once, and a target's
      // signing secret, shown by its own endpoints only.
      if (!(method === 'POST' && path === '/admin/api-keys') && !path.includes('/notification-target/signing-secret')) this.#answers.push(answer.body);
      return answer;
    } catch (error) {
      return { status: 0, contentType: '', body: String(error), ms: Date.now() - started };
    }
  }

  admin(method: string, path: string, body?: unknown): Promise<Timed> {
    return this.request(method, `/admin${path}`, { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, body);
  }

  ingest(events: unknown[], timeoutMs?: number): Promise<Timed> {
    return this.request('POST', '/internal/events', { authorization: `Bearer ${INGEST}`, 'content-type': 'application/json' }, { events }, timeoutMs);
  }

  listEvents(key: string, query = '', timeoutMs?: number): Promise<Timed> {
    return this.request('GET', `/events${query}`, { 'x-api-key': key, ...BROWSER_HEADERS }, undefined, timeoutMs);
  }

  /** A program whose target is `url` (auth none), a merchant and a merchant key. */
  async createTenant(url: string): Promise<{ programId: string; merchantId: string; key: string }> {
    const program = JSON.parse((await this.admin('POST', '/programs', { name: 'Faults' })).body) as { id: string };
    const merchant = JSON.parse((await this.admin('POST', '/merchants', { programId: program.id, name: 'Faults' })).body) as { id: string };
    const key = JSON.parse((await this.admin('POST', '/api-keys', { merchantId: merchant.id })).body) as { key: string };
    recordSecret('api key', key.key);
    const target = await this.admin('PUT', `/programs/${program.id}/notification-target`, { url, auth: { mode: 'none' } });
    if (target.status !== 200) throw new Error(`target: ${target.status} ${target.body}`);
    return { programId: program.id, merchantId: merchant.id, key: key.key };
  }

  /**
   * Stops every process (SIGKILL) and removes this system's keys from Redis, after keeping the
   * processes' logs, the keys and the API's answers in the run directory.
   */
  async close(): Promise<void> {
    const services = this.services.splice(0);
    await Promise.all(services.map((service) => service.stop('SIGKILL')));
    for (const service of services) saveServiceLog(`${this.scenario}-${service === this.api ? 'events-api' : 'delivery-worker'}`, service.output());
    saveResponses(this.scenario, this.#answers.splice(0));
    saveRedisDump(this.scenario, await dumpRedisKeys(this.redisUrl, `${this.keyPrefix}:*`));
    await removeQueueKeys(this.redisUrl, this.keyPrefix);
  }
}

/** `n` events of the tenant, merchant-level, with fresh ids. */
export function newEvents(tenant: { programId: string; merchantId: string }, n: number, tag: string): Array<Record<string, unknown>> {
  return Array.from({ length: n }, (_, i) => ({
    id: `Event-${randomUUID()}`,
    programId: tenant.programId,
    merchantId: tenant.merchantId,
    origin: 'api',
    eventType: 'created',
    objectId: `${tag}-${i}`,
    objectType: 'payment',
  }));
}

/** Whether an answer is an RFC 9457 problem of this status. */
export function isProblem(answer: Timed, status: number): boolean {
  if (answer.status !== status || !answer.contentType.startsWith('application/problem+json')) return false;
  try {
    return (JSON.parse(answer.body) as { status?: unknown }).status === status;
  } catch {
    return false;
  }
}
