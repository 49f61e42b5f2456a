"""The debug dir: each stage's output as a real file, one folder per compiled graph."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


def write_stage(debug_dir: str | None, graph: str, filename: str, text: str | Callable[[], str]) -> None:
    """Write one stage's output; `text` may be a function making it, called only when there
    is a debug dir (printing a graph costs milliseconds of every compile otherwise)."""
    if debug_dir is None:
        return
    folder = Path(debug_dir) / _rank() / graph
    folder.mkdir(parents=True, exist_ok=True)
    (folder / filename).write_text(text if isinstance(text, str) else text())


def _rank() -> str:
    """"rank_R" in a distributed run, whose ranks number their graphs alike (each would
    overwrite the others' graph_0); "" otherwise."""
    import torch.distributed as dist

    return f"rank_{dist.get_rank()}" if dist.is_available() and dist.is_initialized() else ""
