"""ir.Kernel -> Triton source text (deterministic).

Every size symbol the kernel uses is a runtime int argument; XBLOCK is a constexpr the
wrapper picks from the runtime numel. Values are computed in fp32. The math table has
one column per target: "gpu" (xpu/cuda, real libdevice) and "interpreter" (cpu), where
libdevice functions are stubs and tl.maximum drops NaN, so NaN handling is spelled out.
"""
from __future__ import annotations

import sympy
import torch

from ..lowering import ir
from .emitter import Emitter
from .printer import pexpr

_NAN_MAX = "tl.where({0} != {0}, {0}, tl.where({1} != {1}, {1}, tl.maximum({0}, {1})))"
_NAN_MIN = "tl.where({0} != {0}, {0}, tl.where({1} != {1}, {1}, tl.minimum({0}, {1})))"

# op -> Triton expression; both targets share it unless a target overrides below.
MATH: dict[str, str] = {
    "add": "{0} + {1}",
    "sub": "{0} - {1}",
    "mul": "{0} * {1}",
    "truediv": "{0} / {1}",
    "maximum": _NAN_MAX,
    "minimum": _NAN_MIN,
    "neg": "-{0}",
    "abs": "tl.abs({0})",
    "exp": "tl.exp({0})",
    "log": "tl.log({0})",
    "sqrt": "tl.sqrt({0})",
    "rsqrt": "1.0 / tl.sqrt({0})",
    "sin": "tl.sin({0})",
    "cos": "tl.cos({0})",
    "sigmoid": "1.0 / (1.0 + tl.exp(-{0}))",
    "relu": "tl.where({0} < 0.0, 0.0, {0})",  # NaN < 0 is false: NaN propagates as in torch
    "reciprocal": "1.0 / {0}",
}
TARGET_MATH: dict[str, dict[str, str]] = {
    "interpreter": {},
    "gpu": {"rsqrt": "tl.rsqrt({0})"},
}
_TL_DTYPE = {torch.float32: "tl.float32", torch.float16: "tl.float16", torch.bfloat16: "tl.bfloat16"}


def target_for(device_type: str) -> str:
    return "interpreter" if device_type == "cpu" else "gpu"


def kernel_source(kernel: ir.Kernel, target: str) -> str:
    table = {**MATH, **TARGET_MATH[target]}
    params = [b.name for b in kernel.inputs] + [b.name for b in kernel.outputs] + ["xnumel"]
    params += [str(s) for s in kernel.size_symbols] + ["XBLOCK: tl.constexpr"]
    out = Emitter()
    out.line(f"# xpu_lite {kernel.name}: fused {', '.join(kernel.nodes)} (target: {target})")
    out.line("import triton.language as tl")
    out.line()
    out.line()
    out.line(f"def {kernel.name}({', '.join(params)}):")
    with out.indent():
        out.line("xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)")
        out.line("xmask = xindex < xnumel")
        for i, value in enumerate(kernel.values):
            out.line(f"tmp{i} = {_value(value, table)}", _comment(value))
        for store in kernel.stores:
            buf = next(b for b in kernel.outputs if b.name == store.buffer)
            out.line(f"tl.store({store.buffer} + ({pexpr(store.index)}), tmp{store.value}.to({_TL_DTYPE[buf.dtype]}), mask=xmask)")
    return out.text()


def _value(value: ir.Value, table: dict[str, str]) -> str:
    if isinstance(value, ir.Load):
        index = pexpr(value.index)
        if ir.XINDEX not in value.index.free_symbols:  # a broadcast scalar: still one pointer per lane
            index = f"{index} + 0 * xindex"
        return f"tl.load({value.buffer} + ({index}), mask=xmask, other=0.0).to(tl.float32)"
    if isinstance(value, ir.Constant):
        return repr(float(value.value))
    return "(" + table[value.op].format(*(f"tmp{a}" for a in value.args)) + ")"


def _comment(value: ir.Value) -> str:
    return value.node if isinstance(value, ir.Compute) else ""


def numel_text(kernel: ir.Kernel) -> str:
    return pexpr(kernel.numel)


def size_args(kernel: ir.Kernel) -> list[sympy.Symbol]:
    return list(kernel.size_symbols)
