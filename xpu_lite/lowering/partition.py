"""aten FX graph + DecompPlan -> one Decision per node.

Input: the functional aten graph from AOTAutograd (node.meta["val"] holds fake values with
symbolic sizes). Output: {node name: Decision}. Calls lowering checkers only.
"""
from __future__ import annotations

import dataclasses
import operator
from typing import Any

import torch
import torch.fx

from .. import _torch_compat as compat
from ..config import LiteConfig
from ..decomp import OP_BY_OP_KEY, DecompPlan, in_region_meta, is_random, own_decomposition_reason
from ..runtime import DEVICE_PREFERENCE
from .complex_pairs import float_pairs
from .decisions import SUBGRAPHS_AS_TRACED, SUBGRAPHS_COMPILED, Decision, DecisionKind, FallbackKind, FallbackReason, LoweringError
from .registry import LOWERINGS
from .views import (VIEW_OPS, absolute_offset_of_an_input, retrace_stale_views, slices_for_splits, view_rejection,
                    whole_slice_scatters)

aten = torch.ops.aten

# Functions whose result is a size/scalar computed from sizes: plain Python in the wrapper.
SIZE_FUNCTIONS: frozenset[Any] = frozenset(
    {
        aten.sym_size.int, aten.sym_stride.int, aten.sym_numel.default, aten.sym_storage_offset.default,
        operator.add, operator.sub, operator.mul, operator.floordiv, operator.truediv, operator.mod,
        operator.pow, operator.neg, operator.pos, operator.abs, operator.eq, operator.ne, operator.lt,
        operator.le, operator.gt, operator.ge, operator.and_, operator.or_, operator.not_,
        torch.sym_float, torch.sym_int, torch.sym_max, torch.sym_min, torch.sym_not, torch.sym_ite,
        torch.sym_sqrt,
    }
)
ASSERT_FUNCTIONS: frozenset[Any] = frozenset(
    {aten._assert_scalar.default, aten.sym_constrain_range_for_size.default, aten.sym_constrain_range.default}
)
DATA_DEPENDENT_OPS: frozenset[Any] = frozenset({aten._local_scalar_dense.default, aten.nonzero.default})
# asserts on a tensor's values that decompositions leave (one_hot's classes in range)
TENSOR_ASSERTS: frozenset[Any] = frozenset({aten._assert_async.default, aten._assert_async.msg})


# on a backward node the forward computes too (backend._marking_recomputed): not saved, computed again
RECOMPUTED_KEY = "xpu_lite_recomputed"


def op_name(target: Any) -> str:
    if isinstance(target, str):
        return target
    if isinstance(target, torch._ops.OpOverload):
        return str(target)
    return getattr(target, "__name__", repr(target))


def partition(gm: torch.fx.GraphModule, plan: DecompPlan, device_type: str) -> dict[str, Decision]:
    """Decide every node. First, selected splits become one slice per output, selected
    complex views read as floats become views of float pairs (complex_pairs.py) and views
    whose traced values went stale are traced again (views.py): each edits the graph."""
    compiled = lambda node: node.target not in plan.kept and selected(node, plan.config)  # noqa: E731
    slices_for_splits(gm, compiled)
    float_pairs(gm, compiled)
    whole = whole_slice_scatters(gm, compiled) if device_type in DEVICE_PREFERENCE else {}
    retrace_stale_views(gm)  # also the views of what whole_slice_scatters replaced
    decisions = {
        node.name: decide(node, plan.config, plan.kept, device_type)
        for node in gm.graph.nodes
        if node.op in ("call_function", "call_method", "call_module", "get_attr")
    }
    for src, names in whole.items():  # explain names them beside what stands for them
        d = decisions[src]
        note = f"also the result of {', '.join(names)}: a slice_scatter of every element is its source"
        decisions[src] = dataclasses.replace(d, note="; ".join(filter(None, (d.note, note))))
    return decisions


def decide(node: torch.fx.Node, config: LiteConfig, kept: dict[Any, str], device_type: str) -> Decision:
    target = node.target
    name, op = node.name, op_name(target)
    note = _origin(node)

    def fallback(kind: FallbackKind, detail: str) -> Decision:
        return Decision(name, op, DecisionKind.FALLBACK, FallbackReason(kind, op, detail), note)

    if template := getattr(target, "template", None):  # a kernel of its own (codegen/flex_attention.py)
        return Decision(name, template.replace(" ", "_"), DecisionKind.TEMPLATE, note=note, kernel=target.label)
    if target in SIZE_FUNCTIONS:
        return Decision(name, op, DecisionKind.SIZE, note=note)
    if target in ASSERT_FUNCTIONS:
        return Decision(name, op, DecisionKind.ASSERT, note=note)
    if target is operator.getitem:
        return Decision(name, op, DecisionKind.UNPACK, note=note)
    if node.op == "get_attr":
        return Decision(name, op, DecisionKind.CONSTANT, note=note)
    if node.meta.get(SUBGRAPHS_COMPILED):
        return fallback(FallbackKind.CONTROL_FLOW, f"eager's {target.name()} calls its subgraphs, each compiled as a graph "
                                                   "of its own")
    if why := node.meta.get(SUBGRAPHS_AS_TRACED):
        why = f"eager's {target.name()} calls its subgraphs as traced, not compiled: {why}"
        if config.strict:  # their kernels' nodes would run eagerly
            raise LoweringError(op, name, f"strict=True and {why}")
        return fallback(FallbackKind.CONTROL_FLOW, why)
    if is_random(target) and (by_design := LOWERINGS.declined(target)) is not None:
        return fallback(FallbackKind.ATEN_KERNEL, by_design)  # attention, random only by its dropout
    if target in kept:
        return fallback(FallbackKind.RANDOM_OP if is_random(target) else FallbackKind.KEPT_OP, kept[target])
    if is_random(target):
        return fallback(FallbackKind.RANDOM_OP, "runs eagerly to keep the eager RNG stream")
    if not selected(node, config):
        return fallback(FallbackKind.OUTSIDE_REGION, "lite mode: not in a compile region")
    if target in DATA_DEPENDENT_OPS:
        return fallback(FallbackKind.DATA_DEPENDENT, "result size or value depends on tensor data")
    if target in TENSOR_ASSERTS:
        return fallback(FallbackKind.DATA_DEPENDENT, "checks a tensor's values, raising eager's error where they fail")
    if isinstance(target, torch._ops.OpOverload) and target._schema.is_mutable:
        return fallback(FallbackKind.MUTATION, "writes its inputs in place")
    val = node.meta.get("val")
    if isinstance(val, torch.Tensor) and val.device.type != device_type:
        # decompositions make cpu 0-dim tensors (scalar_tensor) that eager mixes with device
        # tensors; a kernel on the device cannot store (or view) host memory
        return fallback(FallbackKind.OTHER_DEVICE, f"its result is a {val.device.type} tensor, the kernels run on {device_type}")
    if device_type not in DEVICE_PREFERENCE:  # meta tensors (shapes only), mps, ...
        return fallback(FallbackKind.OTHER_DEVICE, f"{device_type} tensors: Triton kernels run on {', '.join(DEVICE_PREFERENCE)}")
    if (by_design := LOWERINGS.declined(target)) is not None:
        return fallback(FallbackKind.ATEN_KERNEL, by_design)
    if target is compat.TRITON_KERNEL_FUNCTIONAL:  # strict=True accepts it: it is a Triton kernel
        return fallback(FallbackKind.USER_KERNEL, f"{compat.user_triton_kernel_name(node)} (@triton.jit), launched as written")
    if (absolute := absolute_offset_of_an_input(node)) is not None:
        return fallback(FallbackKind.ATEN_KERNEL, absolute)
    not_a_view = view_rejection(node)
    if not_a_view is None:
        return Decision(name, op, DecisionKind.VIEW, note=note)
    if isinstance(val, torch.Tensor) and compat.statically_known_true(val.numel() == 0):
        # (sizes that are symbols known to be 0 as well as literal ones: a kernel's index
        # math would divide by its 0 strides)
        return fallback(FallbackKind.ATEN_KERNEL, "an empty result: no values for a kernel to compute, aten makes it")
    not_lowered = LOWERINGS.rejection(node)
    if not_lowered is None:
        return Decision(name, op, DecisionKind.KERNEL, note=note)
    if _host_math(node, val):
        # on a GPU the same nodes are `other device` ones: host math on every device
        return fallback(FallbackKind.HOST_SCALAR, "float64 math of 0-dim host values (a Python float under dynamic=True, "
                                                  "which AOTAutograd makes a tensor), as on every device")
    if target not in LOWERINGS and (decomposition := own_decomposition_reason(target)) is not None:
        not_lowered = f"{not_lowered}; regions decompose it, but not this call ({decomposition})"
    why = not_a_view if target in VIEW_OPS else not_lowered
    if config.strict:
        raise LoweringError(op, name, f"strict=True and no Triton lowering accepts this node: {why}")
    return fallback(FallbackKind.NO_LOWERING, why)


def _host_scalar(val: Any) -> bool:
    return isinstance(val, torch.Tensor) and val.dim() == 0 and val.device.type == "cpu"


def _host_float64(val: Any) -> bool:
    return _host_scalar(val) and val.dtype == torch.float64


def _host_math(node: torch.fx.Node, val: Any) -> bool:
    """float64 math of 0-dim host values only (a reduction of a float64 tensor to 0 dims is
    not: on a GPU that tensor is the device's)."""
    inputs = [a.meta.get("val") for a in node.all_input_nodes]
    if not all(_host_scalar(v) for v in inputs if isinstance(v, torch.Tensor)):
        return False
    return _host_float64(val) or (_host_scalar(val) and any(_host_float64(v) for v in inputs))


def selected(node: torch.fx.Node, config: LiteConfig) -> bool:
    """Chosen for compilation: the default mode, a compile_ops op or a node in a region."""
    return not config.lite or node.target in config.compile_ops or in_region_meta(node.meta)


def _origin(node: torch.fx.Node) -> str:
    if node.meta.get(RECOMPUTED_KEY):
        return "; ".join(filter(None, ("recomputed in the backward (the forward does not save it)", _traced_origin(node))))
    return _traced_origin(node)


def _traced_origin(node: torch.fx.Node) -> str:
    if op_by_op := (node.meta.get("custom") or {}).get(OP_BY_OP_KEY):
        return f"from {op_by_op}"  # a kept op's body, run op by op (decomp.plan._op_by_op)
    original = node.meta.get("original_aten")
    if not isinstance(original, torch._ops.OpOverload) or str(original) == op_name(node.target):
        return ""
    if (node.target is operator.getitem and isinstance(node.args[0], torch.fx.Node)
            and op_name(node.args[0].target) == str(original)):
        return ""  # an output of the op itself (a kept native_dropout's), not of a decomposition of it
    return f"from {original} (decomposed)"
