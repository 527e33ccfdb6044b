"""Markdown tables: one renderer for every report the toolkit writes."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["markdown_table"]


def markdown_table(
    header: Sequence[str], rows: Iterable[Sequence[object]], *, align: str | None = None
) -> list[str]:
    """The lines of a Markdown table (no trailing blank line).

    Parameters
    ----------
    header : sequence of str
        Column titles.
    rows : iterable of sequences
        Cells, already formatted or turned into text with ``str``.
    align : str, optional
        One letter per column, ``"l"`` (left, ``---``) or ``"r"`` (right, ``---:``); default all
        left.

    Raises
    ------
    ValueError
        ``align`` or a row does not have one entry per column.
    """
    n = len(header)
    align = align or "l" * n
    if len(align) != n or set(align) - {"l", "r"}:
        raise ValueError(f"align must be {n} letters of 'l' or 'r', not {align!r}")
    lines = [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join("---:" if a == "r" else "---" for a in align) + " |",
    ]
    for row in rows:
        if len(row) != n:
            raise ValueError(f"a row must have {n} cells, not {len(row)}: {list(row)!r}")
        lines.append("| " + " | ".join(str(c) for c in row) + " |")
    return lines
