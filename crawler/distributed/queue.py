"""The shared request queue in Redis: its Lua scripts (push-if-unseen, pop-and-claim, leases, heartbeat) and
`ClaimingPriorityQueue`."""
from __future__ import annotations

from typing import Any

from scrapy.http import Request
from scrapy_redis.queue import PriorityQueue

from crawler import settings as defaults   # every setting's default, declared once

PUSH_UNSEEN = """
if ARGV[4] == '0' and redis.call('SADD', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
return 1
"""
POP_CLAIM = """
local r = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if #r == 0 then return false end
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, 0)
local t = redis.call('TIME')
redis.call('ZADD', KEYS[2], tonumber(t[1]) + tonumber(ARGV[2]), ARGV[1])
if #KEYS >= 3 then redis.call('ZADD', KEYS[3], r[2], ARGV[1] .. '\\n' .. r[1]) end
return r[1]
"""
# Leases (KEYS: inflight, alive, queue; ARGV: this worker, '1' to drop its own leases, '1' to move
# nothing back). A lease is "<worker>\n<queued entry>" scored with the entry's priority. Leases of a
# worker whose alive mark expired (killed) go back to the queue with their priority, unless ARGV[3]
# holds them (right after an outage every mark may have expired: the others get one TTL to refresh
# theirs); returns {moved back, others' leases left}.
RECLAIM = """
local t = tonumber(redis.call('TIME')[1])
local all = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
local moved, left = 0, 0
for i = 1, #all, 2 do
  local m = all[i]
  local cut = string.find(m, '\\n', 1, true)
  local w = string.sub(m, 1, cut - 1)
  if w == ARGV[1] then
    if ARGV[2] == '1' then redis.call('ZREM', KEYS[1], m) end
  else
    local alive = redis.call('ZSCORE', KEYS[2], w)
    if ((not alive) or tonumber(alive) < t) and ARGV[3] ~= '1' then
      redis.call('ZADD', KEYS[3], all[i + 1], string.sub(m, cut + 1))
      redis.call('ZREM', KEYS[1], m)
      moved = moved + 1
    else
      left = left + 1
    end
  end
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. (t - 86400))
return {moved, left}
"""
# A page that failed in a pipeline (KEYS: inflight, failed; ARGV: its lease): its queued entry is kept
# aside with its priority, not fetched again in this run (no loop on a page that always fails).
FAIL_LEASE = """
local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not s then return 0 end
local cut = string.find(ARGV[1], '\\n', 1, true)
redis.call('ZADD', KEYS[2], s, string.sub(ARGV[1], cut + 1))
redis.call('ZREM', KEYS[1], ARGV[1])
return 1
"""
# The entries kept aside go back to the queue when a worker starts (KEYS: failed, queue); returns how many.
MOVE_ALL = """
local all = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
for i = 1, #all, 2 do redis.call('ZADD', KEYS[2], all[i + 1], all[i]) end
redis.call('DEL', KEYS[1])
return #all / 2
"""
LEASE = "zhdedup_lease"   # request.meta key: this worker's token for the lease of a popped request
BEAT = """
local t = redis.call('TIME')
redis.call('ZADD', KEYS[1], tonumber(t[1]) + tonumber(ARGV[2]), ARGV[1])
return 1
"""
IDLE = """
redis.call('ZREM', KEYS[1], ARGV[1])
local t = redis.call('TIME')
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. t[1])
return {redis.call('ZCARD', KEYS[2]), redis.call('ZCARD', KEYS[1])}
"""


class ClaimingPriorityQueue(PriorityQueue):
    """scrapy-redis PriorityQueue whose pop also marks the worker busy, and with an atomic push-if-unseen."""

    worker = "?"
    workers_key = ""
    inflight_key = ""
    ttl = defaults.DISTRIBUTED_WORKER_TTL
    last_raw: bytes | None = None

    def __init__(self, server: Any, spider: Any, key: str, serializer: Any = None) -> None:
        super().__init__(server, spider, key, serializer)
        self._push_unseen = server.register_script(PUSH_UNSEEN)
        self._pop_claim = server.register_script(POP_CLAIM)

    def push_unseen(self, request: Request, fingerprint: str | None, seen_key: str) -> bool:
        """Queue the request unless its fingerprint was seen (one round trip); None = dont_filter."""
        dont_filter = "1" if fingerprint is None else "0"
        args = [fingerprint or "", -request.priority, self._encode_request(request), dont_filter]
        return bool(self._push_unseen(keys=[seen_key, self.key], args=args))

    def pop(self, timeout: int = 0) -> Request | None:
        """Highest-priority request, claimed by this worker (busy marker) in the same round trip."""
        if not self.workers_key:
            return super().pop(timeout)
        keys = [self.key, self.workers_key] + ([self.inflight_key] if self.inflight_key else [])
        data = self._pop_claim(keys=keys, args=[self.worker, int(self.ttl)])
        self.last_raw = data
        return self._decode_request(data) if data else None
