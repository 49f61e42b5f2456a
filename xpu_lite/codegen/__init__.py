"""Codegen stage: decisions -> the generated wrapper module (and, later, Triton kernels)."""
from __future__ import annotations

from .wrapper import WrapperCode, generate_wrapper

__all__ = ["WrapperCode", "generate_wrapper"]
