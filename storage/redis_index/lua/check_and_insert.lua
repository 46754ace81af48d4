-- One round trip: exact check, candidate fetch from the k+1 block sets, Hamming filter, insert.
-- KEYS: ex bucket, own fp bucket, page counter, then the k+1 block sets of this fingerprint.
-- ARGV: prefix, exact field, page id (bytes), fp (8 bytes), member (signed decimal), k, insert flag (1/0),
-- then optionally the loss guard: owner key, lost key, the loss token this process has re-filled for, the
-- loss window (s), a fresh token.
-- Returns {0, provisional} (new, inserted if flag), {1, id, 0, fp} (exact), {2, id, distance, fp} (near);
-- with the guard also {3, token} (the index lost its data: no owner key; the loss is recorded under the lost
-- key for the window) and {4, token} (a loss this process has not re-filled its pages for yet). A new page
-- decided while a loss is recorded is provisional (1): other processes may not have re-filled theirs yet.
-- Members are whole fingerprints as signed 64-bit integers (an intset: 8 bytes each); Lua numbers are
-- doubles, so a member is read as two exact 32-bit halves.

local prefix, efield, pid, fp, member = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local k, insert = tonumber(ARGV[6]), ARGV[7] == '1'
local band, bxor, rshift = bit.band, bit.bxor, bit.rshift
local fpf = string.sub(fp, 2)
local provisional = 0
if ARGV[8] then
  if redis.call('EXISTS', ARGV[8]) == 0 then
    redis.call('SET', ARGV[9], ARGV[12], 'NX', 'EX', tonumber(ARGV[11]))
    return {3, redis.call('GET', ARGV[9])}
  end
  local lost = redis.call('GET', ARGV[9])
  if lost then
    if lost ~= ARGV[10] then return {4, lost} end
    provisional = 1
  end
end
if redis.call('HEXISTS', KEYS[1], efield) == 1 then
  -- same content => same SimHash, so the owner is found under this fingerprint
  return {1, redis.call('HGET', KEYS[2], fpf) or '', 0, fp}
end
--#include popcount.lua
local function halves(s)
  local neg = string.byte(s, 1) == 45
  local hi, lo = 0, 0
  for i = neg and 2 or 1, #s do
    lo = lo * 10 + string.byte(s, i) - 48
    local c = math.floor(lo / 4294967296)
    lo = lo - c * 4294967296
    hi = hi * 10 + c
  end
  if neg then
    if lo == 0 then hi = 4294967296 - hi else lo = 4294967296 - lo; hi = 4294967295 - hi end
  end
  return hi, lo
end
local b1, b2, b3, b4, b5, b6, b7, b8 = string.byte(fp, 1, 8)
local qhi = ((b1 * 256 + b2) * 256 + b3) * 256 + b4
local qlo = ((b5 * 256 + b6) * 256 + b7) * 256 + b8
local bestd, best, bestfp = k + 1, nil, nil
for i = 4, #KEYS do
  local members = redis.call('SMEMBERS', KEYS[i])
  for j = 1, #members do
    local hi, lo = halves(members[j])
    local dist = pc(bxor(hi, qhi))
    if dist < bestd then
      dist = dist + pc(bxor(lo, qlo))
      if dist < bestd then
        local cfp = string.char(rshift(hi, 24), band(rshift(hi, 16), 255), band(rshift(hi, 8), 255), band(hi, 255),
                                rshift(lo, 24), band(rshift(lo, 16), 255), band(rshift(lo, 8), 255), band(lo, 255))
        local cid = redis.call('HGET', prefix .. 'fp:' .. string.format('%03x', rshift(hi, 20)), string.sub(cfp, 2))
        if cid then bestd = dist; best = cid; bestfp = cfp end
      end
    end
  end
  if bestd == 0 then break end
end
if best then return {2, best, bestd, bestfp} end
if insert then
  redis.call('HSET', KEYS[1], efield, 1)
  if redis.call('HSETNX', KEYS[2], fpf, pid) == 1 then
    for i = 4, #KEYS do redis.call('SADD', KEYS[i], member) end
  end
  redis.call('INCR', KEYS[3])
end
return {0, provisional}
