-- A claim adds the page and returns, atomically, every other page sharing >= min_shared values with its
-- claim number: a page is only ever compared with pages claimed before it, so two crawlers racing on two
-- copies never both drop (the later one is the copy) and never both keep what the verification calls a copy.
-- ARGV: prefix, page id, min_shared, then the values' first 6 bytes (distinct). A page claimed before
-- (a resumed decision) keeps its earliest number. Values: bucket (2 bytes), then the record's 4 value bytes. Returns {claim, then per other page: id, shared, claim}.
--#include sketch_records.lua

local prefix, pid, min_shared = ARGV[1], ARGV[2], tonumber(ARGV[3])
local names = {}
local function idof(c)
  if names[c] == nil then
    names[c] = redis.call('HGET', prefix .. 'sq:' .. math.floor(c / 128), c % 128) or false
  end
  return names[c]
end
local keys, curs, found, seq = {}, {}, {}, nil
for i = 4, #ARGV do
  local key = prefix .. 'sk:' .. string.format('%02x%02x', string.byte(ARGV[i], 1, 2))
  keys[i] = key
  if curs[key] == nil then curs[key] = redis.call('GET', key) or '' end
  found[i] = {}
  for _, p in ipairs(records(curs[key], string.sub(ARGV[i], 3, 6))) do
    local c = word(curs[key], p + 4)
    table.insert(found[i], c)
    if idof(c) == pid and (seq == nil or c < seq) then seq = c end
  end
end
if seq == nil then
  seq = redis.call('INCR', prefix .. 'skseq')
  if seq > 4294967295 then return redis.error_reply('sketch claim numbers exhausted (4-byte records)') end
  redis.call('HSET', prefix .. 'sq:' .. math.floor(seq / 128), seq % 128, pid)
end
local rec = claimbytes(seq)
local counts, first, order = {}, {}, {}
for i = 4, #ARGV do
  local mine, seen = false, {}
  for _, c in ipairs(found[i]) do
    local id = idof(c)
    if id == pid then
      mine = true
    elseif id and not seen[id] then
      seen[id] = true
      if counts[id] == nil then counts[id] = 0; first[id] = c; table.insert(order, id) end
      counts[id] = counts[id] + 1
    end
  end
  if not mine then
    curs[keys[i]] = curs[keys[i]] .. string.sub(ARGV[i], 3, 6) .. rec
    redis.call('SET', keys[i], curs[keys[i]])
  end
end
local out = {seq}
for _, id in ipairs(order) do
  if counts[id] >= min_shared then
    table.insert(out, id); table.insert(out, counts[id]); table.insert(out, first[id])
  end
end
return out
