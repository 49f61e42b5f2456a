"""prims ops that reach the wrapper as eager fallbacks, called as the aten op they run.

Input: the aten FX graph and its decisions. Output: {fallback node name: the aten overload
the wrapper calls instead}; `aten_arguments` gives that call's arguments.

A `prims.*` op has no C++ kernel: calling one runs torch/_prims' Python implementation,
which checks metadata in Python before it calls aten (~50 µs a call on cpu, against a few
µs for the aten call itself). AOTAutograd's tensorify_python_scalars pass puts
`prims.convert_element_type` into graphs wherever Dynamo passes a Python float as a tensor
under dynamic=True (the `eps` of every RMSNorm: 13 calls in a 2-layer llama's forward).
`prims.convert_element_type(a, dtype)` is `torch.empty_like(a, dtype=dtype)` followed by
`copy_` of `a` into it, which is what `aten._to_copy(a, dtype=dtype)` does (the same
memory-format rule, the same copy kernel); tests/test_wrapper.py compares the two over
layouts (transposed, sliced, expanded, 0-dim) and dtype pairs.
"""
from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from typing import Any

import torch
import torch.fx

from ..lowering import Decision, DecisionKind
from ..lowering.kernel_builder import Group

aten, prims = torch.ops.aten, torch.ops.prims

ATEN_FOR_PRIMS: dict[Any, torch._ops.OpOverload] = {prims.convert_element_type.default: aten._to_copy.default}


def plan_prims(gm: torch.fx.GraphModule, decisions: dict[str, Decision]) -> dict[str, torch._ops.OpOverload]:
    """{fallback node name: the aten overload called instead of its prims op}."""
    return {
        node.name: ATEN_FOR_PRIMS[node.target]
        for node in gm.graph.nodes
        if node.target in ATEN_FOR_PRIMS and node.name in decisions and decisions[node.name].kind is DecisionKind.FALLBACK
    }


def aten_arguments(node: torch.fx.Node) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """(args, kwargs) of the ATEN_FOR_PRIMS call for a planned prims node."""
    tensor, dtype = node.args  # convert_element_type(Tensor a, ScalarType dtype) -> _to_copy(a, *, dtype)
    return (tensor,), {"dtype": dtype}


# -- host floats --------------------------------------------------------------------------
# The cast chain of a tensorified Python float (float64 input -> float64 -> float32) ends in
# kernels that read it by value (`.item()`, a float32 argument): no tensor need exist. The
# wrapper computes each cast on the Python float instead (host_cast), as eager's copy kernel
# converts: C's double -> float, and to float16/bfloat16 through float (c10::Half and
# c10::BFloat16 are built from a float), round to nearest even, overflow to inf.
HOST_FLOATS = (torch.float64, torch.float32, torch.float16, torch.bfloat16)


def _host_float(val: Any) -> bool:
    return isinstance(val, torch.Tensor) and val.dim() == 0 and val.device.type == "cpu" and val.dtype in HOST_FLOATS


def _is_host_cast(node: torch.fx.Node, decisions: dict[str, Decision]) -> bool:
    """A fallback cast of a 0-dim host float to another (dtype alone: no device or layout)."""
    if node.op != "call_function" or node.name not in decisions or decisions[node.name].kind is not DecisionKind.FALLBACK:
        return False
    if node.target is prims.convert_element_type.default:
        source = node.args[0]
    elif node.target is aten._to_copy.default and set(node.kwargs) <= {"dtype"} and len(node.args) == 1:
        source = node.args[0]
    else:
        return False
    return isinstance(source, torch.fx.Node) and _host_float(source.meta.get("val")) and _host_float(node.meta.get("val"))


def plan_host_values(gm: torch.fx.GraphModule, decisions: dict[str, Decision], groups: Sequence[Group]) -> dict[str, torch.dtype]:
    """{cast node: its dtype} for the host float casts whose every reader is a kernel that
    takes the value by value, or another such cast: the wrapper computes them in Python."""
    read_by_value = {node for g in groups for node, buf in zip(g.external, g.kernel.inputs, strict=True) if buf.by_value}
    members = {member for g in groups for member in (*g.members, *g.inlined)}
    chosen: dict[torch.fx.Node, torch.dtype] = {}
    for node in reversed(gm.graph.nodes):  # readers first
        if _is_host_cast(node, decisions) and node.users and all(
                user in chosen or (user in members and node in read_by_value) for user in node.users):
            chosen[node] = node.meta["val"].dtype
    return {node.name: dtype for node, dtype in reversed(chosen.items())}


def host_cast(value: float, dtype: torch.dtype) -> float:
    """A float64 value as a 0-dim tensor of `dtype` holds it, read back by `.item()`."""
    if dtype is torch.float64 or math.isnan(value):
        return value
    try:
        single = struct.unpack("f", struct.pack("f", value))[0]  # C's (float) cast
    except OverflowError:  # rounds past the largest float
        single = math.copysign(math.inf, value)
    if dtype is torch.float32 or math.isinf(single):
        return single
    if dtype is torch.float16:
        try:
            return struct.unpack("e", struct.pack("e", single))[0]
        except OverflowError:
            return math.copysign(math.inf, single)
    bits = struct.unpack("<I", struct.pack("<f", single))[0]  # bfloat16: c10's round_to_nearest_even
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]
