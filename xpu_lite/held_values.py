"""A Python number as a tensor of a float16/bfloat16/uint8/int8/int16 dtype holds it, in
plain Python: a float through float32 to nearest even, as eager converts a Python float or
a double parameter (`scalar_t beta_val(beta)`); an int wrapped. Plain Python runs anywhere:
while tracing a decomposition (decomp/half_steps.py), where a tensor op would be traced,
and while lowering under a fake tensor mode (lowering/ir.py)."""
from __future__ import annotations

import math
import struct

import torch

_BITS = {torch.uint8: (8, False), torch.int8: (8, True), torch.int16: (16, True)}


def held_value(value: float | int, dtype: torch.dtype) -> float | int:
    """`value` as a `dtype` tensor holds it, read back: float16's 0.0999755859375 for 0.1."""
    if dtype in _BITS:
        bits, signed = _BITS[dtype]
        wrapped = int(value) % (1 << bits)
        return wrapped - (1 << bits) if signed and wrapped >= 1 << (bits - 1) else wrapped
    try:
        single = struct.unpack("f", struct.pack("f", value))[0]
        if dtype is torch.float16:
            return struct.unpack("e", struct.pack("e", single))[0]
    except OverflowError:  # beyond the largest finite value once rounded: inf, as a tensor holds it
        return math.copysign(math.inf, value)
    if dtype is not torch.bfloat16:
        raise ValueError(f"held_value: {dtype} is not a float16/bfloat16/uint8/int8/int16 dtype")
    bits = struct.unpack("I", struct.pack("f", single))[0]
    if math.isfinite(single):
        bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return struct.unpack("f", struct.pack("I", bits & 0xFFFFFFFF))[0]
