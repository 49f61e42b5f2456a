"""The one registry of Triton lowerings: op -> (checker, rule).

A checker is a pure function of the node's fake-tensor metadata (and, for atomic adds, of
torch.are_deterministic_algorithms_enabled(), which Dynamo guards): None where the rule
takes the node, else why not (explain() prints it). The partitioner calls checkers only,
fusion calls rules only. The rules live in pointwise.py, indexing.py, gather.py,
scatter.py, reduction.py, pooling.py and adaptive.py (imported by the lowering package,
so the registry is complete once `xpu_lite.lowering` is imported).
"""
from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from typing import Any

import torch.fx

from .._torch_compat import is_higher_order, sym_expr
from .decisions import FLEX_REJECTED

Checker = Callable[[torch.fx.Node], str | None]


@dataclasses.dataclass(frozen=True)
class Lowering:
    checker: Checker
    rule: Callable[..., Any]
    # reductions: node -> the dims of its first argument it reduces (None for pointwise ops;
    # the function returns None where the node is pointwise: a 0-dim input)
    reduces: Callable[[torch.fx.Node], tuple[int, ...] | None] | None = None
    # argument positions whose tensors the rule loads itself, at positions it computes from
    # the element's own (cat, pad): fusion hands it those nodes, not values loaded for it
    gathers: tuple[int, ...] = ()
    # the rule reads the element's coordinates (cat, pad, arange): untiled pointwise kernels,
    # and a reduction's per element before it reduces (fusion._takes_as_prologue)
    coordinates: bool = False
    # argument positions whose tensors the rule does not read (copy's destination: its
    # shape, dtype and strides are the node's own): no load, the rule gets the node
    unread: tuple[int, ...] = ()
    # scatters (index_put, scatter): node -> the shape of the elements it stores at loaded
    # positions (the rule builds that kernel: scatter.py), None for other ops
    scatter: Callable[[torch.fx.Node], tuple[Any, ...]] | None = None
    # reductions over a space of their own rather than their input's (adaptive pools: each
    # result element times a bound on its window): node -> (sizes, reduced dims) of it
    space: Callable[[torch.fx.Node], tuple[tuple[Any, ...], tuple[int, ...]]] | None = None
    # the rule loads its gathered tensors through KernelBuilder.gather at coordinates computed
    # from the element's (cat, pad, flip, pools' windows): a pointwise producer that only such
    # readers read is computed there instead of stored (inlining.inlined_producers). A tuple:
    # only the tensors at those argument positions (a lookup's index tensor, not the table
    # it loads from at loaded positions, KernelBuilder.gather_at)
    inlines: bool | tuple[int, ...] = False
    # each element is one element of a gathered input, or a value of the node's own (cat, pad,
    # flip, repeat, slice/select/diagonal_scatter, a scatter computed pointwise): computed at
    # other coordinates as cheaply as at its own, so an inlined producer may be one
    # (inlining.inlined_producers)
    places: bool = False
    # a lookup (gather.py): an index tensor of the node's own shape is read at the element's
    # own coordinates, so a pointwise kernel that computes it reads it in registers
    # (fusion._loaded_roots, KernelBuilder.gather)
    index_in_place: bool = False


class LoweringRegistry:
    def __init__(self) -> None:
        self._table: dict[Any, Lowering] = {}
        self._declined: dict[Any, str] = {}  # ops left to aten by design -> why

    def decline(self, *ops: Any, why: str) -> None:
        """Ops no Triton rule is meant for (DESIGN: matmul and convolution call aten)."""
        for op in ops:
            self._declined[op] = why

    def register(
        self, *ops: Any, checker: Checker | None = None, reduces: Callable[[torch.fx.Node], tuple[int, ...] | None] | None = None,
        gathers: tuple[int, ...] = (), coordinates: bool = False, unread: tuple[int, ...] = (),
        scatter: Callable[[torch.fx.Node], tuple[Any, ...]] | None = None,
        space: Callable[[torch.fx.Node], tuple[tuple[Any, ...], tuple[int, ...]]] | None = None,
        inlines: bool | tuple[int, ...] = False,
        places: bool = False,
        index_in_place: bool = False,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def wrap(rule: Callable[..., Any]) -> Callable[..., Any]:
            for op in ops:
                assert op not in self._table, f"duplicate lowering for {op}"
                self._table[op] = Lowering(checker or (lambda node: None), rule, reduces, gathers,
                                           coordinates or bool(gathers), unread, scatter, space, inlines, places,
                                           index_in_place)
            return rule

        return wrap

    def rule(self, node: torch.fx.Node) -> Callable[..., Any]:
        return self._table[node.target].rule

    def reduced_dims(self, node: torch.fx.Node) -> tuple[int, ...] | None:
        """The dims a reduction node reduces (sorted): of node.args[0], or of its own space
        (see own_space); None for other nodes."""
        entry = self._table.get(node.target)
        if entry is not None and entry.space is not None:
            return entry.space(node)[1]
        return None if entry is None or entry.reduces is None else entry.reduces(node)

    def own_space(self, node: torch.fx.Node) -> tuple[tuple[Any, ...], tuple[int, ...]] | None:
        """(sizes, reduced dims) of a reduction over a space of its own (see Lowering); None
        for other nodes."""
        entry = self._table.get(node.target)
        return None if entry is None or entry.space is None else entry.space(node)

    def scatter_space(self, node: torch.fx.Node) -> tuple[Any, ...] | None:
        """The shape of the elements a scatter node stores (see Lowering); None for others."""
        entry = self._table.get(node.target)
        return None if entry is None or entry.scatter is None else entry.scatter(node)

    def gathers(self, node: torch.fx.Node) -> tuple[int, ...]:
        """The argument positions whose tensors node's rule loads itself (see Lowering)."""
        entry = self._table.get(node.target)
        return () if entry is None else entry.gathers

    def unread(self, node: torch.fx.Node) -> tuple[int, ...]:
        """The argument positions whose tensors node's rule does not read (see Lowering)."""
        entry = self._table.get(node.target)
        return () if entry is None else entry.unread

    def read_inputs(self, node: torch.fx.Node) -> list[torch.fx.Node]:
        """node's input nodes but those its rule does not read (unread: copy's destination,
        whose sizes and dtype alone count: `copy(slice(buf), v)` reads v)."""
        unread = self.unread(node)
        if not unread:
            return node.all_input_nodes
        read = {a for p, a in enumerate(node.args) if p not in unread and isinstance(a, torch.fx.Node)}
        skipped = {node.args[p] for p in unread if p < len(node.args)} - read
        return [a for a in node.all_input_nodes if a not in skipped]

    def reads_coordinates(self, node: torch.fx.Node) -> bool:
        """Whether node's rule reads the element's coordinates (see Lowering)."""
        entry = self._table.get(node.target)
        return entry is not None and entry.coordinates

    def inlined_args(self, node: torch.fx.Node) -> tuple[int, ...]:
        """The argument positions whose tensors node's rule computes where it gathers them,
        when they are pointwise producers (see Lowering)."""
        entry = self._table.get(node.target)
        if entry is None or entry.inlines is False:
            return ()
        return entry.gathers if entry.inlines is True else entry.inlines

    def places(self, node: torch.fx.Node) -> bool:
        """Whether node's rule places its inputs' elements (see Lowering); a scatter's only
        where it is computed pointwise (no scatter space: scatter.computed_pointwise)."""
        entry = self._table.get(node.target)
        return entry is not None and entry.places and (entry.scatter is None or entry.scatter(node) is None)

    def indexes_in_place(self, node: torch.fx.Node) -> list[torch.fx.Node]:
        """A lookup's index tensors that have its own shape: read at the element's own
        coordinates (see Lowering.index_in_place); [] for other nodes."""
        entry = self._table.get(node.target)
        if entry is None or not entry.index_in_place:
            return []
        shape = _shape(node)
        return [a for a in _tensors_at(node, self.inlined_args(node)) if _shape(a) == shape]

    def pointwise(self, node: torch.fx.Node) -> bool:
        """Whether node's rule computes each element from its inputs' elements at the same
        coordinates alone (broadcast): no reduction, scatter, gather or coordinate of its own."""
        entry = self._table.get(node.target)
        return (entry is not None and not entry.coordinates and entry.reduces is None and entry.scatter is None
                and entry.space is None)

    def fills(self, node: torch.fx.Node) -> bool:
        """Whether node is pointwise and reads no tensor (`full`): its element is the same at
        any coordinates, computed in a kernel from nothing loaded."""
        return self.pointwise(node) and not any(isinstance(a.meta.get("val"), torch.Tensor) for a in node.all_input_nodes)

    def gathered(self, node: torch.fx.Node) -> list[torch.fx.Node]:
        """The tensors node's rule loads itself (a list argument's each)."""
        return _tensors_at(node, self.gathers(node))

    def rejection(self, node: torch.fx.Node) -> str | None:
        """None where a rule lowers the node, else why not."""
        entry = self._table.get(node.target)
        if entry is not None:
            try:
                return entry.checker(node)
            except Exception as exc:  # noqa: BLE001  (a checker's bug: the node runs eagerly, said so, with a warning)
                why = f"its lowering's checker raised {type(exc).__name__}: {exc} (a bug in xpu_lite: please report it)"
                warnings.warn(f"xpu_lite: {node.name}: {why}; it runs eagerly", stacklevel=2)
                return why
        if why := node.meta.get(FLEX_REJECTED):  # codegen/flex_attention.py
            return why
        if is_higher_order(node.target):  # with_effects, flex_attention, ... (those backend.py compiles: partition.py)
            calls_subgraphs = any(isinstance(a, torch.fx.Node) and a.op == "get_attr" for a in node.args)
            return f"a higher-order op ({node.target.name()}) left to eager{', subgraphs and all' if calls_subgraphs else ''}"
        return "no Triton lowering for this op yet"

    def declined(self, op: Any) -> str | None:
        """Why no rule is meant for `op` (see decline), or None."""
        return self._declined.get(op)

    def __contains__(self, op: Any) -> bool:
        return op in self._table

    def __len__(self) -> int:
        return len(self._table)


def _tensors_at(node: torch.fx.Node, positions: tuple[int, ...]) -> list[torch.fx.Node]:
    """The nodes among node's arguments at `positions` (a list argument's each)."""
    found: list[torch.fx.Node] = []
    for i in positions:
        arg = node.args[i] if i < len(node.args) else None
        found += [a for a in (arg if isinstance(arg, (list, tuple)) else [arg]) if isinstance(a, torch.fx.Node)]
    return found


def _shape(node: torch.fx.Node) -> tuple[Any, ...] | None:
    """The node's sizes as sympy expressions (a SymInt compared with == would guard)."""
    val = node.meta.get("val")
    return tuple(sym_expr(s) for s in val.shape) if isinstance(val, torch.Tensor) else None


LOWERINGS = LoweringRegistry()
