import { SLOT_TIME_DECAY } from './keys';

/**
 * The gate's Lua script. It runs atomically in Redis, so workers in any number of processes see
 * one consistent count of slots taken and one breaker per target. It takes a batch of releases
 * (jobs that finished), leases (a worker's share of a target's slots, renewed) and admissions
 * (jobs about to start one by one): each worker gathers what it has to send meanwhile, so the
 * gate costs one round trip per batch, not one per callback. Releases run first, so a slot freed
 * in a batch is free for the leases and admissions of the same batch. Within the script, each
 * target's breaker hash is read once and written back once, and its slots taken and freed,
 * deferrals ended and successes counted go to Redis as one command each, whatever the number of
 * its jobs in the batch. The answers are those of the same calls sent one per call in the same
 * order (tested). Key names: see keys.ts. Randomness (jitter) is left to the caller.
 *
 * Every key a script touches is passed in KEYS, never built inside it: a Redis Cluster routes a
 * script by its keys and refuses one whose keys are in several hash slots. All of them start with
 * the hash-tagged key prefix on a cluster (`{herald}:gate:…`), so one batch, whatever its targets,
 * is one slot.
 */

/**
 * KEYS: breakers, then (inflight, deferred, breaker, window, leased, wanted) of each distinct
 * target of the batch, once however many of its jobs the batch holds. ARGV: now, number of
 * releases, lease ms, max in flight (0: no limit), min delay ms, max delay ms, deferred grace ms,
 * consecutive failures that open (0: off), failure ratio x 1000 (0: off), window ms, min requests
 * in the window, open ms, longest open ms, stale breaker ms, number of leases, lease ttl ms, silent
 * lease ms; then (target's position among the targets from 1, target id, job id, verdict, duration
 * ms, times) per release; then (target's position, holder, slots to keep, slots wanted, start of
 * its oldest job in a leased slot or 0, number of returned jobs, their ids) per lease, a returned
 * job being one the gate deferred that went into a leased slot since the holder's last renewal
 * (no longer deferred); then (target's position, job id) per admission.
 * Releases run first, then leases, then admissions. Answers one number per release, two per lease
 * (the slots the holder now holds; 1 if the target is free for leases, 2 if it is and contended,
 * else 0), then three per admission.
 *
 * A lease is a worker's share of a target's slots, a field of the target's leased hash, which
 * count toward the limit like the jobs in flight. It runs out after its ttl, seconds rather than
 * a job slot's minutes: the worker renews it every few hundred ms while it holds any slot, and the
 * slots of a worker that died free soon. The worker lets its jobs into them without a round trip,
 * while the target is free (its breaker closed). It grows up to the slots the worker wants, as far
 * as the limit leaves room; when the workers together want more than the limit, each gets an equal
 * share (more if the others want less), and a worker over its share gives slots back at its next
 * renewal (the worker's jobs beyond its lease wait briefly for one of its slots, or are deferred,
 * worker.ts). While the breaker is not closed the lease grants nothing more and its answer says so:
 * the worker's next jobs are let in one by one, and a breaker another worker opened stops this
 * worker's jobs at its next renewal. The age of the oldest job in a leased slot at the lease's last
 * renewal counts, like the age of the oldest job in flight, in how long a slot is held (the busy
 * delay); the slots of a lease whose worker stopped renewing it (silent) count as freeing at its
 * deadline. A release of a job that ran in a leased slot only brings its verdict (its job id is
 * not in the in-flight set), and the worker sends a run of such successes as one release of the
 * same verdict `times` times in a row.
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
local leases = tonumber(ARGV[15])
local leaseTtl = tonumber(ARGV[16])
local silentMs = tonumber(ARGV[17])
local breakers = KEYS[1]
local bucketMs = math.max(1, math.floor(windowMs / 10))
local bucket = math.floor(now / bucketMs)
local out = {}

-- Runs command(key, ...list) in chunks, below Lua's limit on unpacked arguments.
local function callWithList(command, key, list)
  local total = 0
  for i = 1, #list, 500 do
    local chunk = {}
    for j = i, math.min(i + 499, #list) do chunk[#chunk + 1] = list[j] end
    total = total + redis.call(command, key, unpack(chunk))
  end
  return total
end

-- Each target's state, read at its first use in the batch and written back once at the end.
local FIELDS = {'reopenAt', 'openMs', 'probe', 'probeUntil', 'avgMs', 'openCount', 'consecutive', 'openedAt'}
local targets = {}
local function stateOf(position)
  local t = tonumber(position)
  local s = targets[t]
  if s then return s end
  local k = 6 * t - 4
  s = { inflight = KEYS[k], deferred = KEYS[k + 1], breaker = KEYS[k + 2], window = KEYS[k + 3], leased = KEYS[k + 4], wanted = KEYS[k + 5], leases = false, f = {}, changed = {}, deleted = false, ttl = false,
        released = {}, adds = {}, undeferred = {}, card = false, swept = false, successes = 0 }
  local values = redis.call('HMGET', s.breaker, unpack(FIELDS))
  for i, name in ipairs(FIELDS) do s.f[name] = values[i] end
  targets[t] = s
  return s
end
local function set(s, name, value)
  s.f[name] = value
  s.changed[name] = true
end
local function deleteBreaker(s)
  for _, name in ipairs(FIELDS) do s.f[name] = false end
  s.changed = {}
  s.deleted = true
  s.ttl = false
end

local function clamp(value)
  if value < minDelay then return minDelay end
  if value > maxDelay then return maxDelay end
  return math.floor(value)
end

-- Counts k requests (and failed of them failures) in the current bucket of the ratio's window.
local function count(s, k, failed)
  local first = redis.call('HINCRBY', s.window, 'n:' .. bucket, k) == k
  if failed > 0 then redis.call('HINCRBY', s.window, 'f:' .. bucket, failed) end
  if first then
    redis.call('PEXPIRE', s.window, windowMs)
    for _, field in ipairs(redis.call('HKEYS', s.window)) do
      if tonumber(string.sub(field, 3)) <= bucket - 10 then redis.call('HDEL', s.window, field) end
    end
  end
end
-- Successes only add to the window's request count: counted once per target and batch.
local function countSuccesses(s)
  if s.successes > 0 then count(s, s.successes, 0) end
  s.successes = 0
end
-- A failure counts at once, and answers the window's totals.
local function countFailure(s)
  countSuccesses(s)
  count(s, 1, 1)
  local n, f = 0, 0
  local fields = redis.call('HGETALL', s.window)
  for j = 1, #fields, 2 do
    if tonumber(string.sub(fields[j], 3)) > bucket - 10 then
      if string.sub(fields[j], 1, 1) == 'n' then n = n + tonumber(fields[j + 1]) else f = f + tonumber(fields[j + 1]) end
    end
  end
  return n, f
end

local function open(target, s, openCount)
  local openMs = math.min(openBase * 2 ^ openCount, math.max(openBase, openMax))
  set(s, 'openedAt', now)
  set(s, 'reopenAt', now + openMs)
  set(s, 'openMs', openMs)
  set(s, 'openCount', openCount)
  set(s, 'consecutive', 0)
  set(s, 'probe', false)
  set(s, 'probeUntil', false)
  s.ttl = openMs + stale
  s.successes = 0
  redis.call('DEL', s.window)
  redis.call('ZREMRANGEBYSCORE', breakers, '-inf', now - stale)
  redis.call('ZADD', breakers, now + openMs, target)
end

local function release(s, target, job, verdict, duration, times)
  local change = 0
  s.released[#s.released + 1] = job
  local reopenAt, probe = s.f.reopenAt, s.f.probe
  if verdict ~= 'neutral' then
    local avg = tonumber(s.f.avgMs)
    -- keys.ts nextSlotTime, applied once per job of the run (successes reported with one duration).
    if avg then avg = duration + (avg - duration) * ${SLOT_TIME_DECAY} ^ times else avg = duration end
    set(s, 'avgMs', math.floor(avg))
  end

  if reopenAt then
    if probe == job then
      if verdict == 'success' or verdict == 'answer' then
        deleteBreaker(s)
        redis.call('ZREM', breakers, target)
        change = 2
      elseif verdict == 'neutral' then
        set(s, 'probe', false)
        set(s, 'probeUntil', false)
      else
        open(target, s, (tonumber(s.f.openCount) or 0) + 1)
        change = 3
      end
    end
  elseif verdict == 'failure' then
    local consecutive = (tonumber(s.f.consecutive) or 0) + 1
    set(s, 'consecutive', consecutive)
    local n, f = countFailure(s)
    if (failuresToOpen > 0 and consecutive >= failuresToOpen) or (ratio > 0 and n >= minRequests and f >= ratio * n) then
      open(target, s, 0)
      change = 1
    else
      s.ttl = windowMs + stale
    end
  elseif verdict ~= 'neutral' then
    if (tonumber(s.f.consecutive) or 0) ~= 0 then set(s, 'consecutive', 0) end
    s.successes = s.successes + times
    s.ttl = windowMs + stale
  end
  return change
end

-- Expired leases and forgotten deferrals are cleared once per target and batch, not per job.
local function sweep(s)
  if s.swept then return end
  s.swept = true
  redis.call('ZREMRANGEBYSCORE', s.inflight, '-inf', now)
  redis.call('ZREMRANGEBYSCORE', s.deferred, '-inf', now - grace)
end

-- Whether an entry renewed until deadline was last renewed more than silentMs ago: its worker
-- stopped renewing (it died, lost Redis or is stalled), where a worker renews a lease in use every
-- few hundred ms.
local function silent(deadline)
  return deadline - leaseTtl < now - silentMs
end

-- The workers' leases of the target (holder -> 'slots:deadline:since') and the slots each asked for
-- (holder -> 'wanted:deadline'), read once per batch: how many slots each holds and wants, in all,
-- and the age of the oldest job in any of them when its lease was last renewed (what its holder
-- vouched for: a worker that died does not make it grow). A holder that recorded no want (a worker
-- of an earlier version) wants what it holds. Entries whose deadline passed are dropped. A silent
-- lease's slots stay taken until its deadline, and then free all at once (silentUntil, the
-- earliest): its holder wants nothing more and takes no part in the shares, and its oldest job does
-- not count in how long a slot is held.
local function leasedSlots(s)
  if s.leases then return s.leases end
  local leases = { total = 0, wanted = 0, holders = 0, oldestAge = 0, silent = 0, silentUntil = false, byHolder = {}, wantedBy = {} }
  local fields = redis.call('HGETALL', s.wanted)
  for j = 1, #fields, 2 do
    local wanted, deadline = string.match(fields[j + 1], '^(%d+):(%d+)$')
    deadline = tonumber(deadline)
    if deadline <= now then
      redis.call('HDEL', s.wanted, fields[j])
    elseif not silent(deadline) then
      leases.wantedBy[fields[j]] = tonumber(wanted)
      leases.wanted = leases.wanted + tonumber(wanted)
      leases.holders = leases.holders + 1
    end
  end
  fields = redis.call('HGETALL', s.leased)
  for j = 1, #fields, 2 do
    local slots, deadline, since = string.match(fields[j + 1], '^(%d+):(%d+):(%d+)$')
    slots, deadline, since = tonumber(slots), tonumber(deadline), tonumber(since)
    if deadline <= now then
      redis.call('HDEL', s.leased, fields[j])
    else
      leases.byHolder[fields[j]] = slots
      leases.total = leases.total + slots
      if silent(deadline) then
        leases.silent = leases.silent + slots
        if not leases.silentUntil or deadline < leases.silentUntil then leases.silentUntil = deadline end
      else
        if not leases.wantedBy[fields[j]] then
          leases.wantedBy[fields[j]] = slots
          leases.wanted = leases.wanted + slots
          leases.holders = leases.holders + 1
        end
        if since > 0 then leases.oldestAge = math.max(leases.oldestAge, deadline - leaseTtl - since) end
      end
    end
  end
  s.leases = leases
  return leases
end

-- Writes the slots let in so far in this batch (score, job pairs) to the in-flight set.
local function addSlots(s)
  if #s.adds == 0 then return end
  local added = callWithList('ZADD', s.inflight, s.adds)
  redis.call('PEXPIRE', s.inflight, lease)
  if s.card then s.card = s.card + added end
  s.adds = {}
end

-- Whether the target is at its limit for this job. Counted in Lua while the batch stays under
-- the limit; at the limit, exactly: the batch's slots written, and the job's own slot (a job let
-- in again after its worker died) not held against it.
local function full(s, job)
  if not s.card then s.card = redis.call('ZCARD', s.inflight) + leasedSlots(s).total end
  if s.card + #s.adds / 2 < limit then return false end
  addSlots(s)
  return s.card >= limit and not redis.call('ZSCORE', s.inflight, job)
end

local function admit(s, job)
  sweep(s)
  local reopenAt = tonumber(s.f.reopenAt)
  local avg = tonumber(s.f.avgMs) or 0
  local code, x, y = 1, 0, 0

  if reopenAt and now < reopenAt then
    -- Open: nobody goes in before it half-opens; come back spread over the next open period.
    code, x, y = 3, reopenAt - now, tonumber(s.f.openMs) or minDelay
  elseif reopenAt and s.f.probe and s.f.probe ~= job and (tonumber(s.f.probeUntil) or 0) > now then
    -- Half-open with a probe in flight: one at a time.
    code, x, y = 3, 0, 2 * clamp(math.max(avg, minDelay))
  elseif limit > 0 and full(s, job) then
    local oldest = redis.call('ZRANGE', s.inflight, 0, 0, 'WITHSCORES')
    local held = avg
    if oldest[2] then held = math.max(held, now - (tonumber(oldest[2]) - lease)) end
    local leases = leasedSlots(s)
    held = math.max(held, leases.oldestAge)
    if #s.undeferred > 0 then
      callWithList('ZREM', s.deferred, s.undeferred)
      s.undeferred = {}
    end
    local waiting = redis.call('ZCARD', s.deferred) + 1
    local delay = waiting / limit * held
    if leases.silent > 0 then
      -- The silent leases' slots free only at their deadline: the job's turn comes through the
      -- other slots, or after that.
      local afterSilent = leases.silentUntil - now + delay
      local others = limit - leases.silent
      delay = afterSilent
      if others > 0 then delay = math.min(waiting / others * held, afterSilent) end
    end
    code, x = 2, clamp(delay)
  else
    if reopenAt then
      x = 1
      set(s, 'probe', job)
      set(s, 'probeUntil', now + lease)
    end
    s.adds[#s.adds + 1] = now + lease
    s.adds[#s.adds + 1] = job
    s.undeferred[#s.undeferred + 1] = job
  end

  if code ~= 1 then
    local back = now + x + y
    if code == 2 then back = now + math.floor(x * 1.5) end
    redis.call('ZADD', s.deferred, back, job)
    redis.call('PEXPIRE', s.deferred, back - now + grace)
  end
  return code, x, y
end

-- A worker's lease: slots it holds and hands to its own jobs without asking again. It keeps keep
-- slots (its jobs run in them) whatever happens. While the target is free (its breaker closed) it
-- gets up to want, as far as the limit leaves room and within its share: when the workers want
-- more slots than the limit (less those of jobs let in one by one), each gets an equal share, or
-- more if the others want less. A worker over its share gives back what it does not use at its
-- next renewal; meanwhile the others' wants are recorded, with their slots. Else (breaker not
-- closed) its jobs are let in one by one. since: when its oldest job in them started (0: none).
-- Answers the slots granted, and 0 if the target is not free, 1 if it is, 2 if it is and the
-- workers want more than the limit (each is to keep no more slots than its jobs use).
local function grant(s, holder, keep, want, since)
  sweep(s)
  local leases = leasedSlots(s)
  local mine = leases.byHolder[holder] or 0
  local granted, free = keep, 0
  if not s.f.reopenAt then
    granted, free = math.max(keep, want), 1
    if limit > 0 then
      local capacity = limit - redis.call('ZCARD', s.inflight)
      local room = capacity - (leases.total - mine)
      local holders = leases.holders + (leases.wantedBy[holder] and 0 or 1)
      local othersWant = leases.wanted - (leases.wantedBy[holder] or 0)
      local share = math.max(math.floor(capacity / holders), capacity - othersWant)
      granted = math.max(keep, math.min(want, room, share))
      if othersWant + want > capacity then free = 2 end
    end
  end
  if granted > 0 then
    redis.call('HSET', s.leased, holder, granted .. ':' .. (now + leaseTtl) .. ':' .. since)
    if redis.call('PTTL', s.leased) < leaseTtl then redis.call('PEXPIRE', s.leased, leaseTtl) end
  elseif mine > 0 then
    redis.call('HDEL', s.leased, holder)
  end
  if want > 0 then
    redis.call('HSET', s.wanted, holder, want .. ':' .. (now + leaseTtl))
    if redis.call('PTTL', s.wanted) < leaseTtl then redis.call('PEXPIRE', s.wanted, leaseTtl) end
  elseif leases.wantedBy[holder] then
    redis.call('HDEL', s.wanted, holder)
  end
  -- Read again at the next use in this batch.
  s.leases = false
  s.card = false
  return granted, free
end

for i = 18, 17 + 6 * releases, 6 do
  out[#out + 1] = release(stateOf(ARGV[i]), ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], tonumber(ARGV[i + 4]), tonumber(ARGV[i + 5]))
end
-- The released slots are free before any lease or admission of the batch.
local targetCount = (#KEYS - 1) / 6
for t = 1, targetCount do
  local s = targets[t]
  if s and #s.released > 0 then callWithList('ZREM', s.inflight, s.released) end
end
local firstEntry = 18 + 6 * releases
for _ = 1, leases do
  local i = firstEntry
  local s = stateOf(ARGV[i])
  local returned = tonumber(ARGV[i + 5])
  for j = i + 6, i + 5 + returned do s.undeferred[#s.undeferred + 1] = ARGV[j] end
  local granted, free = grant(s, ARGV[i + 1], tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3]), tonumber(ARGV[i + 4]))
  out[#out + 1] = granted
  out[#out + 1] = free
  firstEntry = i + 6 + returned
end
for i = firstEntry, #ARGV, 2 do
  local code, x, y = admit(stateOf(ARGV[i]), ARGV[i + 1])
  out[#out + 1] = code
  out[#out + 1] = x
  out[#out + 1] = y
end

for t = 1, targetCount do
  local s = targets[t]
  if s then
    addSlots(s)
    if #s.undeferred > 0 then callWithList('ZREM', s.deferred, s.undeferred) end
    countSuccesses(s)
    if s.deleted then redis.call('DEL', s.breaker) end
    local sets, unsets = {}, {}
    for _, name in ipairs(FIELDS) do
      if s.changed[name] then
        if s.f[name] then
          sets[#sets + 1] = name
          sets[#sets + 1] = s.f[name]
        elseif not s.deleted then
          unsets[#unsets + 1] = name
        end
      end
    end
    if #sets > 0 then redis.call('HSET', s.breaker, unpack(sets)) end
    if #unsets > 0 then redis.call('HDEL', s.breaker, unpack(unsets)) end
    if s.ttl then redis.call('PEXPIRE', s.breaker, s.ttl) end
  end
end
return out
`;
