-- Cluster: with a second key, that key's slot marker (storage/sentinels.py): gone, the slot came back empty
-- and the script says so ({-1}) instead of deciding.
if KEYS[2] and redis.call('EXISTS', KEYS[2]) == 0 then return {-1} end
