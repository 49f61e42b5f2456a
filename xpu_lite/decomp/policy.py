"""The decomposition policy as data: which aten ops are decomposed inside compile regions.

Output: DECOMPOSE (op -> decomposition) and KEEP (op -> reason it is never decomposed).
Everything else in the pipeline derives from these two tables.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import torch

from .. import _torch_compat as compat

aten = torch.ops.aten

# Ops that are never decomposed, even inside regions, with the reason. Random ops keep the
# eager RNG stream only if they run as the same aten call eager would make.
_KEEP_EXPLICIT: dict[torch._ops.OpOverload, str] = {
    aten.native_dropout.default: "random op: decomposing it would change the RNG stream",
    aten.bernoulli.p: "random op: decomposing it would change the RNG stream",
    aten.bernoulli.default: "random op: decomposing it would change the RNG stream",
}


# Ops the core ATen table keeps whole (they are core ops) but regions decompose, as
# Inductor does, so that their reductions and pointwise parts fuse into few kernels.
_DECOMPOSE_FOR_FUSION: dict[torch._ops.OpOverload, str] = {
    aten._softmax.default: "softmax: amax, exp, sum and div fuse into one reduction kernel",
    aten._log_softmax.default: "log_softmax: amax, exp, sum and log fuse into one reduction kernel",
    aten.native_layer_norm.default: "layer_norm: var_mean and the affine map fuse into one reduction kernel",
    aten.native_group_norm.default: "group_norm: var_mean over each group and the affine map fuse",
}


def is_random(op: Any) -> bool:
    return isinstance(op, torch._ops.OpOverload) and torch.Tag.nondeterministic_seeded in op.tags


@lru_cache(maxsize=1)
def policy() -> tuple[dict[Any, Callable[..., Any]], dict[Any, str]]:
    """(DECOMPOSE, KEEP): core ATen decompositions plus those for fusion, minus the ops
    kept, and the kept ops."""
    table = dict(compat.core_aten_decompositions())
    table.update(compat.get_decompositions(list(_DECOMPOSE_FOR_FUSION)))
    keep = dict(_KEEP_EXPLICIT)
    keep.update({op: "random op: keeps the eager RNG stream" for op in table if is_random(op) and op not in keep})
    decompose = {op: fn for op, fn in table.items() if op not in keep}
    both = set(decompose) & set(keep)
    assert not both, f"xpu_lite policy: ops both decomposed and kept: {sorted(map(str, both))}"
    return decompose, keep
