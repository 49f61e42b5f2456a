"""Lowering stage: partition each aten node into kernel / fallback / size / assert."""
from __future__ import annotations

import torch

from .decisions import SUBGRAPHS_AS_TRACED, SUBGRAPHS_COMPILED, Decision, DecisionKind, FallbackKind, FallbackReason, LoweringError
from .partition import partition
from . import adaptive, division, fma, gather, indexing, pointwise, pooling, powers, reduction, scatter, shifts  # noqa: F401  (fill LOWERINGS)
from .registry import LOWERINGS

_aten = torch.ops.aten
LOWERINGS.decline(
    _aten.mm.default, _aten.bmm.default, _aten.addmm.default, _aten.baddbmm.default, _aten.convolution.default,
    _aten.convolution_backward.default, _aten.addbmm.default, _aten._trilinear.default,
    why="matmul and convolution run aten's kernel (oneDNN, cuBLAS, cuDNN), as Inductor's extern kernels do",
)
_ATTENTION = ("_scaled_dot_product_flash_attention", "_scaled_dot_product_flash_attention_for_cpu",
              "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention",
              "_scaled_dot_product_fused_attention_overrideable")
LOWERINGS.decline(
    *(getattr(_aten, name + suffix).default for name in _ATTENTION for suffix in ("", "_backward")),
    why="attention runs aten's fused kernel (flash, memory-efficient, cuDNN, oneDNN), as Inductor's fallbacks do; "
        "its dropout draws from the eager RNG stream",
)
LOWERINGS.decline(
    _aten.empty.memory_format, _aten.empty_strided.default, _aten.empty_like.default, _aten.new_empty.default,
    _aten.new_empty_strided.default, _aten.empty_permuted.default,
    why="an allocation: no values for a kernel to compute, aten allocates",
)

__all__ = ["SUBGRAPHS_AS_TRACED", "SUBGRAPHS_COMPILED", "Decision", "DecisionKind", "FallbackKind", "FallbackReason", "LoweringError",
           "partition", "LOWERINGS"]
