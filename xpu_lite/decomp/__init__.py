"""Decomposition stage: LiteConfig -> DecompPlan (table, preserved CIA ops, region predicate)."""
from __future__ import annotations

from .plan import DecompPlan, build_plan, mark_higher_order_compile_ops, tracing
from .policy import is_random, own_decomposition_reason, policy
from .recompose import recompose
from .regions import OP_BY_OP_KEY, REGION_KEY, compile_region, in_region_meta

__all__ = ["DecompPlan", "build_plan", "mark_higher_order_compile_ops", "tracing", "is_random", "own_decomposition_reason",
           "policy", "recompose", "OP_BY_OP_KEY", "REGION_KEY", "compile_region", "in_region_meta"]
