-- Included in gate.lua (see its header for KEYS and ARGV): each target's state in the batch, the
-- breaker's failure window, and the release of a job (its verdict, for the breaker). Uses gate.lua's
-- locals now, breakers, minDelay, maxDelay, failuresToOpen, ratio, windowMs, minRequests, openBase,
-- openMax, stale, slotTimeDecay, bucket.

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
local FIELDS = {'reopenAt', 'openMs', 'probe', 'probeUntil', 'avgMs', 'openCount', 'consecutive', 'openedAt', 'tokens', 'tokensAt', 'pausedUntil', 'flowLimit', 'flowCutAt'}
local targets = {}
local function stateOf(position)
  local t = tonumber(position)
  local s = targets[t]
  if s then return s end
  local k = 6 * t - 4
  s = { inflight = KEYS[k], deferred = KEYS[k + 1], breaker = KEYS[k + 2], window = KEYS[k + 3], leased = KEYS[k + 4], wanted = KEYS[k + 5], limit = tonumber(ARGV[16 + 2 * t]), rate = tonumber(ARGV[17 + 2 * t]), leases = false, f = {}, changed = {}, deleted = false, ttl = false,
        released = {}, adds = {}, undeferred = {}, card = false, swept = false, successes = 0 }
  local values = redis.call('HMGET', s.breaker, unpack(FIELDS))
  for i, name in ipairs(FIELDS) do s.f[name] = values[i] end
  -- Flow control: the in-flight window the receiver's pushback left (see cutFlow), below the limit.
  s.policyLimit = s.limit
  local flow = tonumber(s.f.flowLimit)
  if flow then s.limit = math.max(1, math.floor(s.limit > 0 and math.min(s.limit, flow) or flow)) end
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

-- Opens the breaker for openMs, by default the doubling of its open time (openCount); a pause (the
-- receiver's Retry-After) gives its own.
local function open(target, s, openCount, pauseMs)
  local openMs = pauseMs or math.min(openBase * 2 ^ openCount, math.max(openBase, openMax))
  set(s, 'openedAt', now)
  set(s, 'reopenAt', now + openMs)
  set(s, 'openMs', openMs)
  set(s, 'openCount', openCount)
  set(s, 'consecutive', 0)
  set(s, 'probe', false)
  set(s, 'probeUntil', false)
  set(s, 'pausedUntil', pauseMs and (now + pauseMs) or false)
  s.ttl = openMs + stale
  s.successes = 0
  redis.call('DEL', s.window)
  redis.call('ZREMRANGEBYSCORE', breakers, '-inf', now - stale)
  redis.call('ZADD', breakers, now + openMs, target)
end

-- Flow control, additive increase and multiplicative decrease of a target's in-flight window:
-- a receiver that pushes back (429 or 503: verdict `throttled`) halves it, at most once per slot
-- time (the jobs in flight when it answered carry no new news); timeouts and refused connections
-- are the circuit breaker's (they hold worker slots, and open it after a run of them);
-- never below 1; each success grows it by 1 / window (about 1 per window of successes), back to the
-- target's own limit, where the field goes. A healthy target's window is its limit: nothing changes.
local flowBase = 16
local function cutFlow(s)
  local avg = tonumber(s.f.avgMs) or 0
  if now - (tonumber(s.f.flowCutAt) or 0) < math.max(avg, minDelay) then return end
  local current = tonumber(s.f.flowLimit) or (s.policyLimit > 0 and s.policyLimit or flowBase)
  set(s, 'flowLimit', math.max(1, math.floor(current / 2)))
  set(s, 'flowCutAt', now)
  s.limit = math.max(1, math.floor(current / 2))
end
local function growFlow(s, times)
  local flow = tonumber(s.f.flowLimit)
  if not flow then return end
  flow = flow + times / flow
  if s.policyLimit > 0 and flow >= s.policyLimit then
    set(s, 'flowLimit', false)
    set(s, 'flowCutAt', false)
    s.limit = s.policyLimit
  else
    set(s, 'flowLimit', flow)
    s.limit = math.max(1, math.floor(flow))
  end
end

local function release(s, target, job, verdict, duration, times, pauseMs)
  local change = 0
  s.released[#s.released + 1] = job
  local reopenAt, probe = s.f.reopenAt, s.f.probe
  if verdict ~= 'neutral' then
    local avg = tonumber(s.f.avgMs)
    -- keys.ts nextSlotTime, applied once per job of the run (successes reported with one duration).
    if avg then avg = duration + (avg - duration) * slotTimeDecay ^ times else avg = duration end
    set(s, 'avgMs', math.floor(avg))
  end

  if reopenAt then
    if probe == job then
      if verdict == 'success' or verdict == 'answer' or verdict == 'throttled' then
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
  if verdict == 'throttled' then cutFlow(s) elseif verdict == 'success' then growFlow(s, times) end
  -- The receiver asked for a pause (Retry-After on a 429 or 503): the whole target waits, its
  -- breaker open until then (a longer open period already set stands), then one probe as usual.
  if pauseMs and pauseMs > 0 and (tonumber(s.f.reopenAt) or 0) < now + pauseMs then
    local wasOpen = s.f.reopenAt
    open(target, s, tonumber(s.f.openCount) or 0, pauseMs)
    change = wasOpen and 3 or 1
  end
  return change
end
