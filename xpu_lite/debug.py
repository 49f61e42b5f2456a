"""The debug dir: each stage's output as a real file, one folder per compiled graph."""
from __future__ import annotations

from pathlib import Path


def write_stage(debug_dir: str | None, graph: str, filename: str, text: str) -> None:
    if debug_dir is None:
        return
    folder = Path(debug_dir) / graph
    folder.mkdir(parents=True, exist_ok=True)
    (folder / filename).write_text(text)
