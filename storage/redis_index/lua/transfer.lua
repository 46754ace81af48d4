-- Hand a displaced page's entries to the page that displaced it, in one step: no moment without either
-- (a copy checked in between would find nothing and be kept). The displaced page's entries stay, answering
-- for the page that displaced it: its text still stands for the story, so a later copy of it (exact or near,
-- however far from the displacing page) is a copy of that page. KEYS: the old page's ex bucket, fp bucket,
-- counter, its nb block sets, then the new page's ex bucket, fp bucket and block sets. ARGV: nb, then exact
-- field, id, fp, member of the old page, then of the new page. Only the old fp: entry changes (its ex: and
-- block entries stay as they are), and the new page's fp: entry if it was there already answering for the
-- old page (a page displaced before shared the new page's fingerprint). Returns 1 when the old entry was re-pointed.

local base = 3 + tonumber(ARGV[1])
redis.call('HSET', KEYS[base + 1], ARGV[6], 1)
if redis.call('HSETNX', KEYS[base + 2], string.sub(ARGV[8], 2), ARGV[7]) == 1 then
  for i = base + 3, #KEYS do redis.call('SADD', KEYS[i], ARGV[9]) end
  redis.call('INCR', KEYS[3])
elseif redis.call('HGET', KEYS[base + 2], string.sub(ARGV[8], 2)) == ARGV[3] then
  redis.call('HSET', KEYS[base + 2], string.sub(ARGV[8], 2), ARGV[7])
end
if redis.call('HGET', KEYS[2], string.sub(ARGV[4], 2)) == ARGV[3] then
  redis.call('HSET', KEYS[2], string.sub(ARGV[4], 2), ARGV[7])
  return 1
end
return 0
