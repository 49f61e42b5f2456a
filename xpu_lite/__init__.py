"""xpu_lite: a torch.compile backend with lite-mode decomposition control.

    torch.compile(model, backend="xpu_lite", mode="lite", dynamic=True)

Importing registers the backend (idempotently); the torch_dynamo_backends entry point
registers it without an import.
"""
from __future__ import annotations

from .api import explain, run_and_get_code
from .backend import xpu_lite_backend
from .config import LiteConfig, parse_config
from .decomp import compile_region
from .lowering import Decision, DecisionKind, FallbackKind, FallbackReason, LoweringError
from .report import COUNTERS as counters
from .report import ExplainReport, GraphReport
from .runtime import IndexOutOfRange

__all__ = [
    "compile_region", "counters", "explain", "run_and_get_code", "xpu_lite_backend", "LiteConfig", "parse_config",
    "Decision", "DecisionKind", "FallbackKind", "FallbackReason", "LoweringError", "ExplainReport", "GraphReport",
    "reset_counters", "IndexOutOfRange",
]


def reset_counters() -> None:
    counters.reset()


def _register() -> None:
    from ._torch_compat import register_dynamo_backend

    register_dynamo_backend("xpu_lite", xpu_lite_backend)


_register()
