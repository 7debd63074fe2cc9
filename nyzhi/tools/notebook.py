"""Jupyter notebooks (nbformat 4) as the model reads and edits them.

A notebook is JSON whose lines mean nothing to a reader: ``read`` of an ``.ipynb`` shows its
cells instead, each under a header with its id and type, its source, and the text of its
outputs (streams, ``text/plain`` results, errors); images and HTML are named, not inlined.
``notebook_edit`` (Claude Code's ``NotebookEdit``) addresses cells by those ids.

Edits keep the notebook valid for nbformat's schema: a new cell gets an id (nbformat 4.5
requires one; a notebook of an older minor version is raised to 4.5 so its cells may carry
them), ``metadata``, and for code cells ``outputs`` and ``execution_count``; a code cell whose
source is replaced loses its outputs and count, as Jupyter's own editor does, since they
describe code that is no longer there. The file is written back with Jupyter's layout (one
space indent, keys sorted, a final newline), so a diff of an edit shows the edit only.

Pure functions over bytes: the tools read and write through the edit write path.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

#: The most output text shown per cell: a training log must not fill the read.
MAX_OUTPUT_CHARS = 2000
CELL_TYPES = ("code", "markdown", "raw")


class NotebookError(ValueError):
    """Not a notebook nyz can read or edit; the message names what is wrong."""


def is_notebook_path(path: object) -> bool:
    return str(path).lower().endswith(".ipynb")


def load(data: bytes, where: str) -> dict[str, Any]:
    """The notebook in ``data``; ``where`` names the file in the error."""
    try:
        nb = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise NotebookError(f"{where}: not a notebook (invalid JSON: {exc})") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise NotebookError(f"{where}: not a notebook (no list of cells)")
    if nb.get("nbformat") != 4:
        raise NotebookError(
            f"{where}: nbformat {nb.get('nbformat')!r} notebooks are not supported (only 4)")
    for i, cell in enumerate(nb["cells"]):
        if not isinstance(cell, dict) or cell.get("cell_type") not in CELL_TYPES:
            raise NotebookError(f"{where}: cell {i} is not a code, markdown or raw cell")
    return nb


def dump(nb: dict[str, Any]) -> bytes:
    return (json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode()


def _text(value: Any) -> str:
    """nbformat's multiline strings are a string or a list of strings."""
    if isinstance(value, list):
        return "".join(v for v in value if isinstance(v, str))
    return value if isinstance(value, str) else ""


def cell_id(cell: dict[str, Any], index: int) -> str:
    """A cell's id; a cell of an older notebook without one is named by its position."""
    found = cell.get("id")
    return found if isinstance(found, str) and found else f"cell-{index}"


def _outputs(cell: dict[str, Any]) -> str:
    parts: list[str] = []
    for out in cell.get("outputs") or ():
        if not isinstance(out, dict):
            continue
        kind = out.get("output_type")
        if kind == "stream":
            parts.append(_text(out.get("text")))
        elif kind in ("execute_result", "display_data"):
            data = out.get("data") if isinstance(out.get("data"), dict) else {}
            if "text/plain" in data:
                parts.append(_text(data["text/plain"]))
            others = sorted(k for k in data if k != "text/plain")
            if others:
                parts.append(f"[{', '.join(others)} output not shown]")
        elif kind == "error":
            parts.append(f"{out.get('ename', 'Error')}: {out.get('evalue', '')}")
    text = "\n".join(p.rstrip("\n") for p in parts if p)
    if len(text) > MAX_OUTPUT_CHARS:
        text = f"{text[:MAX_OUTPUT_CHARS]}… [output cut, {len(text)} chars]"
    return text


def render(data: bytes, where: str) -> str:
    """The cells of the notebook in ``data``, as ``read`` shows them."""
    nb = load(data, where)
    lang = ((nb.get("metadata") or {}).get("language_info") or {}).get("name") or "python"
    out = [f"{where}: a Jupyter notebook, {len(nb['cells'])} cells ({lang}); edit cells with "
           "notebook_edit by id"]
    for i, cell in enumerate(nb["cells"]):
        head = f'<cell id="{cell_id(cell, i)}" type="{cell["cell_type"]}"'
        count = cell.get("execution_count")
        head += f" execution_count={count}>" if isinstance(count, int) else ">"
        out.append(head)
        source = _text(cell.get("source"))
        if source:
            out.append(source.rstrip("\n"))
        outputs = _outputs(cell) if cell["cell_type"] == "code" else ""
        if outputs:
            out.append("<outputs>")
            out.append(outputs)
            out.append("</outputs>")
        out.append("</cell>")
    return "\n".join(out)


def _source_lines(text: str) -> list[str]:
    """Source as nbformat keeps it: lines with their newlines."""
    return text.splitlines(keepends=True)


def _new_cell(kind: str, source: str, taken: set[str]) -> dict[str, Any]:
    new_id = secrets.token_hex(4)
    while new_id in taken:
        new_id = secrets.token_hex(4)
    cell: dict[str, Any] = {"cell_type": kind, "id": new_id, "metadata": {},
                            "source": _source_lines(source)}
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def _find(nb: dict[str, Any], wanted: str, where: str) -> int:
    for i, cell in enumerate(nb["cells"]):
        if cell_id(cell, i) == wanted:
            return i
    ids = ", ".join(cell_id(c, i) for i, c in enumerate(nb["cells"][:20])) or "none"
    raise NotebookError(f"{where}: no cell with id {wanted!r} (ids: {ids})")


def new_ids(before: bytes, after: bytes) -> list[str]:
    """The ids of the cells ``after`` has and ``before`` had not (an insert's new cell)."""
    def ids(data: bytes) -> list[str]:
        cells = json.loads(data.decode("utf-8")).get("cells") or []
        return [cell_id(c, i) for i, c in enumerate(cells)]

    old = set(ids(before))
    return [i for i in ids(after) if i not in old]


def edit(data: bytes, where: str, *, mode: str, cell: str | None, source: str,
         kind: str | None) -> tuple[bytes, str]:
    """The notebook with one cell replaced, inserted (after ``cell``, or first without one)
    or deleted, and a line saying what was done."""
    nb = load(data, where)
    cells = nb["cells"]
    if nb.get("nbformat_minor", 0) < 5:
        nb["nbformat_minor"] = 5  # cell ids are part of nbformat 4.5
    for i, c in enumerate(cells):  # 4.5 requires an id on every cell
        if not isinstance(c.get("id"), str) or not c.get("id"):
            c["id"] = cell_id(c, i)
    taken = {c["id"] for c in cells}
    if kind is not None and kind not in CELL_TYPES:
        raise NotebookError(f"cell_type must be code, markdown or raw, not {kind!r}")
    if mode == "insert":
        if kind is None:
            raise NotebookError("cell_type is needed to insert a cell (code or markdown)")
        at = _find(nb, cell, where) + 1 if cell else 0
        new = _new_cell(kind, source, taken)
        cells.insert(at, new)
        return dump(nb), f"Inserted {kind} cell {new['id']} at position {at + 1} of {where}"
    if not cell:
        raise NotebookError(f"cell_id is needed to {mode} a cell")
    at = _find(nb, cell, where)
    if mode == "delete":
        del cells[at]
        return dump(nb), f"Deleted cell {cell} of {where}"
    if mode != "replace":
        raise NotebookError(f"edit_mode must be replace, insert or delete, not {mode!r}")
    target = cells[at]
    if kind is not None and kind != target["cell_type"]:
        replaced = _new_cell(kind, source, set())
        replaced["id"] = target["id"]
        cells[at] = replaced
    else:
        target["source"] = _source_lines(source)
        if target["cell_type"] == "code":
            target["outputs"], target["execution_count"] = [], None
    return dump(nb), f"Replaced cell {cell} of {where}"
