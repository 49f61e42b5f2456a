"""Pointwise lowerings: for each aten op, a checker (pure, on fake-tensor metadata) and a
rule that adds Compute values to the kernel being built.

Scope today: float32 tensors (any strides, broadcasting) and Python int/float scalars.
Other dtypes, SymInt scalars and non-finite constants fall back with "no lowering".
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
import torch.fx

from .registry import LOWERINGS

aten = torch.ops.aten
SUPPORTED_DTYPES = (torch.float32,)


def _is_lowerable_tensor(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.dtype in SUPPORTED_DTYPES and value.layout is torch.strided


def _pointwise_ok(node: torch.fx.Node, allowed_kwargs: dict[str, Any] | None = None) -> bool:
    """Output and tensor inputs float32 and broadcastable to the output; scalars finite numbers."""
    out = node.meta.get("val")
    if not _is_lowerable_tensor(out) or any(isinstance(s, int) and s == 0 for s in out.shape):
        return False  # (a statically empty output has nothing to compute: eager handles it)
    for key, value in node.kwargs.items():
        if allowed_kwargs is None or allowed_kwargs.get(key, object()) != value:
            return False
    for arg in node.args:
        if isinstance(arg, torch.fx.Node):
            val = arg.meta.get("val")
            if not _is_lowerable_tensor(val) or val.dim() > out.dim():
                return False
        elif isinstance(arg, bool) or not isinstance(arg, (int, float)) or not math.isfinite(arg):
            return False
    return True


def _register(op_name: str, *targets: Any, allowed_kwargs: dict[str, Any] | None = None) -> None:
    def checker(node: torch.fx.Node) -> bool:
        return _pointwise_ok(node, allowed_kwargs)

    def rule(builder: Any, node: torch.fx.Node, *operands: int) -> int:
        return builder.compute(op_name, operands, node)

    rule.__name__ = f"lower_{op_name}"
    LOWERINGS.register(*targets, checker=checker)(rule)


# op name in codegen/triton.py's math table -> aten overloads it lowers
_BINARY: dict[str, tuple[Any, ...]] = {
    "add": (aten.add.Tensor,),
    "sub": (aten.sub.Tensor,),
    "mul": (aten.mul.Tensor,),
    "truediv": (aten.div.Tensor,),
    "maximum": (aten.maximum.default,),
    "minimum": (aten.minimum.default,),
}
_UNARY: dict[str, tuple[Any, ...]] = {
    "neg": (aten.neg.default,),
    "abs": (aten.abs.default,),
    "exp": (aten.exp.default,),
    "log": (aten.log.default,),
    "sqrt": (aten.sqrt.default,),
    "rsqrt": (aten.rsqrt.default,),
    "sin": (aten.sin.default,),
    "cos": (aten.cos.default,),
    "sigmoid": (aten.sigmoid.default,),
    "relu": (aten.relu.default,),
    "reciprocal": (aten.reciprocal.default,),
}

for _name, _targets in _BINARY.items():
    _register(_name, *_targets, allowed_kwargs={"alpha": 1} if _name in ("add", "sub") else None)
for _name, _targets in _UNARY.items():
    _register(_name, *_targets)

LOWERED_OPS: tuple[Any, ...] = tuple(t for targets in (*_BINARY.values(), *_UNARY.values()) for t in targets)
Rule = Callable[..., int]
