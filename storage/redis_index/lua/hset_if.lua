-- Compare-and-set of a hash field (an fp: bucket's owner; a cluster ex: bucket's). KEYS: the hash;
-- ARGV: field, the id it must hold, the id it gets.

if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then redis.call('HSET', KEYS[1], ARGV[1], ARGV[3]); return 1 end
return 0
