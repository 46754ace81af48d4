-- Lua helpers: aligned records of one value in a bucket string, and a 4-byte claim number.

local function word(s, i)
  local a, b, c, d = string.byte(s, i, i + 3)
  return ((a * 256 + b) * 256 + c) * 256 + d
end
local function records(cur, sub)
  local out, pos = {}, 1
  while true do
    local p = string.find(cur, sub, pos, true)
    if not p then return out end
    if p % 8 == 1 then table.insert(out, p); pos = p + 8 else pos = p + 1 end
  end
end
local function claimbytes(c)
  return string.char(math.floor(c / 16777216) % 256, math.floor(c / 65536) % 256, math.floor(c / 256) % 256, c % 256)
end
