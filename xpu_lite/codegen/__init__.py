"""Codegen stage: decisions -> the generated wrapper module and its Triton kernels."""
from __future__ import annotations

from .bindings import plan_bindings
from .calls import CallPlan
from .identities import plan_identities
from .inplace import plan_inplace
from .prims import plan_host_values, plan_prims
from .reinplace import plan_reinplace
from .wrapper import WrapperCode, generate_wrapper
from .writebacks import plan_writebacks

__all__ = ["CallPlan", "WrapperCode", "generate_wrapper", "plan_bindings", "plan_host_values", "plan_identities", "plan_inplace",
           "plan_prims", "plan_reinplace", "plan_writebacks"]
