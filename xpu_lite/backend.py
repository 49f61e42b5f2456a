"""The torch.compile backend: one line per pipeline stage.

Dynamo FX graph -> (decomp) DecompPlan -> AOTAutograd aten graphs -> (lowering) decisions
-> (codegen) wrapper module -> (runtime) callable. Forward, backward and inference graphs
all go through compile_graph.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import itertools
import logging
import time
import warnings
from collections.abc import Callable
from typing import Any

import torch.fx

from . import _torch_compat as compat
from .codegen import (CallPlan, generate_wrapper, plan_bindings, plan_host_values, plan_identities, plan_inplace, plan_prims,
                      plan_reinplace, plan_writebacks)
from .codegen.flex_attention import lower_flex_attention
from .codegen.triton import kernel_signature, kernel_sources, target_for
from .config import LiteConfig, parse_config
from .debug import write_stage
from .decomp import DecompPlan, build_plan, mark_higher_order_compile_ops, recompose, tracing
from .decomp.regions import in_region_meta
from .lowering import (SUBGRAPHS_AS_TRACED, SUBGRAPHS_COMPILED, Decision, DecisionKind, FallbackKind, FallbackReason, LoweringError,
                       ir, partition)
from .lowering.fusion import fuse
from .lowering.kernel_builder import Group
from .lowering.partition import RECOMPUTED_KEY, selected
from .lowering.space import contiguous_strides, strides_of
from .report import COUNTERS, GraphReport, format_table, publish
from .runtime import DEVICE_PREFERENCE, Subgraph, load_kernel, load_wrapper, reduction_strategy

log = logging.getLogger(__name__)
_graph_ids = itertools.count()

# the higher-order ops whose eager implementation calls each subgraph with its operands as
# arguments (cond's branches, while_loop's condition and body, the block that
# torch.compiler.nested_compile_region marks, scan's combine_fn and map's body): xpu_lite
# compiles those. cond's, while_loop's and invoke_subgraph's operands are the calling
# graph's values, laid out as traced; scan and map call the subgraph on slices they cut,
# whose strides need not be the traced ones (a zero-stride gradient): _SLICING
_SLICING = frozenset({torch.ops.higher_order.scan, torch.ops.higher_order.map_impl})
_SUBGRAPH_OPERATORS = frozenset({torch.ops.higher_order.cond, torch.ops.higher_order.while_loop,
                                 torch.ops.higher_order.invoke_subgraph}) | _SLICING


def xpu_lite_backend(
    gm: torch.fx.GraphModule, example_inputs: list[Any], mode: str | None = None, options: dict[str, Any] | None = None
) -> Callable[..., Any]:
    """Entry point registered as backend="xpu_lite" (torch_dynamo_backends)."""
    return compile_fx(gm, example_inputs, parse_config(mode, options))


def compile_fx(gm: torch.fx.GraphModule, example_inputs: list[Any], config: LiteConfig,
               module: torch.nn.Module | None = None) -> Callable[..., Any]:
    """module: what AOTAutograd traces, gm itself but for a graph taking lists."""
    if module is None and compat.boxed_inputs(example_inputs):  # compiled autograd's graph
        return compat.compile_flattened(
            gm, example_inputs, lambda flat_module, flat_inputs: compile_fx(gm, flat_inputs, config, flat_module))
    graph = f"graph_{next(_graph_ids)}"
    plan = build_plan(config)
    write_stage(config.debug_dir, graph, "dynamo_graph.py", lambda: gm.print_readable(print_output=False))
    if rewrites := recompose(gm):
        log.debug("xpu_lite %s: undid Dynamo's decompositions: %s", graph, rewrites)
        write_stage(config.debug_dir, graph, "recomposed.txt", "\n".join(rewrites))
    if marked := mark_higher_order_compile_ops(gm, config):
        log.debug("xpu_lite %s: %d higher-order op node(s) of compile_ops traced as a region's", graph, marked)
    write_stage(config.debug_dir, graph, "decomp_plan.txt", plan.summary)
    device_type = compat.fake_tensor_device(example_inputs, gm)
    ddp_bucket = graph if compat.ddp_bucket(gm) else ""
    started = time.perf_counter()
    partition = _partition(plan, gm)  # before the trace's overrides (see compat.recomputing_partition)
    while True:
        compiler = functools.partial(compile_graph, plan=plan, graph=graph, device_type=device_type, ddp_bucket=ddp_bucket)
        caught: list[warnings.WarningMessage] = []
        try:
            with _warnings_into(caught), tracing(plan, device_type):
                compiled = compat.aot_compile(
                    gm if module is None else module,
                    example_inputs,
                    fw_compiler=functools.partial(compiler, kind="forward"),
                    bw_compiler=functools.partial(compiler, kind="backward"),
                    # a graph taking lists is compiled autograd's: a backward, traced as an inference graph
                    inference_compiler=functools.partial(compiler, kind="inference" if module is None else "compiled_autograd"),
                    decompositions=plan.table,
                    keep_inference_input_mutations=True,
                    **partition,
                )
        except compat.AliasingCompositeOp as exc:  # trace again with the op decomposed
            # Where a derivative formula called the op (embedding's sparse backward), the
            # exception left through autograd's engine, which AOTAutograd's joint trace runs
            # in anomaly mode: its report ("Error detected in EmbeddingBackward0", with the
            # forward's traceback) is of this retrace, not of an error, and is dropped
            caught[:] = [w for w in caught if not str(w.message).startswith("Error detected in")]
            plan = plan.without_preserving(exc.op)
            log.info("xpu_lite %s: %s returns a view of its input; traced again with it decomposed", graph, exc.op)
            continue
        finally:
            for w in caught:  # as they would have been shown
                warnings.showwarning(w.message, w.category, w.filename, w.lineno, w.file, w.line)
        log.info("xpu_lite %s: %d Dynamo nodes traced by AOTAutograd and compiled in %.2f s",
                 graph, len(gm.graph.nodes), time.perf_counter() - started)
        return compiled


def _partition(plan: DecompPlan, gm: torch.fx.GraphModule) -> dict[str, Any]:
    """The default mode recomputes in the backward what is cheaper to recompute than to
    save, as Inductor does: its kernels fuse the recomputation into the backward's own.
    Lite mode saves what eager's autograd saves (AOTAutograd's default partition): its
    fallbacks would run again as extra eager calls. With regions or compile_ops, lite mode
    cuts as the default mode does over their nodes alone: the backward's kernels recompute
    what its regions computed, every other value is saved where eager saves it."""
    config = plan.config
    if config.lite and not config.compile_ops and not any(in_region_meta(node.meta) for node in gm.graph.nodes):
        return {}
    never_recomputed = (lambda node: not selected(node, config)) if config.lite else None
    return {"partition_fn": _marking_recomputed(compat.recomputing_partition(never_recomputed))}


def _marking_recomputed(partition_fn: Callable[..., Any]) -> Callable[..., Any]:
    """partition_fn, marking the backward's tensor nodes that the forward computes too (a
    node keeps its name in both graphs) for explain() to say so."""
    def partition(joint: torch.fx.GraphModule, joint_inputs: Any, **kwargs: Any) -> tuple[torch.fx.GraphModule, ...]:
        forward, backward = partition_fn(joint, joint_inputs, **kwargs)
        computed = {node.name for node in forward.graph.nodes if node.op == "call_function"}
        for node in backward.graph.nodes:
            if node.op == "call_function" and node.name in computed and isinstance(node.meta.get("val"), torch.Tensor):
                node.meta[RECOMPUTED_KEY] = True
        return forward, backward

    return partition


@contextlib.contextmanager
def _warnings_into(caught: list[warnings.WarningMessage]) -> Any:
    """Record the warnings shown inside into `caught` (the filters still decide which)."""
    with warnings.catch_warnings(record=True) as recorded:
        try:
            yield
        finally:
            caught.extend(recorded)


@compat.never_traced  # AOTAutograd compiles the backward graph at the first backward call, which
# may run inside a compiled frame (`loss.backward()` in a compiled training step, a graph
# break), where Dynamo would trace xpu_lite itself
def compile_graph(
    gm: torch.fx.GraphModule, example_inputs: list[Any], *, plan: DecompPlan, graph: str, kind: str, device_type: str,
    ddp_bucket: str = "",
) -> Callable[..., Any]:
    """One aten graph -> decisions -> fused kernels -> wrapper source -> loaded `call(args)`.
    Its higher-order ops' subgraphs are compiled too, each reported after the graph.
    ddp_bucket: `graph` where it is a piece of a DDPOptimizer split (explain says so)."""
    reports: list[GraphReport] = []
    call = _compile_graph(gm, plan, graph, kind, device_type, reports)
    for report in reports:
        publish(dataclasses.replace(report, ddp_bucket=ddp_bucket))
    return call


def _compile_graph(gm: torch.fx.GraphModule, plan: DecompPlan, graph: str, kind: str, device_type: str,
                   reports: list[GraphReport], subgraph: str = "") -> Callable[..., Any]:
    stage = "_".join(filter(None, (kind, subgraph)))  # "forward", "forward_true_graph_0"
    name = f"{graph}_{stage}"
    config = plan.config
    at = len(reports)
    compiled: dict[int, Subgraph] = {}  # id of a subgraph's GraphModule -> its Subgraph, which the wrapper holds instead
    for node, subs in _subgraph_calls(gm):
        at_node, calls = len(reports), {}
        for attr, sub in subs:
            if id(sub) not in compiled:
                inner = "_".join(filter(None, (subgraph, attr)))
                calls[id(sub)] = _compile_subgraph(sub, node.target in _SLICING, plan, graph, kind, device_type, reports, inner)
        if why := next((call for call in calls.values() if isinstance(call, str)), None):
            del reports[at_node:]
            node.meta[SUBGRAPHS_AS_TRACED] = why
            continue
        compiled.update(calls)
        node.meta[SUBGRAPHS_COMPILED] = True
    started = time.perf_counter()  # the subgraphs' time is in their own reports
    if device_type in DEVICE_PREFERENCE:  # else every node is eager's (partition: "other device")
        lower_flex_attention(gm, lambda node: selected(node, config) and node.target not in plan.kept, device_type)
    decisions = partition(gm, plan, device_type)
    groups = fuse(gm, decisions)
    _demote_ungrouped(gm, groups, decisions, config.strict)
    groups, kernels, sources = compile_kernels(groups, decisions, device_type, config.strict)
    sources += [node.target.source for node in gm.graph.nodes if getattr(node.target, "template", None)]  # flex attention's
    kernel_s = time.perf_counter() - started
    inplace = plan_inplace(gm, decisions, device_type) if config.reuse_buffers else {}
    identities = plan_identities(gm, decisions)
    bindings = plan_bindings(gm, decisions, inplace) if config.eager_bindings else {}
    calls = CallPlan(inplace, {n: b for n, b in bindings.items() if n not in identities}, identities, plan_prims(gm, decisions),
                     plan_host_values(gm, decisions, groups), plan_writebacks(gm, groups),
                     plan_reinplace(gm) if config.reuse_buffers else {})
    for node, note in calls.notes():  # explain() says so next to the fallback's reason
        d = decisions[node]
        decisions[node] = dataclasses.replace(d, note="; ".join(filter(None, (d.note, note))))
    try:
        code = generate_wrapper(gm, decisions, name, device_type, groups, kernels, calls)
    except LoweringError as exc:  # a kernel needs a size the wrapper cannot bind: run its graph eagerly
        if config.strict or not groups:
            raise
        warnings.warn(f"xpu_lite: {exc}; the kernels of {name} run eagerly", stacklevel=2)
        for group in groups:
            _demote(group, decisions, str(exc))
        groups, kernels, sources = [], {}, []
        calls = dataclasses.replace(calls, host_values={}, writebacks={})  # no kernel reads them by value or stores them now
        code = generate_wrapper(gm, decisions, name, device_type, groups, kernels, calls)
    code.constants.update({var: compiled[id(value)] for var, value in code.constants.items() if id(value) in compiled})
    report = GraphReport(
        name, kind, config.mode, tuple(decisions.values()), code.emitted, code.source, tuple(sources),
        compile_s=time.perf_counter() - started, kernel_s=kernel_s, subgraph=subgraph,
    )
    write_stage(config.debug_dir, graph, f"{stage}_aten_graph.py", lambda: gm.print_readable(print_output=False))
    write_stage(config.debug_dir, graph, f"{stage}_decisions.txt",
                lambda: format_table(("graph", "node", "op", "decision", "reason"), report.rows()))
    for i, source in enumerate(sources):
        write_stage(config.debug_dir, graph, f"{stage}_kernel_{i}.py", source)
    write_stage(config.debug_dir, graph, f"{stage}_wrapper.py", code.source)
    log.info("xpu_lite %s", report.summary_line())
    reports.insert(at, report)  # before its subgraphs'
    return load_wrapper(code)


def _subgraph_calls(gm: torch.fx.GraphModule) -> list[tuple[torch.fx.Node, list[tuple[str, torch.fx.GraphModule]]]]:
    """Each of gm's control-flow nodes (cond, while_loop, invoke_subgraph, scan, map) with
    the subgraphs it calls, (attribute, GraphModule). A subgraph of a node in a compile
    region is marked as in the region too (lite mode)."""
    found = []
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target not in _SUBGRAPH_OPERATORS:
            continue
        subs = [(str(a.target), getattr(gm, a.target)) for a in node.args if isinstance(a, torch.fx.Node) and a.op == "get_attr"]
        subs = [(attr, sub) for attr, sub in subs if isinstance(sub, torch.fx.GraphModule)]
        if in_region_meta(node.meta):
            for _, sub in subs:
                for inner in sub.graph.nodes:
                    inner.meta["custom"] = {**node.meta["custom"], **(inner.meta.get("custom") or {})}
        found.append((node, subs))
    return found


def _compile_subgraph(sub: torch.fx.GraphModule, slicing: bool, plan: DecompPlan, graph: str, kind: str, device_type: str,
                      reports: list[GraphReport], inner: str) -> Subgraph | str:
    """sub compiled as a graph of its own. Without kernels, its subgraphs' included, it takes
    its operands as eager's op passes them: every op is eager's, and reads them as they are
    (a subgraph it calls reads its values, so one with kernels needs them as traced, which
    making sub's operands contiguous gives where it was traced so). With kernels, which read
    each operand at its traced strides, an operand traced contiguous is made contiguous per
    call (a no-op where it is). scan and map (`slicing`) pass slices they cut, whose strides
    need not be the traced ones (a zero-stride gradient as the first carry): there, sub's
    values are traced again from contiguous operands first; where that cannot be, why (the
    op then calls sub as traced)."""
    at = len(reports)
    call = _compile_graph(sub, plan, graph, kind, device_type, reports, inner)
    if not any(report.kernels for report in reports[at:]):
        return Subgraph(f"{graph}_{kind}_{inner}", call, ())
    if slicing and len(_contiguous_inputs(sub)) < _tensor_inputs(sub):
        del reports[at:]
        if problem := _trace_contiguous(sub):
            return (f"its kernels read operands at the traced strides, which the slices it passes need not have, and it "
                    f"cannot be traced from contiguous ones: {problem}")
        call = _compile_graph(sub, plan, graph, kind, device_type, reports, inner)
    return Subgraph(f"{graph}_{kind}_{inner}", call, _contiguous_inputs(sub))


def _trace_contiguous(gm: torch.fx.GraphModule) -> str | None:
    """Trace gm's values again from contiguous operands; else (gm unchanged) why not: the trace
    fails, changes the strides of an output (the op's result, such as scan's last carry, has
    the strides traced from gm's outputs as they were), or gm calls subgraphs of its own
    (traced from gm's values as they were)."""
    if any(node.op == "get_attr" and isinstance(getattr(gm, node.target), torch.fx.GraphModule) for node in gm.graph.nodes):
        return "it calls subgraphs of its own, traced from its values as they were"
    saved = [(node, dict(node.meta)) for node in gm.graph.nodes]
    before = _output_strides(gm)
    try:
        compat.trace_contiguous(gm)
        problem = None if _output_strides(gm) == before else "an output would have other strides"
    except Exception as exc:  # noqa: BLE001 - any failure keeps the traced values and eager's op
        problem = f"the trace fails ({type(exc).__name__}: {exc})"
    if problem:
        for node, meta in saved:
            node.meta = meta
    return problem


def _output_strides(gm: torch.fx.GraphModule) -> list[tuple[Any, ...] | None]:
    outputs: list[torch.fx.Node] = []
    torch.fx.node.map_arg(next(n for n in gm.graph.nodes if n.op == "output").args[0], outputs.append)
    return [strides_of(val) if isinstance(val := node.meta.get("val"), torch.Tensor) else None for node in outputs]


def _inputs(gm: torch.fx.GraphModule) -> list[Any]:
    return [n.meta.get("val") for n in gm.graph.nodes if n.op == "placeholder"]


def _tensor_inputs(gm: torch.fx.GraphModule) -> int:
    return sum(isinstance(val, torch.Tensor) for val in _inputs(gm))


def _contiguous_inputs(gm: torch.fx.GraphModule) -> tuple[int, ...]:
    """Positions of the subgraph's inputs traced as contiguous tensors, for every size (a
    size-1 dim's stride aside)."""
    def contiguous(val: torch.Tensor) -> bool:
        sizes = tuple(compat.sym_expr(s) for s in val.shape)
        return all(size == 1 or compat.provably_equal(stride, want, val)
                   for size, stride, want in zip(sizes, strides_of(val), contiguous_strides(sizes)))

    return tuple(i for i, val in enumerate(_inputs(gm)) if isinstance(val, torch.Tensor) and contiguous(val))


def compile_kernels(
    groups: list[Group], decisions: dict[str, Decision], device_type: str, strict: bool
) -> tuple[list[Group], dict[str, Any], list[str]]:
    """Generate and load each group's kernel; a group whose kernel fails falls back to eager
    (warning naming the kernel and the error; strict=True raises). Updates `decisions`."""
    ok: list[Group] = []
    kernels: dict[str, Any] = {}
    sources: list[str] = []
    started = time.perf_counter()
    for group in groups:
        kernel = group.kernel
        try:
            variants = kernel_sources(kernel, target_for(device_type))
            signature = kernel_signature(kernel)
            loaded = {name: load_kernel(name, source, device_type, signature, kernel.checks_bounds, kernel.ordered)
                      for name, source in variants.items()}
        except Exception as exc:  # noqa: BLE001  (any failure of generated code means: run eagerly)
            detail = f"{kernel.name} failed to compile: {type(exc).__name__}: {exc}"
            if strict:
                raise LoweringError(kernel.name, kernel.nodes[0], detail) from exc
            warnings.warn(f"xpu_lite: {detail}; its {len(kernel.nodes)} node(s) run eagerly", stacklevel=2)
            _demote(group, decisions, detail)
            continue
        log.debug("xpu_lite %s (%d nodes) compiled and loaded, %.2f s so far", kernel.name, len(kernel.nodes), time.perf_counter() - started)
        ok.append(group)
        kernels.update(loaded)
        sources.extend(variants.values())
        COUNTERS.kernels_compiled += 1
        count = len(group.members) + len(group.inlined)
        nodes = f"{count} node" if count == 1 else f"{count} nodes"
        label = f"{kernel.name} ({nodes})"
        if kernel.is_reduction:
            verb = "reduces" if any(isinstance(v, ir.Reduce) for v in kernel.values) else "scans"  # cumsum, cumprod only
            label = f"{kernel.name} ({nodes}; {reduction_strategy(kernel.rnumel, device_type, verb, kernel.ordered)})"
        elif group.into is not None:
            adds = next((ir.COMBINES[s.accumulate] for s in kernel.stores if s.accumulate), "stores")
            label = f"{kernel.name} ({adds} at loaded positions into {group.into.name}'s buffer)"
        elif kernel.tile is not None:
            label = f"{kernel.name} ({nodes}; tiled: reads contiguous along dim {kernel.tile.dim})"
        for node in group.members:
            decisions[node.name] = dataclasses.replace(decisions[node.name], kernel=label)
        for node in group.inlined:  # computed in each kernel that reads it: every one is named
            readers = _readers(node, {*group.members, *group.inlined})
            verb = "reads" if len(readers) == 1 else "read"
            where = f"{kernel.name} (computed where {', '.join(readers)} {verb} it: not stored)"
            earlier = decisions[node.name].kernel
            decisions[node.name] = dataclasses.replace(
                decisions[node.name], kernel=f"{earlier}; {where}" if "computed where" in earlier else where)
    return ok, kernels, sources


def _readers(node: torch.fx.Node, computed: set[torch.fx.Node]) -> list[str]:
    """The nodes of a kernel that read `node`, directly or through slices of it."""
    found: dict[str, None] = {}
    for user in node.users:
        found.update(dict.fromkeys([user.name] if user in computed else _readers(user, computed)))
    return list(found)


def _demote_ungrouped(gm: torch.fx.GraphModule, groups: list[Group], decisions: dict[str, Decision], strict: bool) -> None:
    """A kernel node that fusion put in no kernel (a bug) runs eagerly, and says why, with
    a warning (strict=True raises): otherwise the wrapper would call it eagerly while
    explain said "kernel"."""
    grouped = {node for group in groups for node in (*group.inlined, *group.members)}
    for node in gm.graph.nodes:
        decision = decisions.get(node.name)
        if decision is None or decision.kind is not DecisionKind.KERNEL or node in grouped:
            continue
        detail = "fusion put it in no kernel (a bug in xpu_lite: please report it)"
        if strict:
            raise LoweringError(decision.op, node.name, detail)
        warnings.warn(f"xpu_lite: {node.name}: {detail}; it runs eagerly", stacklevel=2)
        _demote_nodes([node], decisions, detail)


def _demote(group: Group, decisions: dict[str, Decision], detail: str) -> None:
    _demote_nodes((*group.inlined, *group.members), decisions, detail)


def _demote_nodes(nodes: Any, decisions: dict[str, Decision], detail: str) -> None:
    for node in nodes:
        decisions[node.name] = dataclasses.replace(
            decisions[node.name], kind=DecisionKind.FALLBACK, kernel="",
            reason=FallbackReason(FallbackKind.KERNEL_FAILED, decisions[node.name].op, detail),
        )
