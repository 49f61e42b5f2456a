"""Buffer reuse for eager fallbacks: which calls may write their result into their first input.

Input: the aten FX graph and its decisions. Output: {node name: in-place overload} for the
fallbacks the wrapper emits as `torch.ops.aten.mul_.Tensor(buf0, ...)` instead of
`torch.ops.aten.mul.Tensor(buf0, ...)`. Eager runs the same kernel either way: every pair
below is a *structured* operator, whose functional and in-place variants are generated
from one `.out` kernel (one meta function, one implementation, on CPU, CUDA and XPU alike);
tests/test_inplace.py checks each pair against torch's native_functions.yaml. What the
in-place call saves is an allocation per op (and the memory): the wrapper's share of a
chain of small pointwise ops.

The first input may be overwritten only when nothing can observe it:
- it was made by a fallback call of a structured functional operator (which always
  allocates its output, so its storage is shared with nothing: a composite such as
  `dropout` or `type_as` may return its input itself, and is never such a producer), of
  one of the composites below built only from such operators (`linear`, `matmul`, ...), or
  of `layer_norm` on CPU and CUDA (an output of a multi-output call counts alike);
- this call reads it once, and every other reader runs before it (size reads aside); a
  reader whose result may alias it (anything not known to allocate: a view, a composite)
  counts with its own readers, so no alias is read later; none of them is a graph output
  (so nothing is saved for backward);
- the result has its dtype, device, sizes and strides (no broadcast into a bigger shape,
  no type promotion, the layout eager's out-of-place call would have chosen);
- nothing in the graph is a ZeroTensor (`_efficientzerotensor`), whose kernels may return
  an input as the result.
"""
from __future__ import annotations

import operator

import torch
import torch.fx

from .._torch_compat import sym_expr
from ..lowering import Decision, DecisionKind

aten = torch.ops.aten

# Structured pointwise operators: (functional, in-place), both delegating to one `.out` kernel.
STRUCTURED_INPLACE: tuple[tuple[str, str], ...] = (
    ("acos", "acos_"), ("acosh", "acosh_"), ("add.Tensor", "add_.Tensor"),
    ("addcdiv", "addcdiv_"), ("addcmul", "addcmul_"), ("asin", "asin_"), ("asinh", "asinh_"),
    ("atan", "atan_"), ("atan2", "atan2_"), ("atanh", "atanh_"),
    ("bitwise_and.Tensor", "bitwise_and_.Tensor"), ("bitwise_left_shift.Tensor", "bitwise_left_shift_.Tensor"),
    ("bitwise_not", "bitwise_not_"), ("bitwise_or.Tensor", "bitwise_or_.Tensor"),
    ("bitwise_right_shift.Tensor", "bitwise_right_shift_.Tensor"), ("bitwise_xor.Tensor", "bitwise_xor_.Tensor"),
    ("ceil", "ceil_"), ("clamp", "clamp_"), ("clamp.Tensor", "clamp_.Tensor"), ("clamp_max", "clamp_max_"),
    ("clamp_max.Tensor", "clamp_max_.Tensor"), ("clamp_min", "clamp_min_"), ("clamp_min.Tensor", "clamp_min_.Tensor"),
    ("copysign.Tensor", "copysign_.Tensor"), ("cos", "cos_"), ("cosh", "cosh_"), ("digamma", "digamma_"),
    ("div.Tensor", "div_.Tensor"), ("div.Tensor_mode", "div_.Tensor_mode"), ("elu", "elu_"),
    ("eq.Scalar", "eq_.Scalar"), ("eq.Tensor", "eq_.Tensor"), ("erf", "erf_"), ("erfc", "erfc_"),
    ("erfinv", "erfinv_"), ("exp", "exp_"), ("exp2", "exp2_"), ("expm1", "expm1_"), ("floor", "floor_"),
    ("fmod.Tensor", "fmod_.Tensor"), ("frac", "frac_"), ("gcd", "gcd_"), ("ge.Scalar", "ge_.Scalar"),
    ("ge.Tensor", "ge_.Tensor"), ("gelu", "gelu_"), ("gt.Scalar", "gt_.Scalar"), ("gt.Tensor", "gt_.Tensor"),
    ("hardsigmoid", "hardsigmoid_"), ("heaviside", "heaviside_"), ("hypot", "hypot_"), ("i0", "i0_"),
    ("igamma", "igamma_"), ("igammac", "igammac_"), ("lcm", "lcm_"), ("le.Scalar", "le_.Scalar"),
    ("le.Tensor", "le_.Tensor"), ("leaky_relu", "leaky_relu_"), ("lerp.Scalar", "lerp_.Scalar"),
    ("lerp.Tensor", "lerp_.Tensor"), ("lgamma", "lgamma_"), ("log", "log_"), ("log10", "log10_"),
    ("log1p", "log1p_"), ("log2", "log2_"), ("lt.Scalar", "lt_.Scalar"), ("lt.Tensor", "lt_.Tensor"),
    ("mish", "mish_"), ("mul.Tensor", "mul_.Tensor"), ("ne.Scalar", "ne_.Scalar"), ("ne.Tensor", "ne_.Tensor"),
    ("neg", "neg_"), ("nextafter", "nextafter_"), ("pow.Tensor_Scalar", "pow_.Scalar"),
    ("pow.Tensor_Tensor", "pow_.Tensor"), ("reciprocal", "reciprocal_"), ("remainder.Tensor", "remainder_.Tensor"),
    ("round", "round_"), ("round.decimals", "round_.decimals"), ("rsqrt", "rsqrt_"), ("sgn", "sgn_"),
    ("sigmoid", "sigmoid_"), ("sign", "sign_"), ("silu", "silu_"), ("sin", "sin_"), ("sinc", "sinc_"),
    ("sinh", "sinh_"), ("sqrt", "sqrt_"), ("sub.Tensor", "sub_.Tensor"), ("tan", "tan_"), ("tanh", "tanh_"),
    ("threshold", "threshold_"), ("trunc", "trunc_"), ("xlogy.Tensor", "xlogy_.Tensor"),
)
# Structured functional operators that are not pointwise: their outputs are fresh too.
STRUCTURED_FRESH: tuple[str, ...] = (
    "_log_softmax", "_log_softmax_backward_data", "_softmax", "_softmax_backward_data", "addmm", "addmv",
    "amax", "amin", "baddbmm", "bmm", "cat", "cumprod", "cumsum", "gather", "glu", "index.Tensor",
    "linalg_vector_norm", "mean.dim", "mm", "prod.dim_int", "sum.dim_IntList", "tril", "triu",
)
# Composites whose C++ bodies (device-independent) return a result of the structured operators
# above or a view of one (`linear`: addmm, or matmul then add_; `matmul`: dot/mv/mm/bmm, folded
# by views; `softmax`/`log_softmax`: `_softmax`/`_log_softmax`, after a dtype cast): fresh too.
FRESH_COMPOSITES: tuple[str, ...] = ("linear", "log_softmax.int", "matmul", "softmax.int")
# Devices whose kernels are ATen's own; XPU's come from torch-xpu-ops, which nothing here can
# check. On them, and only there:
ATEN_KERNEL_DEVICES: tuple[str, ...] = ("cpu", "cuda")
# - not structured, but their kernels allocate their output (`layer_norm` returns the first
#   output of `native_layer_norm`);
FRESH_ON_CPU_CUDA: tuple[str, ...] = ("layer_norm", "native_layer_norm")
# - not structured, but `relu`/`relu_` are `clamp_min(self, 0)`/`clamp_min_(self, 0)`
#   (aten/src/ATen/native/Activation.cpp); elsewhere relu keeps its out-of-place call.


def _op(name: str) -> torch._ops.OpOverload:
    base, _, overload = name.partition(".")
    return getattr(getattr(aten, base), overload or "default")


_INPLACE: dict[torch._ops.OpOverload, torch._ops.OpOverload] = {_op(f): _op(i) for f, i in STRUCTURED_INPLACE}
_FRESH: frozenset[torch._ops.OpOverload] = frozenset(_INPLACE) | {_op(n) for n in STRUCTURED_FRESH + FRESH_COMPOSITES}


def plan_inplace(gm: torch.fx.GraphModule, decisions: dict[str, Decision], device_type: str) -> dict[str, torch._ops.OpOverload]:
    """{fallback node name: the in-place overload it is emitted as}."""
    if any(n.target is aten._efficientzerotensor.default for n in gm.graph.nodes):
        return {}
    inplace = dict(_INPLACE)
    fresh = set(_FRESH)
    if device_type in ATEN_KERNEL_DEVICES:
        inplace[aten.relu.default] = aten.relu_.default
        fresh.add(aten.relu.default)
        fresh.update(_op(n) for n in FRESH_ON_CPU_CUDA)
    position = {node: i for i, node in enumerate(gm.graph.nodes)}
    plan: dict[str, torch._ops.OpOverload] = {}
    for node in gm.graph.nodes:
        variant = inplace.get(node.target)
        if variant is None or not _is_fallback(node, decisions) or not node.args:
            continue
        first = node.args[0]
        if (
            isinstance(first, torch.fx.Node)
            and _allocated(first, decisions, fresh)
            and _reads_once(node, first)
            and _unread_after(first, node, position, decisions, fresh)
            and _same_buffer(first.meta.get("val"), node.meta.get("val"))
            and all(_plain(a.meta.get("val")) for a in (*node.all_input_nodes, *first.all_input_nodes))
        ):
            plan[node.name] = variant
    return plan


def _is_fallback(node: torch.fx.Node, decisions: dict[str, Decision]) -> bool:
    decision = decisions.get(node.name)
    return node.op == "call_function" and decision is not None and decision.kind is DecisionKind.FALLBACK


_EAGER = (DecisionKind.FALLBACK, DecisionKind.UNPACK, DecisionKind.VIEW)  # run by the wrapper in graph order


def _allocated(node: torch.fx.Node, decisions: dict[str, Decision], fresh: set[torch._ops.OpOverload]) -> bool:
    """Made by a fallback call that allocates it (or unpacked from the outputs of one)."""
    decision = decisions.get(node.name)
    if node.target is operator.getitem and decision is not None and decision.kind is DecisionKind.UNPACK:
        node = node.args[0]
    return node.target in fresh and _is_fallback(node, decisions)


def _unread_after(
    value: torch.fx.Node, node: torch.fx.Node, position: dict[torch.fx.Node, int],
    decisions: dict[str, Decision], fresh: set[torch._ops.OpOverload],
) -> bool:
    """Whether every reader of `value` other than `node`, and every reader of a result that may
    alias it, runs eagerly before `node` (or reads only sizes)."""
    pending, seen = [u for u in value.users if u is not node], set()
    while pending:
        user = pending.pop()
        if user in seen:
            continue
        seen.add(user)
        decision = decisions.get(user.name)
        if decision is not None and decision.kind is DecisionKind.SIZE:
            continue  # sizes and strides: the in-place call keeps them
        if position[user] >= position[node] or decision is None or decision.kind not in _EAGER:
            return False  # `node` itself through an alias, a later reader, the graph output, a kernel
        if user.target not in fresh:
            pending.extend(user.users)  # its result may alias `value`
    return True


def _reads_once(node: torch.fx.Node, value: torch.fx.Node) -> bool:
    flat = [*node.args, *node.kwargs.values()]
    flat += [item for a in flat if isinstance(a, (list, tuple)) for item in a]
    return sum(a is value for a in flat) == 1


def _plain(val: object) -> bool:
    """A dense strided tensor of an ordinary dtype (or a non-tensor argument)."""
    if not isinstance(val, torch.Tensor):
        return not isinstance(val, (list, tuple)) or all(_plain(v) for v in val)
    return val.layout is torch.strided and not val.is_quantized


def _same_buffer(a: object, b: object) -> bool:
    """Whether `b` (the out-of-place result) could be written into `a`: same dtype, device,
    sizes and strides, compared as expressions (equal expressions, equal for every size)."""
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        return False
    if a.dtype != b.dtype or a.device != b.device or a.dim() != b.dim():
        return False
    pairs = [*zip(a.shape, b.shape), *zip(a.stride(), b.stride()), (a.storage_offset(), b.storage_offset())]
    return all(_expr_equal(x, y) for x, y in pairs)


def _expr_equal(x: object, y: object) -> bool:
    ex, ey = sym_expr(x), sym_expr(y)
    return ex is not None and ey is not None and ex == ey
