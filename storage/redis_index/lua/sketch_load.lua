-- Bulk load: append record blobs to buckets, each rewritten at its exact size. KEYS: buckets; ARGV: blobs.

for i = 1, #KEYS do redis.call('SET', KEYS[i], (redis.call('GET', KEYS[i]) or '') .. ARGV[i]) end
return #KEYS
