"""The ops eager computes with a fused multiply-add, each in its own kernel's order and
rounding, per device: add/sub with `alpha`, lerp, addcmul, addcdiv, tanh_backward (and
sigmoid_backward, no fma but an order and roundings of its own), and
prims.fma (what Dynamo writes for `y.add_(o, alpha=<tensor>)`, which decomp/recompose.py
cannot put back). Float results only use the fma; integers wrap as before.

Eager's kernels, measured on cpu (AVX512, torch 2.13) and read in its cuda/xpu sources:

| op | cpu | cuda, xpu |
|---|---|---|
| add(a, b, alpha) | fma(b, alpha, a); float16/bfloat16: alpha and a cpu scalar b rounded to the dtype | fma(alpha, b, a) (nvcc contracts) |
| lerp(s, e, w) | fma(w, e - s, s) where abs(w) < 0.5, else fma(w - 1, e - s, e) | the same (Lerp.h, contracted) |
| addcmul(s, t1, t2, v) | fma(v * t1, t2, s) | fma(t1, t2, s) for v = 1, else fma(v, t1 * t2, s) |
| addcdiv(s, t1, t2, v) | s + v * t1 / t2 | s + t1 / t2 for v = 1, else fma(v, t1 / t2, s) |
| tanh_backward(g, y) | g * fma(-y, y, 1) (gcc contracts the vectorized `g * (1 - y * y)`) | the same (nvcc); float16/bfloat16: g * (1 - y * y), each step rounded |
| sigmoid_backward(g, y) | g * (1 - y) * y (no fma, but not the decomposition's order); float16: each step rounded | the same; float16/bfloat16: each step rounded |

A plain `a + alpha * b` rounds twice: add(alpha=0.3) differed from eager's cpu kernel in
773 of 4000 float32 values, lerp in 1078, addcmul in 609, addcdiv (its decomposition
`s + v * (t1 / t2)`) in 713.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.fx

from .operands import Ref, _arg, _in_dtype, on_cpu, operand, scalar_dtype, steps
from .pointwise import FLOATS, READABLE, WRAPPING, _out_cdt, _reg, checker

aten = torch.ops.aten
prims = torch.ops.prims


def _add_sub(op: str) -> Any:
    """a + alpha * b. Floats: one fma (alpha 1: one add). On cpu eager's float16/bfloat16
    kernel converts a cpu scalar operand (`x_f16 + 0.1234567` adds float16's 0.1235, a
    0-dim float32 tensor too) and alpha to the dtype first; its cuda/xpu kernels read them
    as float32. A tensor operand fused in the kernel stays unrounded, as elsewhere."""
    def rule(b: Any, node: torch.fx.Node, x: Any, y: Any) -> int:
        cdt, held = _out_cdt(node), scalar_dtype(node)
        alpha = node.kwargs.get("alpha", 1)
        if isinstance(alpha, torch.fx.Node):  # a SymInt/SymFloat: a Python number under dynamic=True (SGD's 1 - dampening)
            alpha = Ref(b.sym(alpha))
        a, other = operand(b, node, x, 0, cdt), operand(b, node, y, 1, cdt)
        if not isinstance(alpha, Ref) and alpha == 1:
            return b.compute(op, (a, other), node, cdt)
        if not cdt.is_floating_point:
            return b.compute(op, (a, b.compute("mul", (other, _arg(b, alpha, cdt, node)), node, cdt)), node, cdt)
        scale = alpha if op == "add" or isinstance(alpha, Ref) else -alpha
        scale_value = _arg(b, scale, cdt, node) if held is None else _in_dtype(b, scale, held, node)
        if op == "sub" and isinstance(alpha, Ref):
            scale_value = b.compute("fneg", (scale_value,), node, cdt)  # -0.0 for 0, as eager's -alpha
        return b.compute("fma", (other, scale_value, a), node, cdt)

    return rule


def _lerp(b: Any, node: torch.fx.Node, start: Any, end: Any, weight: Any) -> int:
    """The branch a Python number weight takes is chosen here, by its float32 value (eager's
    `weight.to<opmath_t>()`: 0.49999999 is 0.5, past half). A 0-dim cpu weight tensor is
    read in a float16/bfloat16 dtype on cpu, as eager's TensorIterator converts it (operand)."""
    cdt = _out_cdt(node)
    s, e, w = (operand(b, node, v, i, cdt) for i, v in enumerate((start, end, weight)))
    diff = b.compute("sub", (e, s), node, cdt)

    def near_start() -> int:
        return b.compute("fma", (w, diff, s), node, cdt)

    def near_end() -> int:
        return b.compute("fma", (b.compute("sub", (w, b.constant(1.0, cdt)), node, cdt), diff, e), node, cdt)

    if not isinstance(weight, Ref):  # a Python number
        return near_start() if abs(np.float32(weight)) < 0.5 else near_end()
    small = b.compute("lt", (b.compute("abs", (w,), node, cdt), b.constant(0.5, cdt)), node, torch.bool)
    return b.compute("where", (small, near_start(), near_end()), node, cdt)


def _addc(op: str) -> Any:
    """addcmul (op "mul") and addcdiv ("truediv") in eager's order on the node's device."""
    def rule(b: Any, node: torch.fx.Node, x: Any, t1: Any, t2: Any) -> int:
        cdt = _out_cdt(node)
        value = node.kwargs.get("value", 1)
        s, a, c = (_arg(b, o, cdt, node) for o in (x, t1, t2))
        v = _arg(b, value, cdt, node)  # a literal, or a SymInt (dynamic)

        def compute(name: str, *args: int) -> int:
            return b.compute(name, args, node, cdt)

        if not cdt.is_floating_point:  # integers (addcmul): exact in int32/int64, wrapped to small ints on store
            return compute("add", s, compute("mul", compute("mul", v, a), c))
        if on_cpu(node):
            return compute("fma", compute("mul", v, a), c, s) if op == "mul" else compute("add", s, compute(op, compute("mul", v, a), c))
        if value == 1:
            return compute("fma", a, c, s) if op == "mul" else compute("add", s, compute(op, a, c))
        return compute("fma", v, compute(op, a, c), s)

    return rule


def _tanh_backward(b: Any, node: torch.fx.Node, grad: Any, y: Any) -> int:
    """grad * (1 - y * y), whose `1 - y * y` eager's kernels contract (gcc's vectorized cpu
    loop, nvcc): grad * fma(-y, y, 1). Its decomposition rounded y * y apart: 719 of 1024
    float32 gradients of tanh differed from eager's cpu ones. On cuda/xpu a float16/bfloat16
    gradient is computed in its dtype, each step rounded (operands.steps), with no fma."""
    cdt = _out_cdt(node)
    g, t, one = _arg(b, grad, cdt, node), _arg(b, y, cdt, node), b.constant(1.0, cdt)
    if (step := steps(b, node)) is not None:
        return b.compute("mul", (g, step(b.compute("sub", (one, step(b.compute("mul", (t, t), node, cdt))), node, cdt))), node, cdt)
    one_minus_square = b.compute("fma", (b.compute("fneg", (t,), node, cdt), t, one), node, cdt)
    return b.compute("mul", (g, one_minus_square), node, cdt)


def _sigmoid_backward(b: Any, node: torch.fx.Node, grad: Any, y: Any) -> int:
    """grad * (1 - y) * y, in that order on every device (its decomposition's
    `grad * (y * (1 - y))` differed from eager's in 1317 of 4096 float32 values); each
    step rounded where eager's kernel computes in float16/bfloat16 (operands.steps: cuda/xpu, and
    float16 on cpu)."""
    cdt = _out_cdt(node)
    g, t = _arg(b, grad, cdt, node), _arg(b, y, cdt, node)
    step = steps(b, node, cpu=(torch.float16,)) or (lambda value: value)
    one_minus = step(b.compute("sub", (b.constant(1.0, cdt), t), node, cdt))
    return b.compute("mul", (step(b.compute("mul", (g, one_minus), node, cdt)), t), node, cdt)


def _fma(b: Any, node: torch.fx.Node, *operands: Any) -> int:
    cdt = _out_cdt(node)
    return b.compute("fma", tuple(_arg(b, o, cdt, node) for o in operands), node, cdt)


_reg((aten.add.Tensor, aten.add.Scalar), checker(WRAPPING, READABLE, {"alpha": None}), _add_sub("add"))
_reg((aten.sub.Tensor, aten.sub.Scalar), checker(WRAPPING, READABLE, {"alpha": None}), _add_sub("sub"))
_reg((aten.lerp.Scalar, aten.lerp.Tensor), checker(FLOATS, FLOATS), _lerp)
_reg((aten.addcmul.default,), checker(WRAPPING, WRAPPING, {"value": None}), _addc("mul"))
_reg((aten.addcdiv.default,), checker(FLOATS, FLOATS, {"value": None}), _addc("truediv"))
_reg((aten.tanh_backward.default,), checker(FLOATS, FLOATS), _tanh_backward)
_reg((aten.sigmoid_backward.default,), checker(FLOATS, FLOATS), _sigmoid_backward)
_reg((prims.fma.default,), checker(FLOATS, FLOATS), _fma)
