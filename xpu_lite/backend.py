"""The torch.compile backend: one line per pipeline stage.

Dynamo FX graph -> (decomp) DecompPlan -> AOTAutograd aten graphs -> (lowering) decisions
-> (codegen) wrapper module -> (runtime) callable. Forward, backward and inference graphs
all go through compile_graph.
"""
from __future__ import annotations

import functools
import itertools
import logging
from collections.abc import Callable
from typing import Any

import torch.fx

from . import _torch_compat as compat
from .codegen import generate_wrapper
from .config import LiteConfig, parse_config
from .debug import write_stage
from .decomp import DecompPlan, build_plan, tracing
from .lowering import partition
from .report import GraphReport, format_table, publish
from .runtime import load_wrapper

log = logging.getLogger(__name__)
_graph_ids = itertools.count()


def xpu_lite_backend(
    gm: torch.fx.GraphModule, example_inputs: list[Any], mode: str | None = None, options: dict[str, Any] | None = None
) -> Callable[..., Any]:
    """Entry point registered as backend="xpu_lite" (torch_dynamo_backends)."""
    return compile_fx(gm, example_inputs, parse_config(mode, options))


def compile_fx(gm: torch.fx.GraphModule, example_inputs: list[Any], config: LiteConfig) -> Callable[..., Any]:
    graph = f"graph_{next(_graph_ids)}"
    plan = build_plan(config)
    write_stage(config.debug_dir, graph, "dynamo_graph.py", gm.print_readable(print_output=False))
    write_stage(config.debug_dir, graph, "decomp_plan.txt", plan.summary())
    compiler = functools.partial(compile_graph, plan=plan, graph=graph)
    with tracing(plan, compat.fake_tensor_device(example_inputs)):
        return compat.aot_module_simplified(
            gm,
            example_inputs,
            fw_compiler=functools.partial(compiler, kind="forward"),
            bw_compiler=functools.partial(compiler, kind="backward"),
            inference_compiler=functools.partial(compiler, kind="inference"),
            decompositions=plan.table,
            keep_inference_input_mutations=True,
        )


def compile_graph(gm: torch.fx.GraphModule, example_inputs: list[Any], *, plan: DecompPlan, graph: str, kind: str) -> Callable[..., Any]:
    """One aten graph -> decisions -> wrapper source -> loaded `call(args)`."""
    name = f"{graph}_{kind}"
    decisions = partition(gm, plan)
    code = generate_wrapper(gm, decisions, name)
    report = GraphReport(name, kind, plan.config.mode, tuple(decisions.values()), code.emitted, code.source)
    write_stage(plan.config.debug_dir, graph, f"{kind}_aten_graph.py", gm.print_readable(print_output=False))
    write_stage(plan.config.debug_dir, graph, f"{kind}_decisions.txt", format_table(("graph", "node", "op", "decision", "reason"), report.rows()))
    write_stage(plan.config.debug_dir, graph, f"{kind}_wrapper.py", code.source)
    log.debug("xpu_lite compiled %s: %d nodes, %d fallbacks", name, len(decisions), len(report.fallbacks))
    publish(report)
    return load_wrapper(code)
