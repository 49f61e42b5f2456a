"""Every private PyTorch API xpu_lite relies on, in one place.

A torch upgrade that moves one of these should touch this file only. Tested against
torch 2.13 (CI pin); the imports below are the contract.
"""
from __future__ import annotations

import contextlib
import logging
import weakref
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from typing import Any, NamedTuple

import sympy
import torch
import torch.fx.traceback as fx_traceback
from torch._decomp import core_aten_decompositions, decomposition_table, get_decompositions
from torch._dispatch.python import enable_python_dispatcher
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.partitioners import min_cut_rematerialization_partition
from torch._subclasses import fake_impls
from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols, guard_or_true, statically_known_true
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map, tree_unflatten
from torch.utils._sympy.functions import FloorDiv, Max, Min, Mod, ModularIndexing, PythonMod
from torch.utils._sympy.printers import PythonPrinter
from torch.utils.checkpoint import CheckpointPolicy

__all__ = [
    "aot_compile",
    "recomputing_partition",
    "core_aten_decompositions",
    "decomposition_table",
    "get_decompositions",
    "current_annotation",
    "below_autograd",
    "enable_python_dispatcher",
    "fake_mode_of",
    "trace_contiguous",
    "real_tensors",
    "free_unbacked_symbols",
    "statically_known_true",
    "guard_or_true",
    "in_dispatcher",
    "dispatcher_op_names",
    "provably_equal",
    "override_cia_kernels",
    "cia_installs",
    "CiaInstall",
    "override_autograd_kernel",
    "call_past_python_kernels",
    "override_fake_rules",
    "preservable_cia_ops",
    "cia_registrations",
    "PythonPrinter",
    "FLOOR_INDEX_FUNCS",
    "KERNEL_INDEX_FUNCS",
    "FloorDiv",
    "ModularIndexing",
    "sym_expr",
    "cia_decomposition",
    "TorchDispatchMode",  # tools/model_check.py's rounding jitter
    "guard_latency_unmeasured",  # the test suite's and the OpInfo sweep's compiles
    "opinfo_test_lookup_by_frames",  # the test suite's OpInfo samples
    "tree_map",
]

DK = torch._C.DispatchKey


def aot_compile(gm: torch.fx.GraphModule, example_inputs: list[Any], **kwargs: Any) -> Callable[..., Any]:
    """AOTAutograd (aot_module_simplified with `kwargs`) as aot_eager and Inductor call it,
    through Dynamo's aot_autograd helper. It counts the call: DDPOptimizer reads that count
    to know that a bucket's compiled function returns fake outputs on its first call, which
    it makes while compiling (without the count, that first call was the user's, and
    returned fake tensors). It also keeps Dynamo out of the compiled function and of the
    backward's compiler."""
    return aot_autograd(**kwargs)(gm, example_inputs)


def recomputing_partition(never_recomputed: Callable[[torch.fx.Node], bool] | None = None) -> Callable[..., Any]:
    """AOTAutograd's partition of the joint graph into forward and backward as Inductor's:
    a min cut over which values the forward saves, where the backward recomputes cheap
    ops (pointwise, views, reductions; not products, convolutions or random ops) from
    fewer saved values. torch._functorch.config.activation_memory_budget bounds it, as
    for Inductor: below 1.0 it recomputes products too. Nodes `never_recomputed` says so of
    (lite mode's eager ops) are tagged as activation checkpointing's MUST_SAVE, which the
    cut never recomputes; a node the user's checkpoint tagged keeps its tag.

    Call this before a trace, not inside one. The partition's CSE pass imports Inductor's
    pattern matcher, which imports its lowerings; those check, once, at import, that no op
    they run eagerly has an entry in torch._decomp's table, and with the environment
    variable CI set they raise where one has (a trace's fake rules for the upsampling
    backwards, override_fake_rules, are such entries while it runs). Imported here,
    outside any trace, they find torch's table as torch built it."""
    import torch._inductor.pattern_matcher  # noqa: F401

    def partition(joint: torch.fx.GraphModule, joint_inputs: Any, **kwargs: Any) -> Any:
        if never_recomputed is not None:
            for node in joint.graph.nodes:
                if node.op == "call_function" and "recompute" not in node.meta and never_recomputed(node):
                    node.meta["recompute"] = CheckpointPolicy.MUST_SAVE
        return min_cut_rematerialization_partition(joint, joint_inputs, compiler="inductor", **kwargs)

    return partition


# The sympy functions of size and index expressions that a Triton kernel computes as
# PythonPrinter prints them (+, *, //, %, max, min on its int arguments); any other
# (TruncToInt, ToFloat, ... of a scale factor's output size) is computed by the wrapper.
KERNEL_INDEX_FUNCS = frozenset({sympy.Add, sympy.Mul, sympy.Pow, FloorDiv, ModularIndexing, PythonMod, Mod, Max, Min})
FLOOR_INDEX_FUNCS = frozenset({FloorDiv, PythonMod})  # Python's floor semantics (Mod assumes operands >= 0)
_AUTOGRAD_KEY = {
    "cpu": DK.AutogradCPU,
    "cuda": DK.AutogradCUDA,
    "xpu": DK.AutogradXPU,
    "meta": DK.AutogradMeta,
}
_BACKEND_KEY = {"cpu": DK.CPU, "cuda": DK.CUDA, "xpu": DK.XPU, "meta": DK.Meta}


def current_annotation() -> dict[str, Any]:
    """The `custom` annotations of the FX node being traced right now (AOTAutograd retrace).

    While the backward is traced, those of the forward node whose autograd node is being
    differentiated (same seq_nr): AOTAutograd copies them onto the backward nodes only after
    the trace (`copy_fwd_metadata_to_bw_nodes`), too late to decide what decomposes, so a
    region's `sigmoid_backward` stayed one node with no lowering."""
    meta = fx_traceback.current_meta
    if meta.get("in_grad_fn", 0) > 0 and meta.get("grad_fn_seq_nr"):
        forward = _forward_annotation(meta["grad_fn_seq_nr"][-1])
        if forward is not None:
            return forward
    return meta.get("custom") or {}


class _SeqNrIndex:
    """seq_nr -> `custom` of the first node with it, over a graph being traced; read on."""

    def __init__(self) -> None:
        self.last: torch.fx.Node | None = None
        self.custom: dict[int, dict[str, Any]] = {}


_SEQ_NR_INDEX: weakref.WeakKeyDictionary[torch.fx.Graph, _SeqNrIndex] = weakref.WeakKeyDictionary()


def _forward_annotation(seq_nr: int) -> dict[str, Any] | None:
    from torch.fx.experimental import proxy_tensor

    tracer = getattr(proxy_tensor._CURRENT_MAKE_FX_TRACER, "fx_tracer", None)
    graph = getattr(tracer, "graph", None)
    if graph is None:
        return None
    index = _SEQ_NR_INDEX.setdefault(graph, _SeqNrIndex())
    if index.last is not None and index.last._erased:  # read again from the start
        index = _SEQ_NR_INDEX[graph] = _SeqNrIndex()
    node = index.last.next if index.last is not None else next(iter(graph.nodes), None)
    while node is not None and node.op != "root":  # the forward's nodes come first
        if "seq_nr" in node.meta:
            index.custom.setdefault(node.meta["seq_nr"], node.meta.get("custom") or {})
        index.last, node = node, node.next
    return index.custom.get(seq_nr)


def below_autograd() -> contextlib.AbstractContextManager[None]:
    return torch._C._AutoDispatchBelowAutograd()


def functorch_transforms_active() -> bool:
    """Inside torch.func.grad/vjp/jacrev/vmap (traced by Dynamo too)."""
    return torch._C._are_functorch_transforms_active()


_AUTOCAST_KEYS = {"cpu": DK.AutocastCPU, "cuda": DK.AutocastCUDA, "xpu": DK.AutocastXPU}


def autocast_reaches_body(flat: list[Any]) -> bool:
    """Would the ops of a CompositeImplicitAutograd body called here with these arguments be
    cast by autocast, as in eager? Autocast is on for a tensor's device and its dispatch key
    is not excluded: the op has no autocast kernel of its own (einsum), which would have cast
    its inputs and excluded the key while the op runs (linear's, matmul's)."""
    for device_type in {x.device.type for x in flat if isinstance(x, torch.Tensor)}:
        key = _AUTOCAST_KEYS.get(device_type)
        if key is not None and torch.is_autocast_enabled(device_type) and not torch._C._dispatch_tls_is_dispatch_key_excluded(key):
            return True
    return False


def sdpa_choice_state() -> tuple[Any, ...]:
    """What eager's scaled_dot_product_attention reads to pick and run its kernel: the
    backends `torch.nn.attention.sdpa_kernel` enables, their priority, the math path's
    half-precision reduction."""
    c = torch._C
    return (c._get_flash_sdp_enabled(), c._get_mem_efficient_sdp_enabled(), c._get_math_sdp_enabled(),
            c._get_cudnn_sdp_enabled(), c._get_overrideable_sdp_enabled(), c._get_fa3_sdp_enabled(),
            tuple(c._get_sdp_priority_order()), c._get_math_sdp_allow_fp16_bf16_reduction())


def sym_expr(value: Any) -> sympy.Expr | None:
    """The sympy expression behind a SymInt/SymFloat/SymBool, a constant for plain numbers."""
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return value.node.expr
    if isinstance(value, bool):
        return sympy.true if value else sympy.false
    if isinstance(value, int):
        return sympy.Integer(value)
    return None


def provably_equal(a: sympy.Expr, b: sympy.Expr, fake: Any) -> bool:
    """Whether two size expressions are equal for every input the graph accepts: the same
    expression, or equal under the guards of the ShapeEnv behind the fake tensor `fake`
    (`x.chunk(2, -1)` halves of a dynamic n are `(n + 1) // 2` and `n - (n + 1) // 2`, equal
    once a product of the two has guarded on it)."""
    if a == b:
        return True
    shape_env = getattr(getattr(fake, "fake_mode", None), "shape_env", None)
    return shape_env is not None and shape_env._maybe_evaluate_static(sympy.Eq(a, b)) is sympy.true


def provably_positive(expr: sympy.Expr, fake: Any) -> bool:
    """Whether a size expression is at least 1 for every input the graph accepts (the value
    ranges of the ShapeEnv behind the fake tensor `fake`; a backed size is at least 2 once
    Dynamo has specialized 0 and 1, an unbacked one such as nonzero's may be 0)."""
    if expr.is_number:
        return bool(expr >= 1)
    shape_env = getattr(getattr(fake, "fake_mode", None), "shape_env", None)
    if shape_env is None:
        return False
    lower = shape_env.bound_sympy(expr).lower
    return bool(lower.is_number and lower >= 1)


def cia_registrations() -> frozenset[str]:
    """The operators with a CompositeImplicitAutograd kernel, by name ('aten::layer_norm',
    'mylib::myop'): what preservable_cia_ops is made from. A custom op registered (or a
    Library destroyed) since the last compile changes it (~0.35 ms for ~800 names)."""
    return frozenset(torch._C._dispatch_get_registrations_for_dispatch_key("CompositeImplicitAutograd"))


@lru_cache(maxsize=4)
def preservable_cia_ops(registrations: frozenset[str]) -> frozenset[torch._ops.OpOverload]:
    """Functional CompositeImplicitAutograd ops that may stay one node (torch.export's list),
    made again when cia_registrations() changes (the argument is the cache key)."""
    from torch._export.utils import _collect_all_valid_cia_ops

    return frozenset(_collect_all_valid_cia_ops())


def dispatcher_op_names() -> list[str]:
    """'aten::add.Tensor', ... for every operator the dispatcher has."""
    return torch._C._dispatch_get_all_op_names()


def in_dispatcher(op: torch._ops.OpOverload) -> bool:
    """Whether the dispatcher has `op`. torch.ops also lists TorchScript's own overloads
    (aten.add.t, aten.add.int, aten.einsum.sublist), which no aten graph holds."""
    try:
        torch._C._dispatch_find_schema_or_throw(op._schema.name, op._schema.overload_name)
    except RuntimeError:
        return False
    return True


def is_cia_op(op: torch._ops.OpOverload) -> bool:
    return torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), DK.CompositeImplicitAutograd)


def has_device_kernel(op: torch._ops.OpOverload, device_type: str) -> bool:
    """Does `op` have a kernel of its own for this device type, beside its composite body?

    Then the dispatcher never runs the composite body there: eager calls that kernel and
    differentiates through the op's derivative formula (aten._fused_rms_norm on a CUDA
    build: its CUDA kernel, and _fused_rms_norm_backward for the gradient; on cpu and xpu
    its composite body, differentiated op by op).
    """
    key = _BACKEND_KEY.get(device_type)
    return key is not None and torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), key)


def cia_decomposition(op: torch._ops.OpOverload) -> Callable[..., Any]:
    """The op's own CompositeImplicitAutograd body, callable without recursing into overrides."""
    from torch._export.utils import _get_decomp_for_cia

    return _get_decomp_for_cia(op)


def upsample_output_size(input_size: Any, output_size: Any, scale_factors: Any) -> list[Any]:
    """The output sizes an upsample `.vec` overload computes (C++ `compute_output_size`),
    symbolic where the input's are."""
    from torch._decomp.decompositions import upsample_compute_output_size

    return list(upsample_compute_output_size(input_size, output_size, scale_factors))


@contextlib.contextmanager
def replaced_decomposition_helper(name: str, replacement: Callable[..., Any]) -> Iterator[None]:
    """A module-level helper of torch._decomp.decompositions (`_compute_scale`) replaced for
    the duration of one decomposition call, which looks it up by name."""
    from torch._decomp import decompositions

    original = getattr(decompositions, name)
    setattr(decompositions, name, replacement)
    try:
        yield
    finally:
        setattr(decompositions, name, original)


def suggest_memory_format(tensor: torch.Tensor) -> torch.memory_format:
    from torch._prims_common import suggest_memory_format

    return suggest_memory_format(tensor)


def elementwise_output_perm(*tensors: torch.Tensor) -> list[int]:
    """The dims, outermost first, of the layout TensorIterator gives an elementwise result
    of `tensors` (no guards: an order the sizes do not decide keeps the logical one)."""
    from torch._prims_common import compute_elementwise_output_logical_to_physical_perm

    return list(compute_elementwise_output_logical_to_physical_perm(*tensors)[0])


class _OpRecorder(torch.utils._python_dispatch.TorchDispatchMode):
    """Records each aten op a body dispatches, with its non-tensor arguments."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[tuple[str, str]] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        # autograd's own queries and the detach of what it saves are no steps of the body
        if func.namespace != "prim" and func is not torch.ops.aten.detach.default:
            consts = [repr(a) for a in tree_flatten((args, kwargs))[0] if not isinstance(a, torch.Tensor)]
            self.ops.append((str(func), ", ".join(consts)))
        return func(*args, **kwargs)


def body_steps(op: torch._ops.OpOverload, flat: list[Any], spec: Any,
               keep_requires_grad: bool) -> tuple[list[tuple[str, str]], list[Any], Any] | None:
    """The aten ops (and their non-tensor arguments) that `op`'s composite body dispatches on
    fresh fake tensors with the metadata of those in (args, kwargs) (flattened: `flat`,
    `spec`), outside the trace in progress: with their requires_grad flags, or with none
    requiring grad; with the fresh tensors (one per distinct tensor of `flat`, at its
    positions) and the body's outputs, whose autograd graph shows how the body's gradient
    reaches each. None where the body cannot run that way (data-dependent sizes, ...).
    Sizes a body reads as ints take their example values, and add no guard."""
    tracing_mode = torch._guards.detect_fake_mode(flat)
    if tracing_mode is None or any(isinstance(x, torch.Tensor) and x.layout is not torch.strided for x in flat):
        return None
    # a mode of its own over the trace's ShapeEnv: the sizes stay the trace's symbols
    fake_mode = torch._subclasses.fake_tensor.FakeTensorMode(shape_env=tracing_mode.shape_env)
    # guard-free results (sizes as example values) stay out of the cache the trace shares
    fake_mode.cache_enabled = False
    fake_log = logging.getLogger("torch._subclasses.fake_tensor")
    level = fake_log.level
    fake_log.setLevel(logging.CRITICAL)  # a body that cannot run here is an answer (None), not an error to log
    shape_env = tracing_mode.shape_env
    # The probe must leave the trace as it found it: a body that reads a size as an int
    # (upsample's C++ body does) would guard on it and pin every size of the graph.
    no_guards = shape_env.suppress_guards() if shape_env is not None else contextlib.nullcontext()
    no_symbols = shape_env.ignore_fresh_unbacked_symbols() if shape_env is not None else contextlib.nullcontext()

    def run(sizes: Callable[[Any], Any]) -> tuple[_OpRecorder, list[Any], Any]:
        recorder = _OpRecorder()
        fresh_of: dict[int, Any] = {}  # one fresh tensor per distinct tensor, as the body gets it
        with fake_mode:
            fresh = [
                fresh_of.setdefault(id(x), torch.empty_strided(sizes(x.shape), sizes(x.stride()), dtype=x.dtype, device=x.device)
                                    .requires_grad_(keep_requires_grad and x.requires_grad))
                if isinstance(x, torch.Tensor) else x
                for x in flat
            ]
        args2, kwargs2 = tree_unflatten(fresh, spec)
        with torch.enable_grad(), fake_mode, recorder:
            return recorder, fresh, op._op_dk(DK.CompositeImplicitAutograd, *args2, **kwargs2)

    try:
        with torch.utils._python_dispatch._disable_current_modes(), torch._C._DisablePythonDispatcher(), no_guards, no_symbols:
            try:
                recorder, fresh, out = run(lambda sizes: sizes)
            except Exception:  # noqa: BLE001  (some bodies fail on symbolic sizes: bilinear(x, x)'s)
                recorder, fresh, out = run(lambda sizes: [s.node.hint if isinstance(s, torch.SymInt) else s
                                                          for s in sizes])
    except Exception:  # noqa: BLE001  (the caller keeps its default)
        return None
    finally:
        fake_log.setLevel(level)
    return recorder.ops, fresh, out


class CiaInstall(NamedTuple):
    """What override_cia_kernels puts on one CIA op (cia_installs)."""

    op: torch._ops.OpOverload
    autograd_kernel: Callable[..., Any]
    original: Callable[..., Any]  # the op's composite body (cia_decomposition)
    cia_kernel: Callable[..., Any]
    body: Callable[..., Any]  # the composite body, checked not to return views of its inputs
    fake_rule: Callable[..., Any]  # FakeTensorMode's rule for the op where it has none: the body


def cia_installs(
    kernels: dict[torch._ops.OpOverload, tuple[Callable[..., Any], Callable[..., Any]]],
) -> tuple[CiaInstall, ...]:
    """For override_cia_kernels, from `kernels[op] = (autograd_kernel, cia_kernel)`: each op's
    kernels with its composite body and the rules made from it, made once for the caller to
    keep (a plan keeps its own: made per trace, they took ~6 ms of each, two a compile,
    2026-12-03). Which device types run the body is read from the dispatcher at each trace
    (a kernel registered in between counts)."""
    installs = []
    for op, (autograd_kernel, cia_kernel) in kernels.items():
        original = cia_decomposition(op)
        body = _checked_body(op, original)
        installs.append(CiaInstall(op, autograd_kernel, original, cia_kernel, body, _fake_rule(body)))
    return tuple(installs)


@contextlib.contextmanager
def override_cia_kernels(installs: Iterable[CiaInstall], device_types: Iterable[str]) -> Iterator[None]:
    """Install python-dispatcher kernels on CIA ops (cia_installs) for the duration of one trace.

    The CIA kernel returning NotImplemented tells make_fx and FakeTensorMode to keep the op
    as one node (the torch.export mechanism, `_override_composite_implicit_decomp`); the
    autograd kernel decides what happens above autograd on the device types where eager runs
    the composite body (not where the op has a kernel of its own: `has_device_kernel`).
    Backend keys and the fake rule keep the original composite body so that running the op
    (fake propagation, constants) still works; where FakeTensorMode would use the op's Python
    reference, the body is tried first.
    Everything is restored on exit. Needs `enable_python_dispatcher()` around the trace.
    """
    keys = [(t, _AUTOGRAD_KEY[t], _BACKEND_KEY[t]) for t in sorted({*device_types, "cpu", "meta"}) if t in _BACKEND_KEY]
    saved: dict[torch._ops.OpOverload, dict[Any, Any]] = {}
    fake_rules: list[torch._ops.OpOverload] = []
    ref_rules: dict[torch._ops.OpOverload, Callable[..., Any]] = {}  # FakeTensorMode: body first
    impls = fake_impls.op_implementations_dict
    try:
        for op, autograd_kernel, original, cia_kernel, body, fake_rule in installs:
            table = op.py_kernels
            saved[op] = table.copy()
            for t, autograd_key, backend_key in keys:
                if not has_device_kernel(op, t):  # else eager runs the op's own kernel and derivative formula
                    table.setdefault(autograd_key, autograd_kernel)
                    table.setdefault(backend_key, original)
            table[DK.CompositeImplicitAutograd] = cia_kernel
            op._dispatch_cache.clear()
            if op not in impls:
                impls[op] = fake_rule
                fake_rules.append(op)
            ref = decomposition_table.get(op)
            if ref is not None:
                ref_rules[op] = _body_or_ref(body, ref)
        with override_fake_rules(ref_rules):
            yield
    finally:
        for op, table in saved.items():
            _set_py_kernels(op, table)
        for op in fake_rules:
            impls.pop(op, None)


@contextlib.contextmanager
def override_autograd_kernel(
    op: torch._ops.OpOverload, device_type: str, make_kernel: Callable[[Callable[..., Any] | None], Callable[..., Any]]
) -> Iterator[None]:
    """Install a python-dispatcher kernel on `op`'s autograd key for one device type, for
    the duration of one trace. `make_kernel` gets the python kernel that was there before
    (torch._decomp's on the Autograd alias key, or None) so that it can defer to it.
    Needs `enable_python_dispatcher()` around the trace."""
    key = _AUTOGRAD_KEY[device_type]
    saved = op.py_kernels.copy()
    try:
        _set_py_kernels(op, {**saved, key: make_kernel(saved.get(key, saved.get(DK.Autograd)))})
        yield
    finally:
        _set_py_kernels(op, saved)


def call_past_python_kernels(op: torch._ops.OpOverload, device_type: str, *args: Any, **kwargs: Any) -> Any:
    """Call `op` with the python-dispatcher kernels on its autograd keys set aside: the
    dispatcher's own autograd kernel records it as itself, differentiated by its derivative
    formula (what eager does)."""
    saved = op.py_kernels.copy()
    autograd_keys = (DK.Autograd, _AUTOGRAD_KEY[device_type])
    _set_py_kernels(op, {k: v for k, v in saved.items() if k not in autograd_keys})
    try:
        return op(*args, **kwargs)
    finally:
        _set_py_kernels(op, saved)


def _set_py_kernels(op: torch._ops.OpOverload, table: dict[Any, Any]) -> None:
    """Replace `op`'s python-dispatcher kernels (the dict itself is the op's: kept, refilled)."""
    op.py_kernels.clear()
    op.py_kernels.update(table)
    op._dispatch_cache.clear()


@contextlib.contextmanager
def override_fake_rules(rules: dict[torch._ops.OpOverload, Callable[..., Any]], static: bool = False) -> Iterator[None]:
    """Replace, for one trace, how FakeTensorMode propagates these ops (it prefers
    torch._decomp's table whenever sizes are symbolic); with `static`, also before their
    meta kernels (its op implementations, which it tries first where sizes are static). A
    rule that returns NotImplemented leaves the call to what was there before. The rules
    are entries of torch._decomp's global table while the trace runs: a module that reads
    that table at import (Inductor's lowerings, recomputing_partition) must be imported
    before, not inside the trace."""
    impls = fake_impls.op_implementations_dict
    saved = {op: decomposition_table.get(op) for op in rules}
    saved_impls = {op: impls.get(op) for op in rules} if static else {}
    for op, rule in rules.items():
        decomposition_table[op] = _or_before(rule, saved[op])
        if static:
            impls[op] = _fake_rule(rule, saved_impls[op])
    if static:  # results of these ops cached before (Dynamo's pass over the graph) would be taken
        _forget_cached(rules)
    try:
        yield
    finally:
        for table, entries in ((decomposition_table, saved), (impls, saved_impls)):
            for op, rule in entries.items():
                if rule is None:
                    table.pop(op, None)
                else:
                    table[op] = rule
        if static:  # and this trace's are not for any other
            _forget_cached(rules)


def _forget_cached(ops: Iterable[Any]) -> None:
    """Drop the fake tensor cache's entries of `ops` (the global one, and the current
    trace's ShapeEnv's, where sizes are symbolic)."""
    ops = set(ops)
    shape_env = getattr(torch._guards.detect_fake_mode(), "shape_env", None)
    for cache in (torch._subclasses.fake_tensor.FakeTensorMode.cache, getattr(shape_env, "fake_tensor_cache", {})):
        for key in [key for key in cache if key.key and key.key[0] in ops]:
            del cache[key]


def _or_before(rule: Callable[..., Any], before: Callable[..., Any] | None) -> Callable[..., Any]:
    if before is None:
        return rule

    def rule_or_before(*args: Any, **kwargs: Any) -> Any:
        out = rule(*args, **kwargs)
        return before(*args, **kwargs) if out is NotImplemented else out

    return rule_or_before


def native_batch_norm_helper(*args: Any) -> Any:
    """torch._decomp's batch norm body: (output, save_mean, save_rstd, new_running_mean, new_running_var)."""
    from torch._decomp.decompositions import native_batch_norm_helper as helper

    return helper(*args)


def runtime_sized_empty(like: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A 1-D tensor whose length only the running kernel knows (cuDNN's reserve space, sized
    from its tensor descriptor): an unbacked size while tracing with a ShapeEnv, so that no
    input size is specialized for it; length 0 without one."""
    from torch._guards import detect_fake_mode

    shape_env = getattr(detect_fake_mode([like]), "shape_env", None)
    if shape_env is None:
        return like.new_empty((0,), dtype=dtype)
    length = shape_env.create_unbacked_symint()
    torch._check(length >= 0)
    return like.new_empty((length,), dtype=dtype)


class AliasingCompositeOp(RuntimeError):
    """A kept CIA op returned (a view of) one of its inputs while being traced."""

    def __init__(self, op: torch._ops.OpOverload) -> None:
        super().__init__(f"{op} returns a view of its input; it cannot stay one functional node")
        self.op = op


def _checked_body(op: torch._ops.OpOverload, original: Callable[..., Any]) -> Callable[..., Any]:
    # A body that returns (a view of) an input, although the schema says the op is
    # functional, cannot be kept: functionalization would take its outputs for new tensors.
    def checked_body(*args: Any, **kwargs: Any) -> Any:
        out = original(*args, **kwargs)
        inputs = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and any(torch._C._is_alias_of(t, i) for i in inputs):
                raise AliasingCompositeOp(op)
        return out

    return checked_body


def _fake_rule(body: Callable[..., Any], before: Callable[..., Any] | None = None) -> Callable[..., Any]:
    # Run the composite body under fake mode before FakeTensorMode tries the meta device:
    # some CIA bodies branch on the device (see torch.export's note on sdpa). Where the body
    # returns NotImplemented, the op implementation `before` it, if any, or the meta kernel.
    def rule(fake_mode: Any, func: Any, *args: Any, **kwargs: Any) -> Any:
        with fake_mode:
            out = body(*args, **kwargs)
        if out is NotImplemented and before is not None:
            return before(fake_mode, func, *args, **kwargs)
        return out

    return rule


def _body_or_ref(original: Callable[..., Any], ref: Callable[..., Any]) -> Callable[..., Any]:
    # With symbolic sizes FakeTensorMode propagates an op through its Python reference
    # (torch._decomp.decomposition_table) before any fake rule. For a kept CIA op the
    # composite body, which is what eager runs, gives eager's metadata; some refs do not
    # (nll_loss and hinge_embedding_loss take `reduction` as a string where aten passes an
    # int: nll_loss(reduction=none) came out 0-dim). The ref is used only where the body
    # cannot run on symbolic sizes.
    def body_or_ref(*args: Any, **kwargs: Any) -> Any:
        try:
            return original(*args, **kwargs)
        except (torch._dynamo.exc.TorchDynamoException, AliasingCompositeOp):
            raise  # Dynamo's control flow (restart analysis), or a verdict on the op
        except (RuntimeError, ValueError, TypeError, NotImplementedError):
            return ref(*args, **kwargs)

    return body_or_ref


def real_tensors() -> contextlib.AbstractContextManager[Any]:
    """Real tensors again inside a compile (which traces under a FakeTensorMode): for work
    the backend does on real data while compiling (runtime.interpreter_loop_problem)."""
    return torch._subclasses.fake_tensor.unset_fake_temporarily()


def fake_mode_of(tensor: torch.Tensor) -> Any:
    """The FakeTensorMode a traced value belongs to (None for a real tensor)."""
    return getattr(tensor, "fake_mode", None)


def trace_contiguous(gm: torch.fx.GraphModule) -> None:
    """Trace gm's node values (meta["val"]) again, under their FakeTensorMode, from contiguous
    tensor inputs of the traced sizes (FakeTensorProp: not backward compatible upstream)."""
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp

    inputs = [n.meta["val"] for n in gm.graph.nodes if n.op == "placeholder"]
    fake_mode = next(fake_mode_of(val) for val in inputs if isinstance(val, torch.Tensor))
    with fake_mode:
        inputs = [torch.empty(val.shape, dtype=val.dtype, device=val.device) if isinstance(val, torch.Tensor) else val
                  for val in inputs]
    FakeTensorProp(gm, fake_mode).propagate_dont_convert_inputs(*inputs)


def specialized_int(value: Any) -> Any:
    """An int for a SymInt (the graph then guards on its value, as Inductor's
    guard_int does: a call with another value compiles again); anything else as is."""
    from torch.fx.experimental.symbolic_shapes import guard_int

    return guard_int(value) if isinstance(value, torch.SymInt) else value


def boxed_inputs(example_inputs: Iterable[Any]) -> bool:
    """Does the graph take a list (compiled autograd's graph takes its inputs as one list,
    which it clears as it goes)? AOTAutograd takes tensors, ints and opaque objects only."""
    return any(isinstance(x, (list, tuple, dict)) for x in example_inputs)


def compile_flattened(gm: torch.fx.GraphModule, example_inputs: list[Any],
                      compile_module: Callable[[torch.nn.Module, list[Any]], Callable[..., Any]]) -> Callable[..., Any]:
    """compile_module(module, flat inputs) for a graph taking lists (compiled autograd's):
    the module takes the flat inputs and runs gm's nodes on the lists rebuilt; the returned
    callable takes gm's own arguments and clears the lists it steals. As aot_eager and
    Inductor do (torch._dynamo.utils.flatten_graph_inputs), but gm's nodes are interpreted,
    as AOTAutograd interprets a graph module, so each traced op sees its node's annotations
    (a compile region's, which the backward of a region's ops carries)."""
    from torch._dynamo.utils import GmWrapper, flatten_graph_inputs
    from torch.fx.experimental.symbolic_shapes import PropagateUnbackedSymInts

    class Interpreted(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gm = gm

        def forward(self, *args: Any) -> Any:
            with fx_traceback.preserve_node_meta():
                return PropagateUnbackedSymInts(self.gm).run(*args)

    def compile_wrapper(wrapper: GmWrapper, flat_inputs: list[Any]) -> Callable[..., Any]:
        # AOTAutograd calls a GmWrapper's compiled function with one list it clears
        return compile_module(GmWrapper(Interpreted(), wrapper.unflatten_fn), flat_inputs)

    return flatten_graph_inputs(gm, example_inputs, compile_wrapper)


def fake_tensor_device(example_inputs: Iterable[Any], gm: torch.fx.GraphModule) -> str:
    """Device type of the graph: the first tensor input's; with none (a graph that makes
    its tensors, `torch.arange(k, device="cuda")`), the first device other than cpu among
    Dynamo's example values of its nodes; else cpu."""
    for value in example_inputs:
        if isinstance(value, torch.Tensor):
            return value.device.type
    for node in gm.graph.nodes:
        value = node.meta.get("example_value")
        if isinstance(value, torch.Tensor) and value.device.type != "cpu":
            return value.device.type
    return "cpu"


def wrapper_subclass_in(args: Any, kwargs: Any) -> bool:
    """Is a tensor subclass that AOTAutograd flattens (a jagged nested tensor, DTensor, ...)
    among these arguments? Tracing's own tensors (fake, functional) are not."""
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    return any(is_traceable_wrapper_subclass(x) for x in tree_flatten((args, kwargs))[0])


def is_custom_op(target: Any) -> bool:
    """An op outside aten/prims: what AOTAutograd's first-call aliasing check looks at."""
    return isinstance(target, torch._ops.OpOverload) and not torch._library.utils.is_builtin(target)


def is_higher_order(target: Any) -> bool:
    """A higher-order op (cond, while_loop, with_effects, flex_attention, ...)."""
    return isinstance(target, torch._ops.HigherOrderOperator)


TRITON_KERNEL_FUNCTIONAL = torch.ops.higher_order.triton_kernel_wrapper_functional  # a user's @triton.jit kernel


def user_triton_kernel_name(node: torch.fx.Node) -> str:
    """The Python name of the user's Triton kernel a triton_kernel_wrapper_* node launches
    (Dynamo keeps the kernel in a side table, by index)."""
    from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table

    kernel = kernel_side_table.get_kernel(node.kwargs["kernel_idx"])
    kernel = getattr(kernel, "fn", kernel)  # an Autotuner wraps the JITFunction, which wraps the function
    return getattr(getattr(kernel, "fn", kernel), "__name__", repr(kernel))


dispatch_mode_count = torch._C._len_torch_dispatch_stack  # a C call: cheap enough for every call


def aliasing_check_on_top() -> bool:
    """Is the innermost dispatch mode AOTAutograd's first-call custom-op aliasing check?

    AOTAutograd runs the first call of every compiled graph under a TorchDispatchMode that
    checks custom ops for aliasing (functorch config `check_custom_op_aliasing`). While any
    dispatch mode is active, CompositeImplicitAutograd bodies take their tensor-subclass
    branches (`isTensorSubclassLike` is true), so a kept CIA op computes differently from
    eager on that call: linalg_eigvalsh and linalg_svdvals compute eigen/singular vectors
    too and round differently. A wrapper whose graph has no custom op checks this on entry
    and runs with the mode popped (`pop_dispatch_mode`); a user's own mode below stays.
    """
    from torch._functorch._aot_autograd.runtime_wrappers import _AnalyzeCustomOpInputOutputMode
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    return isinstance(_get_current_dispatch_mode(), _AnalyzeCustomOpInputOutputMode)


def pop_dispatch_mode() -> contextlib.AbstractContextManager[Any]:
    from torch.utils._python_dispatch import _pop_mode_temporarily

    return _pop_mode_temporarily()


def dynamo_trace_counts() -> dict[str, dict[str, int]]:
    """A copy of Dynamo's process-wide counts of the graph breaks it made ("graph_break",
    by message), of what it could not trace and did not handle as a graph break
    ("unimplemented": the code there ran eagerly), and of frames ("frames": total, ok)."""
    from torch._dynamo.utils import counters

    return {category: dict(counters[category]) for category in ("graph_break", "unimplemented", "frames")}


def cpu_allocations(step: Callable[[], Any]) -> list[int]:
    """The bytes of each allocation (+) and free (-) of the cpu allocator while `step` runs,
    in order: the profiler's memory events (profile_memory=True), read from its kineto
    results. A block allocated before the profiler started has no free event."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    return [e.nbytes() for e in sorted(events, key=lambda e: e.start_ns())]


def ddp_bucket(gm: torch.fx.GraphModule) -> bool:
    """Whether gm is a piece of a Dynamo graph that DDPOptimizer split at
    DistributedDataParallel's gradient buckets (it marks each piece's compile reason)."""
    reason = getattr(gm, "compile_subgraph_reason", None)
    return "DDPOptimizer" in str(getattr(reason, "reason", ""))


def orig_callable(fn: Any) -> Any:
    """The user's function behind a torch.compile wrapper, or fn itself."""
    if isinstance(fn, torch._dynamo.eval_frame.OptimizedModule):
        return fn._orig_mod
    return getattr(fn, "_torchdynamo_orig_callable", fn)


def compile_settings(fn: Any) -> tuple[str, dict[str, Any], bool | None] | None:
    """(backend name, its mode/options keywords, dynamic) that torch.compile gave fn, or
    None where fn is not torch.compile's (torch._dynamo.optimize's, or not compiled).

    torch.compile wraps a backend with options in a _TorchCompileWrapper, at the end of the
    callback chain of the context that wraps fn: an OptimizedModule holds that context,
    a compiled function holds it in its closure.
    """
    from torch._dynamo.eval_frame import OptimizedModule, _TorchDynamoContext, innermost_backend

    if isinstance(fn, OptimizedModule):
        context = fn.dynamo_ctx
    else:
        cells = getattr(fn, "__closure__", None) or ()
        context = next((c.cell_contents for c in cells if isinstance(c.cell_contents, _TorchDynamoContext)), None)
    callback = getattr(context, "callback", None)
    backend = innermost_backend(callback) if callable(callback) else None
    if not isinstance(backend, torch._TorchCompileWrapper):
        return None
    return backend.compiler_name, dict(backend.kwargs), backend.dynamic


def register_dynamo_backend(name: str, fn: Callable[..., Any]) -> None:
    """Register `name` for torch.compile(backend=name); a no-op when already registered.

    When Dynamo already knows the name from the torch_dynamo_backends entry point, it
    registers the function itself when it loads that entry point (which imports us):
    registering here too would be a duplicate.
    """
    from torch._dynamo.backends.registry import _BACKENDS, _COMPILER_FNS, register_backend

    if name not in _COMPILER_FNS and _BACKENDS.get(name) is None:
        register_backend(name=name)(fn)


def never_traced(fn: Callable[..., Any]) -> Callable[..., Any]:
    """fn, whose frame and every frame it calls Dynamo runs as they are, never traces: a
    flag on its code object (no wrapper, no cost per call). Our wrappers run where Dynamo's
    frame callback may be active: a compiled function that graph-breaks on .backward() calls
    the backward graph's wrapper from autograd, and Dynamo traced it (and the Triton
    interpreter under it)."""
    from torch._C._dynamo.eval_frame import _FrameAction, _FrameExecStrategy, set_code_exec_strategy

    set_code_exec_strategy(fn.__code__, _FrameExecStrategy(_FrameAction.SKIP, _FrameAction.SKIP))
    return fn


@contextlib.contextmanager
def guard_latency_unmeasured() -> Iterator[None]:
    """Inside: Dynamo does not time a new frame's guards. After building them it runs them
    once behind a flush of the cpu's caches (`profile_guard_manager`), for a compile metric
    (`guard_latency_us`) and a debug log line only: ~27 ms a compiled frame on a 2-core cpu
    machine, ~45 ms with the caches refilled after it, a quarter of a one-op compile's time
    (2026-12-03). The test suite and tools/opinfo_sweep.py, which compile thousands of
    frames, skip it; xpu_lite's backend never does (it is Dynamo's and every backend's, and
    not ours to change for users)."""
    from torch._dynamo import guards

    original = guards.profile_guard_manager
    guards.profile_guard_manager = lambda *args: 0.0
    try:
        yield
    finally:
        guards.profile_guard_manager = original


@contextlib.contextmanager
def opinfo_test_lookup_by_frames() -> Iterator[None]:
    """Inside: OpInfo's sample iterators find the unittest test they run in by walking the
    frames, as torch's `extract_test_fn` does, without `inspect.stack()`, which reads every
    frame's source and, per frame, searches sys.modules for its module: under pytest (a stack
    of ~50 frames, none a unittest.TestCase) ~30 ms for an iterator's first sample, against
    ~1 ms (2026-12-03), where the test itself takes 0.1-0.4 s. Same result, same seeds. For the
    test suite (tests/conftest.py); OpInfo is torch's test database, not something xpu_lite runs.
    Nothing to do where torch's test utilities are not imported (importing them sets torch's
    test flags); OpInfo's module imported later takes the walk too."""
    import sys
    import unittest

    common_utils = sys.modules.get("torch.testing._internal.common_utils")
    if common_utils is None:
        yield
        return

    def extract_test_fn() -> Callable[..., Any] | None:
        try:
            frame = sys._getframe(1)
            while frame is not None:
                self_val = frame.f_locals.get("self")
                if isinstance(self_val, unittest.TestCase):
                    *_, cls_name, test_name = self_val.id().rsplit(".", 2)
                    if cls_name == type(self_val).__name__ and test_name.startswith("test"):
                        return getattr(self_val, test_name).__func__
                frame = frame.f_back
        except Exception:  # noqa: BLE001  (torch's returns None on any error too)
            pass
        return None

    original = common_utils.extract_test_fn
    modules = (common_utils, sys.modules.get("torch.testing._internal.opinfo.core"))
    for module in filter(None, modules):
        module.extract_test_fn = extract_test_fn
    try:
        yield
    finally:
        # opinfo.core, imported inside, took ours by name from common_utils
        for module in (common_utils, sys.modules.get("torch.testing._internal.opinfo.core")):
            if module is not None and module.extract_test_fn is extract_test_fn:
                module.extract_test_fn = original
