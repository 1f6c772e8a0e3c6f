-- The target gate's one operation, `settle` (target-gate.ts runs it as the command heraldGate).
-- It runs atomically in Redis, so workers in any number of processes see one consistent count of
-- slots taken and one breaker per target. It takes a batch of releases
-- (jobs that finished), leases (a worker's share of a target's slots, renewed) and admissions
-- (jobs about to start one by one): each worker gathers what it has to send meanwhile, so the
-- gate costs one round trip per batch, not one per callback. Releases run first, so a slot freed
-- in a batch is free for the leases and admissions of the same batch. Within the script, each
-- target's breaker hash is read once and written back once, and its slots taken and freed,
-- deferrals ended and successes counted go to Redis as one command each, whatever the number of
-- its jobs in the batch. The answers are those of the same calls sent one per call in the same
-- order (tested). Key names: see keys.ts. Randomness (jitter) is left to the caller.
--
-- Every key a script touches is passed in KEYS, never built inside it: a Redis Cluster routes a
-- script by its keys and refuses one whose keys are in several hash slots. All of them start with
-- the hash-tagged key prefix on a cluster (`{herald}:gate:…`), so one batch, whatever its targets,
-- is one slot.
--
-- KEYS (every key the script touches, so that a cluster can route it; names: keys.ts):
--   KEYS[1]            breakers   <prefix>:gate:breakers, the breakers that are not closed
--   then, for each distinct target of the batch (once however many of its jobs the batch holds),
--   six keys, the target at position t (from 1) starting at KEYS[6t - 4]:
--                      inflight, deferred, breaker, window, leased, wanted
--
-- ARGV:
--   ARGV[1]   now              the caller's clock, ms
--   ARGV[2]   releases         number of releases in the batch
--   ARGV[3]   lease            how long a job let in one by one holds its slot at most, ms
--   ARGV[4]   (unused: each target's limit comes from ARGV[18…], below)
--   ARGV[5]   minDelay         shortest nominal delay of a busy target's deferral, ms
--   ARGV[6]   maxDelay         longest one, ms
--   ARGV[7]   grace            how long a deferred job not seen again still counts as deferred, ms
--   ARGV[8]   failuresToOpen   consecutive failures that open the breaker; 0: rule off
--   ARGV[9]   ratio            failure ratio that opens it, x 1000; 0: rule off
--   ARGV[10]  windowMs         the ratio's sliding window, ms
--   ARGV[11]  minRequests      fewest requests in the window before the ratio counts
--   ARGV[12]  openBase         how long the breaker stays open the first time, ms
--   ARGV[13]  openMax          longest open time the doubling reaches, ms
--   ARGV[14]  stale            how long a breaker left half-open with no probe is kept, ms
--   ARGV[15]  leases           number of lease requests in the batch
--   ARGV[16]  leaseTtl         how long a lease's slots stay taken unless renewed, ms
--   ARGV[17]  silentMs         a lease not renewed for this long is silent (its worker is gone), ms
--   then, from ARGV[18], two per distinct target of the batch, in the order of its keys:
--             limit            most slots of that target taken at once (its delivery policy, or
--                              TARGET_MAX_IN_FLIGHT); 0: no limit
--             rate             most admissions of that target per second (its delivery policy's
--                              maxRatePerSecond, may be fractional); 0: no rate limit
--   then per release (7 each):
--     target's position, target id, job id, verdict, duration ms, times (jobs in a row ending so),
--     pause ms (the receiver's Retry-After on a 429 or 503, capped by the worker; 0: none)
--   then per lease (6 + returned each):
--     target's position, holder, slots to keep, slots wanted, start of its oldest job in a leased
--     slot or 0, number of returned jobs, their ids (a returned job is one the gate deferred that
--     went into a leased slot since the holder's last renewal: no longer deferred)
--   then per admission (2 each): target's position, job id
--
-- Releases run first, then leases, then admissions. Answers one number per release, two per lease
-- (the slots the holder now holds; 1 if the target is free for leases, 2 if it is and contended,
-- else 0), then three per admission.
--
-- A lease is a worker's share of a target's slots, a field of the target's leased hash, which
-- count toward the limit like the jobs in flight. It runs out after its ttl, seconds rather than
-- a job slot's minutes: the worker renews it every few hundred ms while it holds any slot, and the
-- slots of a worker that died free soon. The worker lets its jobs into them without a round trip,
-- while the target is free (its breaker closed). It grows up to the slots the worker wants, as far
-- as the limit leaves room; when the workers together want more than the limit, each gets an equal
-- share (more if the others want less), and a worker over its share gives slots back at its next
-- renewal (the worker's jobs beyond its lease wait briefly for one of its slots, or are deferred,
-- worker-gate.ts). While the breaker is not closed the lease grants nothing more and its answer
-- says so: the worker's next jobs are let in one by one, and a breaker another worker opened
-- stops this worker's jobs at its next renewal. The age of the oldest job in a leased slot at the lease's last
-- renewal counts, like the age of the oldest job in flight, in how long a slot is held (the busy
-- delay); the slots of a lease whose worker stopped renewing it (silent) count as freeing at its
-- deadline. A release of a job that ran in a leased slot only brings its verdict (its job id is
-- not in the in-flight set), and the worker sends a run of such successes as one release of the
-- same verdict `times` times in a row.
--
-- A release answers 0 no change, 1 the breaker opened, 2 it closed, 3 it re-opened. Verdicts:
-- `success` (HTTP 200), `failure` (timeout, refused or reset connection, TLS: the kinds that hold
-- slots), `answer` (any other HTTP answer), `neutral` (no POST was made, or Herald itself failed).
-- Closed: a failure counts toward the consecutive failures and the window's ratio; a success or an
-- answer ends the run of failures. Open or half-open: only the probe's verdict counts: any HTTP
-- answer closes the breaker (a 200, or another status: an endpoint that answers holds no worker
-- slot, and its non-200 answers are the retry policy's business), a failure re-opens it for twice
-- as long (up to the longest open time), a neutral end frees the probe for the next job.
--
-- An admission answers:
-- - 1, probe (0/1), 0: let in; it holds a slot until released or until its lease runs out;
-- - 2, nominal delay, 0: `target_busy`, come back after about the nominal delay;
-- - 3, earliest, spread: `breaker_open`, come back between earliest and earliest + spread ms;
-- - 4, nominal delay, 0: `rate_limited`, come back after about the nominal delay.
-- A target with a rate is served job by job (a lease answers it is not free), so that every
-- callback takes a token of its bucket: `tokens` and `tokensAt` in its breaker hash, refilled at
-- the rate, holding at most a tenth of a second's worth (1 at least). A rate-limited job's delay is
-- its place among the target's deferred jobs at the rate (deferred + 1 - tokens) / rate.
-- A busy target's delay is how long the jobs deferred before it should take to get through its
-- slots (deferred / limit x how long a job holds a slot, that being the longer of the average
-- and the age of the oldest job in flight), within [min, max] delay: re-checks then come about as
-- fast as slots free up, whatever the backlog, instead of every waiting job polling.

local now = tonumber(ARGV[1])
local releases = tonumber(ARGV[2])
local lease = tonumber(ARGV[3])
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
-- Each target's limit and rate (ARGV[16 + 2t], ARGV[17 + 2t]) come before the releases.
local targetCount = (#KEYS - 1) / 6
local firstRelease = 18 + 2 * targetCount
-- keys.ts SLOT_TIME_DECAY: the weight of the previous average in a job's slot time (a test checks
-- the two agree).
local slotTimeDecay = 0.8
local bucketMs = math.max(1, math.floor(windowMs / 10))
local bucket = math.floor(now / bucketMs)
local out = {}

--- @include "includes/breaker.lua"
--- @include "includes/slots.lua"

for i = firstRelease, firstRelease - 1 + 7 * releases, 7 do
  out[#out + 1] = release(stateOf(ARGV[i]), ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], tonumber(ARGV[i + 4]), tonumber(ARGV[i + 5]), tonumber(ARGV[i + 6]))
end
-- The released slots are free before any lease or admission of the batch.
for t = 1, targetCount do
  local s = targets[t]
  if s and #s.released > 0 then callWithList('ZREM', s.inflight, s.released) end
end
local firstEntry = firstRelease + 7 * releases
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
