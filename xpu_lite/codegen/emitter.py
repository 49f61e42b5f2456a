"""A small source writer: line(), indent(), text. No string soup elsewhere."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator


class Emitter:
    def __init__(self) -> None:
        self._lines: list[str] = []
        self._depth = 0

    def line(self, text: str = "", comment: str = "") -> None:
        code = "    " * self._depth + text if text else ""
        if comment:
            code = f"{code}  # {comment}" if text else "    " * self._depth + f"# {comment}"
        self._lines.append(code)

    def lines(self, texts: list[str]) -> None:
        for text in texts:
            self.line(text)

    @contextlib.contextmanager
    def indent(self) -> Iterator[None]:
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1

    def text(self) -> str:
        return "\n".join(self._lines) + "\n"
