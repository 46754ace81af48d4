-- Take one page out if the index still points at it (a purge, a copy found late, or an entry whose
-- crawler died before saving the page). KEYS as above; ARGV: exact field ('' leaves ex: alone), id, fp, member.

local fpf = string.sub(ARGV[3], 2)
if redis.call('HGET', KEYS[2], fpf) ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[2], fpf)
if ARGV[1] ~= '' then redis.call('HDEL', KEYS[1], ARGV[1]) end
for i = 4, #KEYS do redis.call('SREM', KEYS[i], ARGV[4]) end
redis.call('DECR', KEYS[3])
return 1
