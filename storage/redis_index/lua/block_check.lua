-- Cluster: one block table (one hash slot) at a time. KEYS: the block hash (and its slot marker). ARGV: fp (8 bytes), k,
-- insert flag, exact tag ('' outside block 0), page id. Inserts this page (when asked and its fingerprint
-- is not there yet) with the key's next insertion number; returns {own number or 0, then for every
-- OTHER entry within k bits that was there before it: fp, number, tag, page id, distance}.
--#include guard.lua

local fp, k, insert, tag, pid = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1', ARGV[4], ARGV[5]
local band, bxor, rshift = bit.band, bit.bxor, bit.rshift
--#include popcount.lua
local function word(s, i)
  local a, b, c, d = string.byte(s, i, i + 3)
  return ((a * 256 + b) * 256 + c) * 256 + d
end
local qhi, qlo = word(fp, 1), word(fp, 5)
local all = redis.call('HGETALL', KEYS[1])
local out, mine = {0}, false
for j = 1, #all, 2 do
  local f, v = all[j], all[j + 1]
  if #f == 8 then
    local tl = string.byte(v, 5)
    local id = string.sub(v, 6 + tl)
    if f == fp and id == pid then
      out[1] = word(v, 1); mine = true
    else
      local d = pc(bxor(word(f, 1), qhi))
      if d <= k then
        d = d + pc(bxor(word(f, 5), qlo))
        if d <= k then
          table.insert(out, f); table.insert(out, word(v, 1)); table.insert(out, string.sub(v, 6, 5 + tl))
          table.insert(out, id); table.insert(out, d)
        end
      end
    end
  end
end
if insert and not mine and redis.call('HEXISTS', KEYS[1], fp) == 0 then
  local n = redis.call('HINCRBY', KEYS[1], '#', 1)
  redis.call('HSET', KEYS[1], fp, string.char(band(rshift(n, 24), 255), band(rshift(n, 16), 255),
             band(rshift(n, 8), 255), band(n, 255), #tag) .. tag .. pid)
  out[1] = n
end
return out
