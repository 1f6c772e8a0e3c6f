-- Included in gate.lua (see its header for KEYS and ARGV), after includes/breaker.lua: the slots
-- of a target, the workers' leases of them and the admission of a job let in one by one. Uses
-- gate.lua's locals now, lease, minDelay, grace, leaseTtl, silentMs and breaker.lua's
-- callWithList, clamp and set.

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
  if s.card + #s.adds / 2 < s.limit then return false end
  addSlots(s)
  return s.card >= s.limit and not redis.call('ZSCORE', s.inflight, job)
end

-- Takes one token of a rate-limited target's bucket (see gate.lua); answers whether there was
-- one, and if not how long until the job's turn: its place among the deferred jobs, at the rate.
local function takeToken(s)
  local capacity = math.max(1, s.rate / 10)
  local tokens = tonumber(s.f.tokens) or capacity
  local at = tonumber(s.f.tokensAt) or now
  tokens = math.min(capacity, tokens + math.max(0, now - at) * s.rate / 1000)
  set(s, 'tokensAt', now)
  if tokens >= 1 then
    set(s, 'tokens', tokens - 1)
    return true, 0
  end
  set(s, 'tokens', tokens)
  local waiting = redis.call('ZCARD', s.deferred)
  return false, (waiting + 1 - tokens) * 1000 / s.rate
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
  elseif s.limit > 0 and full(s, job) then
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
    local delay = waiting / s.limit * held
    if leases.silent > 0 then
      -- The silent leases' slots free only at their deadline: the job's turn comes through the
      -- other slots, or after that.
      local afterSilent = leases.silentUntil - now + delay
      local others = s.limit - leases.silent
      delay = afterSilent
      if others > 0 then delay = math.min(waiting / others * held, afterSilent) end
    end
    code, x = 2, clamp(delay)
  else
    -- A slot is free; a rate-limited target also needs a token of its bucket.
    local token, wait = true, 0
    if s.rate > 0 then token, wait = takeToken(s) end
    if not token then
      code, x = 4, clamp(wait)
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
  end

  if code ~= 1 then
    local back = now + x + y
    if code == 2 or code == 4 then back = now + math.floor(x * 1.5) end
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
  -- A rate-limited target is served job by job: each admission takes a token.
  if not s.f.reopenAt and s.rate <= 0 then
    granted, free = math.max(keep, want), 1
    if s.limit > 0 then
      local capacity = s.limit - redis.call('ZCARD', s.inflight)
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
