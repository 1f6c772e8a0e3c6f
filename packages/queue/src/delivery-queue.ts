import { MAX_DELIVERY_ATTEMPTS, withTimeout, type DeliveryRef } from '@herald/domain';
import { Queue, type JobsOptions } from 'bullmq';
import type { RedisConnection } from './redis';
import { DELIVERY_BACKOFF_TYPE } from './delivery-backoff';
import { firstConnect } from './redis';
import { DELIVERIES_QUEUE, type DeliveryJobData } from './delivery-job';
import {
  contextWith,
  endSpan,
  errorTypeOf,
  MESSAGING,
  MESSAGING_SYSTEM_BULLMQ,
  SpanKind,
  startSpan,
  traceparentOf,
  type TraceContext,
  type Tracer,
} from '@herald/telemetry';

/**
 * How long delivery jobs are kept once finished. How often they are tried is the target's delivery
 * policy, read by the worker at each attempt (every job is enqueued with MAX_DELIVERY_ATTEMPTS, the
 * most a policy allows), and the delays are deliveryBackoffStrategy's: a producer needs neither.
 */
export interface RetryPolicy {
  /** How long finished jobs stay visible in the dashboard, in seconds. */
  keepCompletedSeconds: number;
  /** How long failed jobs (every attempt used) stay for ops to inspect and retry, in seconds. */
  keepFailedSeconds: number;
  /** Most finished jobs kept, whatever their age: Redis memory stays bounded at any traffic. */
  keepCompletedMax: number;
  keepFailedMax: number;
}

export type DeliveryQueue = Queue<DeliveryJobData, unknown, string>;

/**
 * Most jobs one `addBulk` sends. addBulk writes its whole pipeline to the socket only once every
 * job of it is encoded, so Redis waits for all of them; a batch's jobs go in pipelines of this
 * many, sent one after another on the same connection (so in order, and their priorities with
 * them), and Redis adds the first while this process encodes the next. Measured with batches of
 * 500 events fanning out to 1,000 jobs (bench/profile.ts ingest --build): about 6 % more events/s
 * than one pipeline, the same with 250.
 */
export const ADD_CHUNK_JOBS = 100;

/** The deliveries queue on a connection (a `client`-role one for producers, so enqueue fails fast). */
export function createDeliveryQueue(connection: RedisConnection, prefix: string): DeliveryQueue {
  return new Queue<DeliveryJobData, unknown, string>(DELIVERIES_QUEUE, { connection, prefix });
}

/**
 * The job options of every delivery. BullMQ's attempts are only a ceiling: the worker reads the
 * target's policy at each attempt and fails the job for good once the policy's attempts are spent,
 * so that a policy changed while jobs wait applies to their next attempt. The backoff is Herald's
 * own type: the worker's backoff strategy computes each delay (exponential with jitter up to the
 * target's longest wait, or a merchant's Retry-After).
 */
function deliveryJobOptions(policy: RetryPolicy): JobsOptions {
  return {
    attempts: MAX_DELIVERY_ATTEMPTS,
    backoff: { type: DELIVERY_BACKOFF_TYPE },
    // BullMQ keeps the jobs that satisfy both bounds.
    removeOnComplete: { age: policy.keepCompletedSeconds, count: policy.keepCompletedMax },
    removeOnFail: { age: policy.keepFailedSeconds, count: policy.keepFailedMax },
  };
}

/** Adds delivery jobs; rejects at once while Redis is unreachable, and after `timeoutMs` at most. */
export interface DeliveryProducer {
  readonly queue: DeliveryQueue;
  /**
   * Adds one job per delivery; a delivery whose job exists already (in any state) is left alone.
   * With `parent` (and the producer's tracer), the enqueue is a span of that trace, which the jobs
   * carry on to the worker.
   */
  enqueue(jobs: readonly DeliveryRef[], parent?: TraceContext): Promise<void>;
  /** Step one of a replay: see `removeFinishedJobs`. */
  removeFinishedJobs(deliveryIds: readonly string[]): Promise<Map<string, JobSlot>>;
  /**
   * For deliveries the database holds as pending: gives a new job to each whose job is gone or
   * finished (see `removeFinishedJobs`), leaves the others alone, and returns the ids it requeued.
   */
  requeueDead(jobs: readonly DeliveryRef[]): Promise<Set<string>>;
  /** Lets these deliveries' parked jobs go now (see wakeParkedJobs). */
  wake(deliveryIds: readonly string[]): Promise<void>;
  close(): Promise<void>;
}

/**
 * The producer side of the deliveries queue, for the events-api and the sweeper. It never waits
 * for Redis: callers hold database work open (the sweeper a transaction, the API a response),
 * and a delivery that could not be enqueued stays in the outbox for the next sweep.
 */
export function createDeliveryProducer(
  connection: RedisConnection,
  options: {
    prefix: string;
    retry: RetryPolicy;
    timeoutMs: number;
    /** Makes a messaging producer span of each enqueue given a parent; none when undefined (tracing off). */
    tracer?: Tracer | undefined;
  },
): DeliveryProducer {
  const { tracer } = options;
  const queue = createDeliveryQueue(connection, options.prefix);
  const opts = deliveryJobOptions(options.retry);
  // Every job is placed by its target's backlog (createFairShare, below), so that no target's burst makes
  // another target's callbacks wait behind all of it.
  const priorities = createFairShare(connection, { prioritizedKey: queue.toKey('prioritized'), recordsKey: fairShareKey(queue) });
  const add = async (jobs: readonly DeliveryJobData[]): Promise<void> => {
    const priority = await priorities(jobs.map((data) => ({ jobId: data.deliveryId, targetId: data.targetId })));
    const entries = jobs.map((data, i) => ({ name: jobName(data), data, opts: { ...opts, jobId: data.deliveryId, priority: priority[i]! } }));
    // One job (a single event for one target, the commonest ingest) is added straight on the
    // connection: addBulk sends its jobs through an ioredis pipeline, an object that copies every
    // script of the connection and defines an accessor of its own, which made V8 keep what the
    // request allocated alive through young collections (docs/benchmarks.md).
    if (entries.length === 1) {
      await queue.add(entries[0]!.name, entries[0]!.data, entries[0]!.opts);
      return;
    }
    // Should a pipeline fail, the ones before it may have added their jobs: the caller leaves the
    // whole batch to the outbox, as after any failed add, and a job added twice is added once.
    const chunks: Array<Promise<unknown>> = [];
    for (let i = 0; i < entries.length; i += ADD_CHUNK_JOBS) chunks.push(queue.addBulk(entries.slice(i, i + ADD_CHUNK_JOBS)));
    await Promise.all(chunks);
  };
  // Fails at once while Redis is down (reconnecting), and after timeoutMs at most, a first
  // connect included (the Redis work may still finish).
  const bounded = async <T>(what: string, work: () => Promise<T>): Promise<T> =>
    withTimeout(
      (async () => {
        await firstConnect(connection);
        if (connection.status !== 'ready') throw new Error(`Redis is not connected (${connection.status})`);
        return work();
      })(),
      options.timeoutMs,
      `${what} took over ${options.timeoutMs} ms`,
    );
  return {
    queue,
    async enqueue(jobs, parent) {
      if (jobs.length === 0) return;
      // Two round trips for the whole batch (the priorities, then the jobs' pipelines, sent back to
      // back). The job id is the delivery id, so adding a delivery that is already queued (the
      // sweeper racing the API, a retried enqueue) is a no-op.
      if (tracer === undefined || parent === undefined) return bounded('enqueue', () => add(jobs));
      const span = startSpan(tracer, parent, `add ${DELIVERIES_QUEUE}`, SpanKind.PRODUCER, {
        [MESSAGING.system]: MESSAGING_SYSTEM_BULLMQ,
        [MESSAGING.operationType]: 'send',
        [MESSAGING.operationName]: 'add',
        [MESSAGING.destinationName]: DELIVERIES_QUEUE,
        ...(jobs.length === 1 ? { [MESSAGING.messageId]: jobs[0]!.deliveryId } : { [MESSAGING.batchMessageCount]: jobs.length }),
      });
      // Each job carries the enqueue span as its parent (the conventions' creation context).
      const traceparent = traceparentOf(contextWith(parent, span));
      try {
        await bounded('enqueue', () => add(traceparent === undefined ? jobs : jobs.map((job) => ({ ...job, traceparent }))));
        endSpan(span);
      } catch (error) {
        endSpan(span, errorTypeOf(error));
        throw error;
      }
    },
    async removeFinishedJobs(deliveryIds) {
      if (deliveryIds.length === 0) return new Map();
      return bounded('removing finished jobs', () => removeFinishedJobs(queue, deliveryIds));
    },
    async requeueDead(jobs) {
      if (jobs.length === 0) return new Set();
      return bounded('requeueing dead jobs', async () => {
        const slots = await removeFinishedJobs(
          queue,
          jobs.map((job) => job.deliveryId),
        );
        const dead = jobs.filter((job) => slots.get(job.deliveryId) === 'free');
        if (dead.length > 0) await add(dead);
        return new Set(dead.map((job) => job.deliveryId));
      });
    },
    async wake(deliveryIds) {
      if (deliveryIds.length > 0) await bounded('waking parked jobs', () => wakeParkedJobs(queue, deliveryIds));
    },
    close: () => queue.close(),
  };
}

/**
 * Moves these deliveries' jobs from the delayed set to the queue now, where they are delayed: a
 * job of an ordered target parked until its predecessor's final outcome (the worker's
 * object-order.ts). A job that is not delayed (waiting, running, gone) is left alone: it is on its
 * way already, or the reconciler gives its delivery a new one. A woken job keeps its priority, so
 * it goes before the jobs queued after it.
 */
export async function wakeParkedJobs(queue: DeliveryQueue, deliveryIds: readonly string[]): Promise<void> {
  await Promise.all(
    deliveryIds.map(async (id) => {
      const job = await queue.getJob(id);
      // BullMQ's promote checks the state in its script: a job that left the delayed set meanwhile is not moved.
      await job?.promote().catch((error: unknown) => {
        if (!(error instanceof Error && /not in the delayed state|Missing key/i.test(error.message))) throw error;
      });
    }),
  );
}

/**
 * The hash where fair scheduling keeps each target's place (createFairShare, below), beside the queue's own
 * keys; BullMQ's obliterate does not know it, so whoever removes a queue removes it too.
 */
export function fairShareKey(queue: DeliveryQueue): string {
  return queue.toKey('fair');
}

/** Whether a delivery id is free for a new job, or names a job that is still waiting, delayed or running. */
export type JobSlot = 'free' | 'queued';

/**
 * Step one of a replay. A delivery's job id is its id, and BullMQ ignores an add whose job id
 * exists, including a completed or failed job kept for the dashboard (JOBS_KEEP_*): so the
 * finished jobs of these deliveries are removed, after which `enqueue` adds new ones with the full
 * retry policy. Jobs still waiting, delayed or running stay (`queued`); they make the next attempt.
 *
 * Replays enqueue in a second step, after the deliveries are committed as pending: the worker
 * skips a job whose delivery it reads as succeeded, so the new job must not be visible earlier.
 */
async function removeFinishedJobs(queue: DeliveryQueue, deliveryIds: readonly string[]): Promise<Map<string, JobSlot>> {
  const states = await Promise.all(deliveryIds.map((id) => queue.getJobState(id)));
  // `unknown` is removed too: a job hash left without its state (a Redis that evicted or lost
  // part of the queue) would make BullMQ ignore the next add under that id.
  const removed = await Promise.all(
    deliveryIds.map((id, i) => (states[i] === 'completed' || states[i] === 'failed' || states[i] === 'unknown' ? queue.remove(id) : Promise.resolve(0))),
  );
  // `unknown`: no job (never enqueued, or removed by age). A finished job that could not be
  // removed was retried from the dashboard meanwhile and is running: queued.
  return new Map(deliveryIds.map((id, i) => [id, removed[i] === 1 ? 'free' : 'queued']));
}

/** A name that tells ops in the dashboard what the job is (the event, and whose target gets it), with no secret in it. */
function jobName(job: DeliveryRef): string {
  const owner = job.targetOwner === 'merchant' ? `merchant ${job.merchantId}` : `program ${job.programId}`;
  return `${job.eventId} -> ${owner} target ${job.targetId}`;
}

/**
 * Fair scheduling of deliveries across notification targets, with BullMQ's job priorities only.
 *
 * A plain FIFO queue makes one merchant's burst (20,000 events to one target) a wall that every
 * other merchant's next event waits behind. Instead, each delivery job gets a priority (BullMQ
 * serves the lowest first, and jobs of equal priority in the order they were added) that is its
 * position in its target's backlog, counted from the queue's current head. That is start-time fair
 * queueing: the k-th waiting job of every target shares priority `head + k`, so the workers take
 * one job of each backlogged target in turn, and a quiet target's new job goes to the front (just
 * behind the head) however long another target's backlog is.
 *
 * The tags are computed in Redis by one script per enqueued batch, atomic across every producer
 * (events-api processes, the sweepers and reconcilers of every worker):
 *   - `head` (the queue's virtual time) is the priority of the job at the front of BullMQ's
 *     prioritized set, or 0 when no job waits.
 *   - Per target, one hash (`<prefix>:deliveries:fair`, a field pair per target) holds the last
 *     tag the target got and the id of the job that got it. While that job still waits in the
 *     prioritized set the target has a backlog, and its new jobs go behind it: tags
 *     `max(head, last) + 1 …`, which keeps each target's own jobs in FIFO order. Once that job was
 *     taken, the target has nothing waiting and starts again at `head + 1`. So a target that sends
 *     steadily but is always served never drifts to the back: its tag counts not what it sent
 *     but what it still has waiting.
 *   - When no job waits at all, every record is stale: the hash is dropped and built afresh, so it
 *     holds at most the targets enqueued to since the queue last drained. Its expiry (refreshed by
 *     each enqueue) only clears it from a Redis whose queue is no longer used.
 *   - Tags are clamped to BullMQ's highest priority (2^21 - 1). `head` grows only while some job
 *     waits, and restarts from 0 whenever the queue drains, so it reaches that bound only under one
 *     unbroken backlog of about two million rounds; then the jobs over it share the highest
 *     priority and run in the order they were added (plain FIFO, still never lost).
 *
 * What this does not change: a job keeps its priority for its whole life. A retry (after BullMQ's
 * backoff, out of the delayed set; likewise a stalled job) comes back with the tag it got when first
 * enqueued, usually low, so it runs soon after its delay. It does not push other targets back: it
 * lowers `head`, and a quiet target's next job lands right behind it. What a failing target's retry
 * wave still takes is worker slots, which the per-target limit on callbacks in flight bounds. A replay, a requeue of a lost
 * job (reconciler) and the outbox sweeper go through the producer's enqueue, so they get fresh tags
 * by the same rule. Every job gets a priority (>= 1): BullMQ would run a job without one before all
 * prioritized jobs, which would let an old producer's jobs jump the queue.
 *
 * Races are harmless: a batch added by one producer between another's script and its addBulk only
 * shifts a few tags; an add that BullMQ ignores (the job id exists already) leaves a record naming
 * a job that may not wait, which at worst starts that target's next batch at `head + 1`.
 */

/** BullMQ's highest job priority (its PRIORITY_LIMIT, 2^21 - 1). */
export const MAX_PRIORITY = 2 ** 21 - 1;

/** How long the records live after the last enqueue (see above): a day. */
const FAIR_SHARE_RECORDS_TTL_SECONDS = 86_400;

// BullMQ's prioritized set scores a job `priority * 2^32 + insertion counter` (getPriorityScore.lua).
const TAGS_SCRIPT = `
local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local busy = #head > 0
local now = 0
if busy then now = math.floor(tonumber(head[2]) / 4294967296) else redis.call('DEL', KEYS[2]) end
local max = tonumber(ARGV[2])
local bases = {}
for i = 3, #ARGV, 3 do
  local target = ARGV[i]
  local base = now
  if busy then
    local last = redis.call('HMGET', KEYS[2], target, target .. ':job')
    if last[1] and last[2] and redis.call('ZSCORE', KEYS[1], last[2]) then
      base = math.max(now, tonumber(last[1]))
    end
  end
  redis.call('HSET', KEYS[2], target, math.min(base + tonumber(ARGV[i + 1]), max), target .. ':job', ARGV[i + 2])
  bases[#bases + 1] = base
end
redis.call('EXPIRE', KEYS[2], ARGV[1])
return bases
`;

const COMMAND = 'heraldFairShareTags';

type TagsCommand = (prioritizedKey: string, recordsKey: string, ...args: Array<string | number>) => Promise<number[]>;

/** What fair scheduling needs to know of a job: its id and its target. */
export interface FairShareJob {
  readonly jobId: string;
  readonly targetId: string;
}

export interface FairShareOptions {
  /** BullMQ's prioritized set of the queue (`queue.keys.prioritized`). */
  prioritizedKey: string;
  /** The hash of the per-target records (`queue.toKey('fair')`, i.e. `<prefix>:deliveries:fair`). */
  recordsKey: string;
  /** Lifetime of the records after the last enqueue, in seconds. */
  recordsTtlSeconds?: number;
}

/**
 * Returns a function that gives each job of a batch (in the order given) its BullMQ priority, by
 * the rule above. One Redis round trip per batch.
 */
export function createFairShare(redis: RedisConnection, options: FairShareOptions): (jobs: readonly FairShareJob[]) => Promise<number[]> {
  const ttl = options.recordsTtlSeconds ?? FAIR_SHARE_RECORDS_TTL_SECONDS;
  if (!(Number.isInteger(ttl) && ttl >= 1)) throw new RangeError('recordsTtlSeconds must be a whole number of seconds, at least 1');
  // EVALSHA under the hood, the script loaded once per connection.
  if (!(COMMAND in redis)) redis.defineCommand(COMMAND, { numberOfKeys: 2, lua: TAGS_SCRIPT });
  const tags = (redis as unknown as Record<typeof COMMAND, TagsCommand>)[COMMAND].bind(redis);

  return async (jobs) => {
    if (jobs.length === 0) return [];
    // Per target: how many jobs of the batch, and the last one (the batch's order is kept).
    const targets = new Map<string, { count: number; lastJobId: string }>();
    for (const job of jobs) {
      const entry = targets.get(job.targetId);
      if (entry) {
        entry.count += 1;
        entry.lastJobId = job.jobId;
      } else targets.set(job.targetId, { count: 1, lastJobId: job.jobId });
    }
    const args = [...targets].flatMap(([targetId, { count, lastJobId }]) => [targetId, count, lastJobId]);
    const bases = await tags(options.prioritizedKey, options.recordsKey, ttl, MAX_PRIORITY, ...args);
    const next = new Map([...targets.keys()].map((targetId, i) => [targetId, Number(bases[i])]));
    return jobs.map((job) => {
      const tag = next.get(job.targetId)! + 1;
      next.set(job.targetId, tag);
      return Math.min(tag, MAX_PRIORITY);
    });
  };
}
