-- Lua numbers are doubles: bits of a 32-bit half counted with LuaBitOp (a popcount for the Hamming distance).

local function pc(x)
  x = x - band(rshift(x, 1), 0x55555555)
  x = band(x, 0x33333333) + band(rshift(x, 2), 0x33333333)
  x = band(x + rshift(x, 4), 0x0F0F0F0F)
  return band(x, 255) + band(rshift(x, 8), 255) + band(rshift(x, 16), 255) + rshift(x, 24)
end
