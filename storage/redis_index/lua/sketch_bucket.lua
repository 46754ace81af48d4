-- Cluster: one sketch bucket (one slot). KEYS: the bucket (and its slot marker); ARGV: this claim's 4-byte number, then the
-- values' 4 record bytes (ascending). Appends this claim's record to each value unless there; returns
-- for every record of these values, this page's included: value index (from 1), position, claim number.
--#include guard.lua
--#include sketch_records.lua

local rec = ARGV[1]
local cur = redis.call('GET', KEYS[1]) or ''
local out, grown = {}, false
for i = 2, #ARGV do
  local mine = false
  for _, p in ipairs(records(cur, ARGV[i])) do
    local c = string.sub(cur, p + 4, p + 7)
    if c == rec then mine = true end
    table.insert(out, i - 1); table.insert(out, (p - 1) / 8); table.insert(out, word(c, 1))
  end
  if not mine then
    table.insert(out, i - 1); table.insert(out, #cur / 8); table.insert(out, word(rec, 1))
    cur = cur .. ARGV[i] .. rec
    grown = true
  end
end
if grown then redis.call('SET', KEYS[1], cur) end
return out
