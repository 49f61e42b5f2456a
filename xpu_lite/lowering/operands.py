"""How a lowering rule reads its operands: cast to a compute dtype (_arg), as a tensor of a
dtype holds them (_in_dtype), and a cpu scalar as the node's eager kernel reads it on the
node's device (operand, SCALAR_IN_DTYPE).

Operands reach rules as ir.Ref (tensor or SymInt values already in the kernel) or as raw
Python scalars, which become typed constants.
"""
from __future__ import annotations

from typing import Any

import torch
import torch.fx

from . import ir

aten = torch.ops.aten
Ref = ir.Ref


def on_cpu(node: torch.fx.Node) -> bool:
    """Whether eager runs the node on cpu (its kernels there round or fuse their own way)."""
    return node.meta["val"].device.type == "cpu"


def cpu_scalar(arg: Any) -> bool:
    """Whether eager's TensorIterator sees operand `arg` as a cpu scalar: a Python number,
    a SymInt/SymFloat, a 0-dim cpu tensor (division.py, fma.py: kernels that treat one
    apart)."""
    val = arg.meta.get("val") if isinstance(arg, torch.fx.Node) else arg
    return isinstance(val, (int, float, torch.SymInt, torch.SymFloat)) or (
        isinstance(val, torch.Tensor) and val.dim() == 0 and val.device.type == "cpu")


def _arg(b: Any, value: Any, dtype: torch.dtype, node: torch.fx.Node) -> int:
    """`value` in `dtype`: a kernel value (Ref) cast, a Python number a constant, and a
    symbol a keyword argument holds (alpha, value, correction of an int under
    dynamic=True; positional ones reach rules as Refs) the kernel argument it is."""
    if isinstance(value, torch.fx.Node):
        value = Ref(b.sym(value))
    if isinstance(value, Ref):
        return b.cast(int(value), dtype, node)
    return b.constant(ir.convert_scalar(value, dtype), dtype)


def _in_dtype(b: Any, operand: Any, dtype: torch.dtype, node: torch.fx.Node) -> int:
    """`operand` as a `dtype` tensor holds it, in `dtype`'s compute dtype."""
    if dtype in ir.HELD_AS:
        return b.round_to(_arg(b, operand, ir.compute_dtype(dtype), node), dtype, node)
    return _arg(b, operand, dtype, node)  # an int32 constant wrapped (ir.convert_scalar)


# Ops whose eager kernels read a cpu scalar operand converted to the op's float16/bfloat16
# (or uint8/int8/int16) dtype, by device type: TensorIterator copies inputs to the common
# dtype, and a kernel taking `scalar_t` arguments reads that copy
# (`iter.scalar_value<scalar_t>`, `exp_scalar.to<scalar_t>()`). Eager's mul, div, hypot on
# cuda/xpu and others read the original value instead (`original_scalar_value<opmath_t>`).
# Measured on cpu (`x_f16 % 0.1234567` differed from eager in 3966 of 4096 values, by up
# to a whole 0.12 at the boundaries; `x_f16 ** 2.049` by up to 1.4%; `x_f16 + 0.1234567`
# adds float16's 0.1235); cuda's read in its sources (gpu_kernel_with_scalars with
# `scalar_t` arguments: remainder, fmod, atan2; add, sub and hypot are opmath there), xpu's
# taken to be cuda's.
SCALAR_IN_DTYPE: dict[Any, tuple[str, ...]] = {
    **dict.fromkeys((aten.remainder.Tensor, aten.remainder.Scalar, aten.fmod.Tensor, aten.fmod.Scalar,
                     aten.atan2.default), ("cpu", "cuda", "xpu")),
    # a scalar exponent (x_f16 ** 2.049 is x ** 2.04883) or base (2.049 ** x_f16)
    **dict.fromkeys((aten.pow.Tensor_Scalar, aten.pow.Tensor_Tensor, aten.pow.Scalar), ("cpu", "cuda", "xpu")),
    # add/sub: their alpha too (fma.py)
    **dict.fromkeys((aten.add.Tensor, aten.add.Scalar, aten.sub.Tensor, aten.sub.Scalar, aten.hypot.default), ("cpu",)),
    aten.lerp.Tensor: ("cpu",),  # a 0-dim weight tensor (a Python number weight, lerp.Scalar, is read as float32)
}


def scalar_dtype(node: torch.fx.Node) -> torch.dtype | None:
    """The dtype the node's eager kernel reads its cpu scalars in (SCALAR_IN_DTYPE), or None
    where it reads them as they are."""
    val = node.meta["val"]
    return val.dtype if val.dtype in ir.HELD_AS and val.device.type in SCALAR_IN_DTYPE.get(node.target, ()) else None


def operand(b: Any, node: torch.fx.Node, value: Any, position: int, cdt: torch.dtype) -> int:
    """Operand `value` (node.args[position]) in compute dtype `cdt`, as the node's eager
    kernel reads it: a cpu scalar in scalar_dtype(node) first, where there is one."""
    held = scalar_dtype(node)
    if held is not None and cpu_scalar(node.args[position]):
        return _in_dtype(b, value, held, node)
    return _arg(b, value, cdt, node)


def steps(b: Any, node: torch.fx.Node, cpu: tuple[torch.dtype, ...] = ()) -> Any:
    """How each intermediate step of the node is kept: rounded to its float16/bfloat16 dtype
    where eager's kernel computes in that dtype, else None (kept as computed). Eager's
    cuda/xpu kernels compute these ops in `scalar_t` (c10::Half's and c10::BFloat16's
    operators convert to float and back per operation); its cpu ones in float, rounded once,
    but in the dtypes `cpu` lists (Vectorized<Half> or Vectorized<BFloat16> arithmetic)."""
    dtype = node.meta["val"].dtype
    if dtype in ir.HELD_AS and (not on_cpu(node) or dtype in cpu):
        return lambda value: b.round_to(value, dtype, node)
    return None
