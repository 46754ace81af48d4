-- Compare-and-delete of a hash field (cluster ex: buckets hold the owner's id).

if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then return redis.call('HDEL', KEYS[1], ARGV[1]) end
return 0
