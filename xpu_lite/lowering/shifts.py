"""Bit shifts of integer tensors: `<<` and `>>` (aten.__lshift__ / __rshift__) and
bitwise_left_shift / bitwise_right_shift, every overload. A shift amount outside
[0, bits) follows eager's kernels (c10's lshift / rshift, the same on cpu and cuda): a
left shift gives 0, a right shift the sign (0 for uint8). The kernel shifts by 0 there:
LLVM's shl/ashr leave such amounts undefined (PTX clamps them, numpy defines them as eager
does, so no test tells). uint8/int8/int16 compute in int32 and wrap where read, as their
other arithmetic does."""
from __future__ import annotations

from typing import Any

import torch
import torch.fx

from .operands import _arg
from .pointwise import INTS, SMALL, Rule, _out_cdt, _reg, checker

aten = torch.ops.aten


def _shift(op: str) -> Rule:
    def rule(b: Any, node: torch.fx.Node, x: Any, y: Any) -> int:
        cdt, dtype = _out_cdt(node), node.meta["val"].dtype
        limit = torch.iinfo(dtype).bits - (op == "rshift" and dtype.is_signed)  # eager's max_shift

        def compute(name: str, *args: int, dtype: torch.dtype = cdt) -> int:
            return b.compute(name, args, node, dtype)

        a, amount = _arg(b, x, cdt, node), _arg(b, y, cdt, node)
        zero, bound = b.constant(0, cdt), b.constant(limit, cdt)
        outside = compute("logical_or", compute("lt", amount, zero, dtype=torch.bool), compute("ge", amount, bound, dtype=torch.bool),
                          dtype=torch.bool)
        shifted = compute(op, a, compute("where", outside, zero, amount))  # never a shift the target leaves undefined
        return compute("where", outside, zero if op == "lshift" else compute("rshift", a, bound), shifted)

    return rule


_CHECK = checker(INTS + SMALL, INTS + SMALL)  # a Python int outside the result's dtype keeps the op (checker)
_reg((aten.__lshift__.Scalar, aten.__lshift__.Tensor, aten.bitwise_left_shift.Tensor, aten.bitwise_left_shift.Tensor_Scalar,
      aten.bitwise_left_shift.Scalar_Tensor), _CHECK, _shift("lshift"))
_reg((aten.__rshift__.Scalar, aten.__rshift__.Tensor, aten.bitwise_right_shift.Tensor, aten.bitwise_right_shift.Tensor_Scalar,
      aten.bitwise_right_shift.Scalar_Tensor), _CHECK, _shift("rshift"))
