"""LiteConfig -> DecompPlan: the decomposition table, the CIA ops to preserve, and the
predicate "does this op decompose here", plus the tracing context that applies them.

While AOTAutograd traces, the plan answers for each aten call: decompose (inside a region,
a compile op, or the default mode) or keep as one node (lite mode outside regions, and
keep_ops everywhere). CompositeImplicitAutograd ops, which the dispatcher would decompose
before any table is consulted, are kept through python-dispatcher kernels.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import threading
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.fx.traceback as fx_traceback
from torch.utils._pytree import tree_flatten, tree_unflatten

from .. import _torch_compat as compat
from ..config import LiteConfig, op_name
from .cudnn import eager_cudnn_batch_norm
from .derivatives import EAGER_CIA_BODIES, eager_derivatives
from .normalization import statistics_fake_rules
from .policy import (ALIASING_CIA, GRAD_DEPENDENT_CIA, HIDDEN_WRITES, STATE_DEPENDENT_CIA, is_random, own_decomposition,
                     policy, returns_tensors, writes_inputs)
from .regions import OP_BY_OP_KEY, REGION_KEY, annotated

COMPILE_OPS_TAG = "xpu_lite:compile_ops"
_ALIASING = (
    "cannot be kept as one node: it is a CompositeImplicitAutograd op that aliases or mutates "
    "its inputs, and functionalization needs it decomposed"
)

_NOT_TENSORS = (
    "cannot be kept as one node: it is a CompositeImplicitAutograd op that returns no tensor, "
    "whose body is what eager runs on every device (aten.item is aten._local_scalar_dense)"
)

_HIDDEN_WRITE = (
    "cannot be kept as one node when {} are given: its composite body updates them in place, "
    "which its schema does not say, and functionalization needs it decomposed"
)


@dataclasses.dataclass(frozen=True)
class DecompPlan:
    config: LiteConfig
    table: dict[Any, Callable[..., Any]]  # what AOTAutograd gets: region-gated decompositions
    preserved_cia: frozenset[torch._ops.OpOverload]  # CIA ops kept as one node when not selected
    kept: dict[Any, str]  # op -> why it is never decomposed (policy + keep_ops)
    # tracing's python-dispatcher kernels for preserved_cia, made at the plan's first trace
    _cia_kernels: dict[Any, Any] = dataclasses.field(default_factory=dict, init=False, compare=False, repr=False)
    _cia_installs: list[Any] = dataclasses.field(default_factory=list, init=False, compare=False, repr=False)

    def decomposes(self, op: Any) -> bool:
        """At trace time: should `op`, called right now, be decomposed?"""
        if op in self.kept:
            return False
        if not self.config.lite or op in self.config.compile_ops:
            return True
        return REGION_KEY in compat.current_annotation()

    def decomposes_call(self, op: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """`decomposes(op)` for one call: a call that writes to inputs behind its schema's back
        (policy.HIDDEN_WRITES) cannot stay one node anywhere; one with a float beyond its
        tensors' dtype stays one node."""
        if writes_inputs(op, args, kwargs):
            if op in self.config.keep_ops:
                raise ValueError(f"xpu_lite: keep_ops: {op} {_HIDDEN_WRITE.format(', '.join(HIDDEN_WRITES[op]))}")
            return True
        return self.decomposes(op) and not _float_beyond_its_dtype(args, kwargs)

    def without_preserving(self, op: torch._ops.OpOverload) -> DecompPlan:
        """The plan with `op` decomposed: its body turned out to return views of its inputs."""
        if op in self.config.keep_ops:
            raise ValueError(f"xpu_lite: keep_ops: {op} {_ALIASING}")
        if op not in self.preserved_cia:
            raise AssertionError(f"xpu_lite: {op} is not preserved by this plan")
        return dataclasses.replace(self, preserved_cia=self.preserved_cia - {op})

    def cia_kernels(self) -> dict[torch._ops.OpOverload, tuple[Callable[..., Any], Callable[..., Any]]]:
        """Per preserved CIA op, (autograd kernel, CIA kernel) for compat.cia_installs;
        made once per plan (a thousand closures: per compile, they cost more in the garbage
        collector's passes they set off than to make), each trace's state in _TRACE."""
        if not self._cia_kernels:
            self._cia_kernels.update({op: (_autograd_kernel(self, op), _gated(self, op, _decomposition(op), compat.cia_decomposition(op)))
                                      for op in self.preserved_cia})
        return self._cia_kernels

    def cia_installs(self) -> list[compat.CiaInstall]:
        """cia_kernels() with each op's composite body and the rules made from it, for
        compat.override_cia_kernels; made once per plan (the plan's own list: not to change)."""
        if not self._cia_installs:
            self._cia_installs.extend(compat.cia_installs(self.cia_kernels()))
        return self._cia_installs

    def summary(self) -> str:
        lines = [
            f"mode: {self.config.mode}",
            f"decomposed inside regions: {len(self.table)} ops (core ATen decompositions)",
            f"CompositeImplicitAutograd ops preserved when not selected: {len(self.preserved_cia)}",
            f"compile_ops: {sorted(map(op_name, self.config.compile_ops))}",
            "kept (never decomposed):",
        ]
        lines += [f"  {op_name(op)}: {why}" for op, why in sorted(self.kept.items(), key=lambda kv: op_name(kv[0]))]
        return "\n".join(lines)


def _float_beyond_its_dtype(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """A Python float beyond the largest finite value of a floating tensor operand's dtype
    (`x_f16.masked_fill(m, -1e9)`). Eager converts it op by op, raising ("value cannot be
    converted to type c10::Half without overflow") or giving inf, and a decomposition need
    not do the same, so the op stays one node: eager runs it (lowering/pointwise.py's
    checker keeps it, with the reason)."""
    operands = (*args, *kwargs.values())
    dtypes = [a.dtype for a in operands if isinstance(a, torch.Tensor) and a.is_floating_point()]
    limit = min((torch.finfo(d).max for d in dtypes), default=math.inf)
    return any(type(a) is float and math.isfinite(a) and abs(a) > limit for a in operands)


def build_plan(config: LiteConfig) -> DecompPlan:
    """The plan for a config, made once per config (LiteConfig is frozen) and set of
    CompositeImplicitAutograd registrations: a compile's plan and its kernels are the same
    objects as the last compile's with those options, unless a composite custom op was
    registered in between (then the new plan preserves it too)."""
    return _plan(config, compat.cia_registrations())


@functools.lru_cache(maxsize=16)
def _plan(config: LiteConfig, cia_registrations: frozenset[str]) -> DecompPlan:
    decompose, keep = policy()
    kept = dict(keep)
    kept.update({op: "keep_ops option" for op in config.keep_ops})
    preservable = frozenset(op for op in compat.preservable_cia_ops(cia_registrations) - ALIASING_CIA if returns_tensors(op))
    kept_overloads = [op for op in config.keep_ops if isinstance(op, torch._ops.OpOverload)]  # not flex attention
    for op in kept_overloads:  # (an out= or in-place overload never is in the functional graphs: moot)
        if compat.is_cia_op(op) and op not in preservable and not op._schema.is_mutable:
            raise ValueError(f"xpu_lite: keep_ops: {op} {_ALIASING if op in ALIASING_CIA else _NOT_TENSORS}")
    if config.lite:
        preserved = preservable
    else:  # default mode decomposes everything it can; keep_ops and our own decompositions need the override
        preserved = frozenset(op for op in kept_overloads if compat.is_cia_op(op))
        preserved |= frozenset(op for op in preservable if own_decomposition(op) is not None)
    plan = DecompPlan(config=config, table={}, preserved_cia=preserved, kept=kept)
    plan.table.update({op: _gated(plan, op, fn) for op, fn in decompose.items() if op not in kept})
    return plan


def mark_higher_order_compile_ops(gm: torch.fx.GraphModule, config: LiteConfig) -> int:
    """Lite mode: annotate each node of Dynamo's graph that calls a higher-order op named in
    compile_ops (flex attention), and the nodes of its subgraphs (score_mod, mask_mod), as a
    region's, so that AOTAutograd traces them as it traces a region: the subgraphs' ops
    decompose, and the op's aten node is selected. Returns how many calls."""
    calls = [node for node in gm.graph.nodes if config.lite and node.op == "call_function"
             and isinstance(node.target, torch._ops.HigherOrderOperator) and node.target in config.compile_ops]
    for call in calls:
        subgraphs = [getattr(gm, a.target) for a in tree_flatten((call.args, call.kwargs))[0]
                     if isinstance(a, torch.fx.Node) and a.op == "get_attr"]
        for node in [call, *(n for sub in subgraphs if isinstance(sub, torch.fx.GraphModule) for n in sub.graph.nodes)]:
            if REGION_KEY not in (node.meta.get("custom") or {}):
                node.meta["custom"] = {**(node.meta.get("custom") or {}), REGION_KEY: COMPILE_OPS_TAG}
    return len(calls)


class _Trace(threading.local):
    """What the kept ops' kernels share during the trace under way on this thread: the
    verdict per call signature (_verdict) and the states the ops' bodies read, as the trace
    began (STATE_DEPENDENT_CIA)."""

    def __init__(self) -> None:
        self.verdicts: dict[Any, tuple[bool, list[int]]] = {}
        self.states: dict[torch._ops.OpOverload, Any] = {}


_TRACE = _Trace()


@contextlib.contextmanager
def tracing(plan: DecompPlan, device_type: str) -> Iterator[None]:
    """Apply the plan to the CIA ops (and to cuDNN batch norm, `cudnn.py`) for the duration
    of one AOTAutograd trace."""
    outer = _TRACE.verdicts, _TRACE.states
    _TRACE.verdicts, _TRACE.states = {}, {op: state() for op, state in STATE_DEPENDENT_CIA.items()}
    try:
        with (
            compat.enable_python_dispatcher(),
            compat.override_fake_rules(statistics_fake_rules(device_type), static=True),
            compat.override_cia_kernels(plan.cia_installs(), [device_type]),
            eager_cudnn_batch_norm(plan.decomposes, device_type),
            eager_derivatives(plan.decomposes_call, functools.partial(_selected, plan), device_type),
        ):
            yield
    finally:
        _TRACE.verdicts, _TRACE.states = outer


def _selected(plan: DecompPlan, op: Any) -> contextlib.AbstractContextManager[None]:
    # Nodes that come out of a compile_op's decomposition are region nodes too.
    if op in plan.config.compile_ops and REGION_KEY not in compat.current_annotation():
        return annotated(COMPILE_OPS_TAG)
    return contextlib.nullcontext()


def _gated(plan: DecompPlan, op: Any, fn: Callable[..., Any], body: Callable[..., Any] | None = None) -> Callable[..., Any]:
    """Table entry and CIA kernel alike: decompose when selected, else keep the op. A CIA
    kernel's `body` (the op's own) runs where a tensor subclass is an argument."""

    def decompose_if_selected(*args: Any, **kwargs: Any) -> Any:
        if body is not None and compat.wrapper_subclass_in(args, kwargs):  # a nested tensor, DTensor: it sees
            return body(*args, **kwargs)  # the body's ops, as in eager; the graph holds what its own ops call
        if not plan.decomposes_call(op, args, kwargs):
            return NotImplemented  # make_fx keeps the op as one node
        with _selected(plan, op):
            return fn(*args, **kwargs)

    return decompose_if_selected


def _decomposition(op: torch._ops.OpOverload) -> Callable[..., Any]:
    """What a CIA op becomes when it decomposes: our own decomposition, else its body."""
    return own_decomposition(op) or compat.cia_decomposition(op)


def _autograd_kernel(plan: DecompPlan, op: torch._ops.OpOverload) -> Callable[..., Any]:
    original = _decomposition(op)
    eager = EAGER_CIA_BODIES.get(op, compat.cia_decomposition(op))

    def autograd_kernel(*args: Any, **kwargs: Any) -> Any:
        if plan.decomposes_call(op, args, kwargs):
            with _selected(plan, op):
                result = original(*args, **kwargs)  # the composite body, differentiated op by op
            if result is not NotImplemented:
                return result
            # else our decomposition keeps this call (a uint8 upsample): as an op not decomposed
        flat, spec = tree_flatten((args, kwargs))
        requires_grad = torch.is_grad_enabled() and any(isinstance(x, torch.Tensor) and x.requires_grad for x in flat)
        verdicts = _TRACE.verdicts
        why = _op_by_op(op, flat, spec, _TRACE.states.get(op), requires_grad, verdicts)
        if why is not None:
            with fx_traceback.annotate({OP_BY_OP_KEY: f"{op}, run op by op: {why}"}):  # explain() says why
                return eager(*args, **kwargs)
        if requires_grad:
            _, edges = _verdict(op, flat, spec, verdicts)
            # a tensor the body's gradient reaches by k edges is passed k times: see _PreservedOp
            extra = [x for x, k in zip(flat, edges) for _ in range(k - 1)]
            out = _PreservedOp.apply(op, eager, spec, len(flat), *flat, *extra)
            return list(out) if _returns_list(op) else out
        with compat.below_autograd():
            return op(*args, **kwargs)

    return autograd_kernel


# set while _PreservedOp.backward recomputes a kept op's body (on the thread that runs it)
_RECOMPUTING = threading.local()


def _op_by_op(op: torch._ops.OpOverload, flat: list[Any], spec: Any, state: Any, requires_grad: bool,
              verdicts: dict[Any, tuple[bool, list[int]]]) -> str | None:
    """Why this call of a kept op runs its body op by op, as eager does, rather than as one
    node; None where it stays one."""
    if getattr(_RECOMPUTING, "depth", 0) and requires_grad:
        # a kept op inside a kept op's body (cross_entropy's log_softmax.int and nll_loss_nd),
        # recomputed for the gradient: kept whole, its own backward would recompute its body
        # again (cross_entropy's backward computed log_softmax over the logits twice)
        return "inside a kept op's body recomputed for its gradient: eager's steps"
    if compat.autocast_reaches_body(flat):
        return "autocast casts its body's ops in eager (it has no autocast kernel of its own)"
    if op in STATE_DEPENDENT_CIA and STATE_DEPENDENT_CIA[op]() != state:
        return "the function sets what its body reads (sdpa_kernel inside it): traced as eager chooses"
    if not requires_grad:
        return None
    if compat.functorch_transforms_active():  # an autograd.Function there needs setup_context and a vmap rule
        return "under torch.func transforms, as eager"
    if is_random(op):  # the backward would recompute the body with other draws (rrelu's noise, a dropout mask)
        return "a random body (it may draw: dropout, noise), in training: kept whole, its backward would draw again"
    if op in GRAD_DEPENDENT_CIA or _verdict(op, flat, spec, verdicts)[0]:
        return "its body takes other steps when inputs require grad, in training: eager's steps"
    return None


def _verdict(op: torch._ops.OpOverload, flat: list[Any], spec: Any,
             verdicts: dict[Any, tuple[bool, list[int]]]) -> tuple[bool, list[int]]:
    """(grad-dependent, edges) for this call: whether its body takes other steps when its
    inputs do not require grad, as intermediates do not in the compiled forward (matmul folds
    a 3-D operand into mm when the 2-D one requires grad, bmm otherwise); and per position of
    `flat`, how many edges of the body's autograd graph reach that tensor (compat.body_steps;
    1 each where the body cannot be probed). Calls alike in every argument's metadata (each
    layer's linear) share one verdict."""
    key = (op, *(
        (str(x.shape), str(x.stride()), x.dtype, x.device, x.requires_grad) if isinstance(x, torch.Tensor) else repr(x)
        for x in flat
    ))
    if key not in verdicts:
        eager = compat.body_steps(op, flat, spec, keep_requires_grad=True)
        forward = compat.body_steps(op, flat, spec, keep_requires_grad=False)
        edges = _edge_counts(*eager[1:]) if eager is not None else [1] * len(flat)
        verdicts[key] = (eager is not None and forward is not None and eager[0] != forward[0], edges)
    return verdicts[key]


def _edge_counts(fresh: list[Any], out: Any) -> list[int]:
    """Per position of a probed body's inputs, how many gradient edges reach that tensor (at
    its first position; 0 at its repeats and for what is no tensor)."""
    edges = _gradient_edges([t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)])
    seen: set[int] = set()
    counts = []
    for x in fresh:
        first = isinstance(x, torch.Tensor) and id(x) not in seen
        seen.add(id(x))
        counts.append(len(edges.get(id(x), ())) if first else 0)
    return counts


def _gradient_edges(outputs: list[torch.Tensor]) -> dict[int, list[tuple[Any, int]]]:
    """Per leaf tensor (by id) that `outputs` were computed from, the edges of their autograd
    graph that reach it: (node, index of the node's gradient output), each an addition into
    the leaf's gradient in eager's backward."""
    edges: dict[int, list[tuple[Any, int]]] = {}
    seen: set[Any] = set()
    stack = [t.grad_fn for t in outputs if t.grad_fn is not None]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        for i, (next_node, _) in enumerate(node.next_functions):
            if next_node is None:
                continue
            leaf = getattr(next_node, "variable", None)  # an AccumulateGrad node
            if leaf is not None:
                edges.setdefault(id(leaf), []).append((node, i))
            else:
                stack.append(next_node)
    return edges


def _returns_list(op: torch._ops.OpOverload) -> bool:
    returns = op._schema.returns
    return len(returns) == 1 and isinstance(returns[0].type, torch.ListType)


class _PreservedOp(torch.autograd.Function):
    """A kept CIA op in a training graph: one node forward, its composite body's VJP backward.

    The backward recomputes the composite body from the saved inputs and differentiates it,
    which is exactly what eager autograd does through the same body. Eager's engine adds
    each gradient edge of the body into its input's gradient on its own, in the order the
    body's nodes run, after the contributions of later ops (`rms_norm(x) + x.sin()`:
    (sin's + edge 1) + edge 2); one summed gradient per input would add (edge 1 + edge 2)
    first, another rounding. So an input that k edges reach is passed k times (`n` tensors,
    then the repeats), and the backward returns each edge's gradient in its own slot, in
    the order the recomputed body's nodes produced them: the engine adds them in that order.
    Gradients are then bitwise equal to eager's.
    """

    @staticmethod
    def forward(ctx: Any, op: Any, original: Any, spec: Any, n: int, *flat_and_repeats: Any) -> Any:
        flat, repeats = flat_and_repeats[:n], flat_and_repeats[n:]
        ctx.original, ctx.spec = original, spec
        ctx.layout = [(isinstance(x, torch.Tensor), isinstance(x, torch.Tensor) and x.requires_grad) for x in flat]
        ctx.constants = [None if isinstance(x, torch.Tensor) else x for x in flat]
        first = {}
        for i, x in enumerate(flat):
            if isinstance(x, torch.Tensor):
                first.setdefault(id(x), i)
        ctx.repeat_of = [first[id(x)] for x in repeats]  # the position each repeat repeats
        ctx.save_for_backward(*[x for x in flat if isinstance(x, torch.Tensor)])
        args, kwargs = tree_unflatten(list(flat), spec)
        with compat.below_autograd():
            out = op(*args, **kwargs)
        return tuple(out) if isinstance(out, list) else out  # autograd tracks tuples, not lists

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        # One leaf per distinct tensor: a tensor passed twice (sdpa(x, x, x)) is one input of
        # the recomputed body, as in eager; its later positions get no gradient of their own.
        saved = iter(ctx.saved_tensors)
        leaves: dict[int, torch.Tensor] = {}
        flat: list[Any] = []
        first: list[bool] = []  # per position: the first occurrence of a tensor that needs grad
        for (is_tensor, needs_grad), const in zip(ctx.layout, ctx.constants):
            if not is_tensor:
                flat.append(const)
                first.append(False)
                continue
            tensor = next(saved)
            new = id(tensor) not in leaves
            if new:
                leaves[id(tensor)] = tensor.detach().requires_grad_(needs_grad)
            flat.append(leaves[id(tensor)])
            first.append(new and needs_grad)
        inputs = [x for x, is_first in zip(flat, first) if is_first]
        args, kwargs = tree_unflatten(flat, ctx.spec)
        _RECOMPUTING.depth = getattr(_RECOMPUTING, "depth", 0) + 1
        try:
            with torch.enable_grad():
                outs = ctx.original(*args, **kwargs)
        finally:
            _RECOMPUTING.depth -= 1
        outs = outs if isinstance(outs, (tuple, list)) else (outs,)
        pairs = [(o, g) for o, g in zip(outs, grads) if g is not None and isinstance(o, torch.Tensor) and o.requires_grad]
        summed: list[Any] = [None] * len(inputs)
        arrivals: dict[int, list[torch.Tensor]] = {}  # leaf id -> each edge's gradient, as added
        if pairs:
            edges = _gradient_edges([o for o, _ in pairs])
            by_node: dict[Any, list[tuple[int, int]]] = {}
            for leaf, reaching in edges.items():
                for node, i in reaching:
                    by_node.setdefault(node, []).append((i, leaf))

            def record(node: Any) -> Callable[..., None]:
                def hook(grad_inputs: Any, grad_outputs: Any) -> None:
                    for i, leaf in sorted(by_node[node], key=lambda e: e[0]):  # the engine adds edge by edge
                        if grad_inputs[i] is not None:
                            arrivals.setdefault(leaf, []).append(grad_inputs[i])
                return hook

            handles = [node.register_hook(record(node)) for node in by_node]
            try:
                summed = list(torch.autograd.grad([o for o, _ in pairs], inputs, [g for _, g in pairs], allow_unused=True))
            finally:
                for handle in handles:
                    handle.remove()
        slots: list[Any] = [None] * (len(flat) + len(ctx.repeat_of))
        got = iter(summed)
        for position, is_first in enumerate(first):
            if not is_first:
                continue
            total = next(got)
            mine = [position] + [len(flat) + j for j, p in enumerate(ctx.repeat_of) if p == position]
            parts = arrivals.get(id(flat[position]), [])
            if len(parts) > len(mine) or (total is not None and not parts):  # not as the forward's probe
                parts = [total]  # counted: the sum, in one slot
            for slot, part in zip(mine, parts):
                slots[slot] = part
        return (None, None, None, None, *slots)
