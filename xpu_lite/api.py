"""User-facing helpers: run_and_get_code and explain."""
from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch

from . import _torch_compat as compat
from .backend import compile_fx
from .config import parse_config
from .report import DynamoNotes, ExplainReport, capture


def run_and_get_code(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, list[str]]:
    """Run fn(*args, **kwargs); return (result, [wrapper source of each graph compiled meanwhile]).

    Forward graphs come before their backward graph, and a graph before the subgraphs its
    cond and while_loop nodes call. Only graphs compiled during this call
    are seen: if fn was already compiled for these inputs, call torch._dynamo.reset() first.
    """
    before = compat.dynamo_trace_counts()
    with capture() as reports:
        result = fn(*args, **kwargs)
    if not reports:
        notes = DynamoNotes.between(before, compat.dynamo_trace_counts()).lines()
        warnings.warn(
            "xpu_lite.run_and_get_code: no graph was compiled during this call (is fn compiled with "
            "backend='xpu_lite', and not already compiled for these inputs? torch._dynamo.reset() clears it)"
            + "".join("\n" + line for line in notes),
            stacklevel=2,
        )
    return result, [r.source for r in reports]


def explain(
    fn: Callable[..., Any],
    *args: Any,
    mode: str | None = None,
    options: dict[str, Any] | None = None,
    dynamic: bool | None = None,
    **kwargs: Any,
) -> ExplainReport:
    """Compile fn with xpu_lite (mode/options as in torch.compile), run it once, and report
    every aten node of every graph: kernel / fallback / size / assert, and why.

    A torch.compile'd fn is unwrapped and compiled afresh: with the settings given here,
    or, where fn was compiled with backend="xpu_lite", with its own mode and options
    (unless mode or options is given) and its own dynamic (unless dynamic is given).
    A backward graph is included if fn itself runs backward. If the call raises (an eager
    op's own error, say), the error propagates with the report of what compiled as a note.
    """
    own = compat.compile_settings(fn)
    if own is not None and own[0] == "xpu_lite":
        if mode is None and options is None:
            mode, options = own[1].get("mode"), own[1].get("options")
        dynamic = own[2] if dynamic is None else dynamic
    config = parse_config(mode, options)
    original = compat.orig_callable(fn)

    def backend(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        return compile_fx(gm, example_inputs, config)

    compiled = torch.compile(original, backend=backend, dynamic=dynamic)
    before = compat.dynamo_trace_counts()
    with capture() as reports:
        try:
            compiled(*args, **kwargs)
        except Exception as error:
            if reports:
                report = ExplainReport(tuple(reports), DynamoNotes.between(before, compat.dynamo_trace_counts()))
                error.add_note(f"xpu_lite.explain: the call raised; its graphs:\n{report}")
            raise
    return ExplainReport(tuple(reports), DynamoNotes.between(before, compat.dynamo_trace_counts()))
