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


def is_random(op: Any) -> bool:
    return isinstance(op, torch._ops.OpOverload) and torch.Tag.nondeterministic_seeded in op.tags


@lru_cache(maxsize=1)
def policy() -> tuple[dict[Any, Callable[..., Any]], dict[Any, str]]:
    """(DECOMPOSE, KEEP): core ATen decompositions minus the ops kept, and the kept ops."""
    table = dict(compat.core_aten_decompositions())
    keep = dict(_KEEP_EXPLICIT)
    keep.update({op: "random op: keeps the eager RNG stream" for op in table if is_random(op) and op not in keep})
    decompose = {op: fn for op, fn in table.items() if op not in keep}
    both = set(decompose) & set(keep)
    assert not both, f"xpu_lite policy: ops both decomposed and kept: {sorted(map(str, both))}"
    return decompose, keep
