"""Codegen stage: decisions -> the generated wrapper module and its Triton kernels."""
from __future__ import annotations

from .bindings import binding_for
from .inplace import plan_inplace
from .wrapper import WrapperCode, generate_wrapper

__all__ = ["WrapperCode", "binding_for", "generate_wrapper", "plan_inplace"]
