/**
 * The gate's Lua script. It runs atomically in Redis, so workers in any number of processes see
 * one consistent in-flight count and breaker per target. It takes a batch of releases (jobs that
 * finished) and admissions (jobs about to start): the worker gathers the jobs it finishes and
 * starts at once, and in the steady state each job that ends is followed at once by the next one,
 * so the gate costs one round trip per batch of both, not two per callback. Releases run first,
 * so a slot freed in a batch is free for the admissions of the same batch. Key names: see
 * keys.ts. Randomness (jitter) is left to the caller.
 *
 * Every key a script touches is passed in KEYS, never built inside it: a Redis Cluster routes a
 * script by its keys and refuses one whose keys are in several hash slots. All of them start with
 * the hash-tagged key prefix on a cluster (`{herald}:gate:…`), so one batch, whatever its targets,
 * is one slot.
 */

/**
 * KEYS: breakers, then (inflight, deferred, breaker, window) of each distinct target of the batch,
 * once however many of its jobs the batch holds. ARGV: now, number of releases, lease ms, max
 * in flight (0: no limit), min delay ms, max delay ms, deferred grace ms, consecutive failures that
 * open (0: off), failure ratio x 1000 (0: off), window ms, min requests in the window, open ms,
 * longest open ms, stale breaker ms; then (target's position among the targets from 1, target id,
 * job id, verdict, duration ms) per release; then (target's position, job id) per admission.
 * Answers one number per release, then three per admission.
 *
 * A release answers 0 no change, 1 the breaker opened, 2 it closed, 3 it re-opened. Verdicts:
 * `success` (HTTP 200), `failure` (timeout, refused or reset connection, TLS: the kinds that hold
 * slots), `answer` (any other HTTP answer), `neutral` (no POST was made, or Herald itself failed).
 * Closed: a failure counts toward the consecutive failures and the window's ratio; a success or an
 * answer ends the run of failures. Open or half-open: only the probe's verdict counts: any HTTP
 * answer closes the breaker (a 200, or another status: an endpoint that answers holds no worker
 * slot, and its non-200 answers are the retry policy's business), a failure re-opens it for twice
 * as long (up to the longest open time), a neutral end frees the probe for the next job.
 *
 * An admission answers:
 * - 1, probe (0/1), 0: let in; it holds a slot until released or until its lease runs out;
 * - 2, nominal delay, 0: `target_busy`, come back after about the nominal delay;
 * - 3, earliest, spread: `breaker_open`, come back between earliest and earliest + spread ms.
 * A busy target's delay is how long the jobs deferred before it should take to get through its
 * slots (deferred / limit x how long a job holds a slot, that being the longer of the average
 * and the age of the oldest job in flight), within [min, max] delay: re-checks then come about as
 * fast as slots free up, whatever the backlog, instead of every waiting job polling.
 */
export const GATE_SCRIPT = `
local now = tonumber(ARGV[1])
local releases = tonumber(ARGV[2])
local lease = tonumber(ARGV[3])
local limit = tonumber(ARGV[4])
local minDelay = tonumber(ARGV[5])
local maxDelay = tonumber(ARGV[6])
local grace = tonumber(ARGV[7])
local failuresToOpen = tonumber(ARGV[8])
local ratio = tonumber(ARGV[9]) / 1000
local windowMs = tonumber(ARGV[10])
local minRequests = tonumber(ARGV[11])
local openBase = tonumber(ARGV[12])
local openMax = tonumber(ARGV[13])
local stale = tonumber(ARGV[14])
local breakers = KEYS[1]
local bucketMs = math.max(1, math.floor(windowMs / 10))
local out = {}

local function clamp(value)
  if value < minDelay then return minDelay end
  if value > maxDelay then return maxDelay end
  return math.floor(value)
end

local function open(target, breaker, window, openCount)
  local openMs = math.min(openBase * 2 ^ openCount, math.max(openBase, openMax))
  redis.call('HSET', breaker, 'openedAt', now, 'reopenAt', now + openMs, 'openMs', openMs, 'openCount', openCount, 'consecutive', 0)
  redis.call('HDEL', breaker, 'probe', 'probeUntil')
  redis.call('PEXPIRE', breaker, openMs + stale)
  redis.call('DEL', window)
  redis.call('ZREMRANGEBYSCORE', breakers, '-inf', now - stale)
  redis.call('ZADD', breakers, now + openMs, target)
end

-- Counts one request (and one failure) in the current bucket; answers the window's totals.
local function count(window, failed)
  local bucket = math.floor(now / bucketMs)
  local first = redis.call('HINCRBY', window, 'n:' .. bucket, 1) == 1
  if failed then redis.call('HINCRBY', window, 'f:' .. bucket, 1) end
  if first then
    redis.call('PEXPIRE', window, windowMs)
    for _, field in ipairs(redis.call('HKEYS', window)) do
      if tonumber(string.sub(field, 3)) <= bucket - 10 then redis.call('HDEL', window, field) end
    end
  end
  if not failed then return 0, 0 end
  local n, f = 0, 0
  local fields = redis.call('HGETALL', window)
  for j = 1, #fields, 2 do
    if tonumber(string.sub(fields[j], 3)) > bucket - 10 then
      if string.sub(fields[j], 1, 1) == 'n' then n = n + tonumber(fields[j + 1]) else f = f + tonumber(fields[j + 1]) end
    end
  end
  return n, f
end

local function release(target, job, verdict, duration, inflight, breaker, window)
  local change = 0
  redis.call('ZREM', inflight, job)
  local b = redis.call('HMGET', breaker, 'reopenAt', 'probe', 'openCount', 'consecutive', 'avgMs')
  if verdict ~= 'neutral' then
    local avg = tonumber(b[5])
    if avg then avg = avg + (duration - avg) * 0.2 else avg = duration end
    redis.call('HSET', breaker, 'avgMs', math.floor(avg))
  end

  if b[1] then
    if b[2] == job then
      if verdict == 'success' or verdict == 'answer' then
        redis.call('DEL', breaker)
        redis.call('ZREM', breakers, target)
        change = 2
      elseif verdict == 'neutral' then
        redis.call('HDEL', breaker, 'probe', 'probeUntil')
      else
        open(target, breaker, window, (tonumber(b[3]) or 0) + 1)
        change = 3
      end
    end
  elseif verdict == 'failure' then
    local consecutive = redis.call('HINCRBY', breaker, 'consecutive', 1)
    local n, f = count(window, true)
    if (failuresToOpen > 0 and consecutive >= failuresToOpen) or (ratio > 0 and n >= minRequests and f >= ratio * n) then
      open(target, breaker, window, 0)
      change = 1
    else
      redis.call('PEXPIRE', breaker, windowMs + stale)
    end
  elseif verdict ~= 'neutral' then
    if (tonumber(b[4]) or 0) ~= 0 then redis.call('HSET', breaker, 'consecutive', 0) end
    count(window, false)
    redis.call('PEXPIRE', breaker, windowMs + stale)
  end
  return change
end

-- Expired leases and forgotten deferrals are cleared once per target and batch, not per job.
local swept = {}
local function sweep(inflight, deferred)
  if swept[inflight] then return end
  swept[inflight] = true
  redis.call('ZREMRANGEBYSCORE', inflight, '-inf', now)
  redis.call('ZREMRANGEBYSCORE', deferred, '-inf', now - grace)
end

local function admit(job, inflight, deferred, breaker)
  sweep(inflight, deferred)
  local b = redis.call('HMGET', breaker, 'reopenAt', 'openMs', 'probe', 'probeUntil', 'avgMs')
  local reopenAt = tonumber(b[1])
  local avg = tonumber(b[5]) or 0
  local code, x, y = 1, 0, 0

  if reopenAt and now < reopenAt then
    -- Open: nobody goes in before it half-opens; come back spread over the next open period.
    code, x, y = 3, reopenAt - now, tonumber(b[2]) or minDelay
  elseif reopenAt and b[3] and b[3] ~= job and (tonumber(b[4]) or 0) > now then
    -- Half-open with a probe in flight: one at a time.
    code, x, y = 3, 0, 2 * clamp(math.max(avg, minDelay))
  else
    local mine = redis.call('ZSCORE', inflight, job)
    if not mine and limit > 0 and redis.call('ZCARD', inflight) >= limit then
      local oldest = redis.call('ZRANGE', inflight, 0, 0, 'WITHSCORES')
      local held = avg
      if oldest[2] then held = math.max(held, now - (tonumber(oldest[2]) - lease)) end
      local waiting = redis.call('ZCARD', deferred) + 1
      code, x = 2, clamp(waiting / limit * held)
    else
      if reopenAt then
        x = 1
        redis.call('HSET', breaker, 'probe', job, 'probeUntil', now + lease)
      end
      redis.call('ZADD', inflight, now + lease, job)
      redis.call('PEXPIRE', inflight, lease)
      redis.call('ZREM', deferred, job)
    end
  end

  if code ~= 1 then
    local back = now + x + y
    if code == 2 then back = now + math.floor(x * 1.5) end
    redis.call('ZADD', deferred, back, job)
    redis.call('PEXPIRE', deferred, back - now + grace)
  end
  return code, x, y
end

-- The keys of the target at position t: inflight, deferred, breaker, window.
local function targetKeys(t)
  local k = 4 * tonumber(t) - 2
  return KEYS[k], KEYS[k + 1], KEYS[k + 2], KEYS[k + 3]
end

for i = 15, 14 + 5 * releases, 5 do
  local inflight, _, breaker, window = targetKeys(ARGV[i])
  out[#out + 1] = release(ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], tonumber(ARGV[i + 4]), inflight, breaker, window)
end
for i = 15 + 5 * releases, #ARGV, 2 do
  local inflight, deferred, breaker = targetKeys(ARGV[i])
  local code, x, y = admit(ARGV[i + 1], inflight, deferred, breaker)
  out[#out + 1] = code
  out[#out + 1] = x
  out[#out + 1] = y
end
return out
`;
