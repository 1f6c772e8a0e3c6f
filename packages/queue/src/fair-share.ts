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
import type { RedisConnection } from './redis';

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
