"""Lowering stage: partition each aten node into kernel / fallback / size / assert."""
from __future__ import annotations

from .decisions import Decision, DecisionKind, FallbackKind, FallbackReason, LoweringError
from .partition import partition
from . import pointwise, reduction  # noqa: F401  (fill LOWERINGS)
from .registry import LOWERINGS

__all__ = ["Decision", "DecisionKind", "FallbackKind", "FallbackReason", "LoweringError", "partition", "LOWERINGS"]
