"""Compile regions: the upstream annotation and xpu_lite's own spelling of it.

A node is in a region when its `node.meta["custom"]` carries REGION_KEY, which Dynamo
records from `torch.fx.traceback.annotate` and AOTAutograd copies onto every aten node
traced from it (forward and backward).
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch.fx.traceback as fx_traceback

REGION_KEY = "compile_with_inductor"  # upstream's marker, so annotated models work unchanged
# on the nodes of a kept op's body that ran op by op, as eager runs it: the op and why (plan._op_by_op)
OP_BY_OP_KEY = "xpu_lite_op_by_op"


def compile_region(tag: Any = "xpu_lite") -> contextlib.AbstractContextManager[None]:
    """Mark the ops traced inside the `with` block for compilation in lite mode.

    Same as `torch.fx.traceback.annotate({"compile_with_inductor": tag})`.
    """
    return fx_traceback.annotate({REGION_KEY: tag})


def in_region_meta(meta: dict[str, Any]) -> bool:
    return REGION_KEY in (meta.get("custom") or {})


@contextlib.contextmanager
def annotated(tag: str) -> Iterator[None]:
    """Mark nodes traced inside as region nodes (used for compile_ops' decompositions)."""
    with fx_traceback.annotate({REGION_KEY: tag}):
        yield
