"""The packed host bridge: what an env reads from every world, in one float32 row per world.

A :class:`Packed` owns (or borrows) one preallocated, C-contiguous ``(nworld, width)`` float32
array. :meth:`Packed.pull` refreshes it from the batch's float64 rows after a step or reset with
one vectorised copy per *block*, never per world: fields that lie next to each other in the
batch's memory and are requested in that order are merged into one block (``qpos`` and ``qvel``
are adjacent in the state rows, so ``("qpos", "qvel")`` is one copy). The float64 -> float32
conversion happens inside that copy. Every item is then a view into the packed array
(:meth:`Packed.view`), so a consumer that wraps the array once (``torch.from_numpy``) sees every
refresh without a copy, and can move the whole step boundary to another device in one transfer.

Items:
  * a state field (``"qpos"``, ``"qvel"``, ``"act"``, ``"ctrl"``, ...): columns of the batch's
    state rows, current after every call;
  * an output field the batch binds (``"sensordata"``, ``"cfrc_ext"``, ``"xpos"``, ...): copied out
    by MuJoCo's batch threads after every call (see :class:`mjbatch_uni.Batch` for their stage);
  * ``(field, index)``: the rows ``index`` (ints, in that order) of an output's first axis, e.g.
    ``("cfrc_ext", [7, 13])`` for two bodies; runs of consecutive indices are one block each.
    :meth:`Packed.select` then narrows which of those rows are copied, without changing the
    layout (copy only the contact forces someone reads).

Typical use (what :class:`unisim.backends.mujoco.MujocoBackend` does)::

    layout = batch.pack_layout(["qpos", "qvel", "sensordata", "cfrc_ext"])
    packed = batch.pack(layout.items, out=np.empty((batch.nworld, layout.width), np.float32))
    batch.step(ctrl, 4)
    packed.pull()                  # 3 copies: qpos|qvel, sensordata, cfrc_ext
    qpos = packed.view("qpos")     # (nworld, nq) float32 view
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from mjbatch_uni.batch import Batch

__all__ = ["PackLayout", "Packed", "PackItem"]

PackItem = Union[str, Tuple[str, Sequence[int]]]
"""A field name, or ``(field, index)`` for some rows of an output's first axis."""


@dataclass(frozen=True)
class _Block:
    """dst[:, dst0:dst1] <- base[:, src0:src1] for every world (rows of ``base`` are worlds)."""

    base: np.ndarray  # (nworld, n) float64 source, rows may be strided (state rows)
    src0: int
    src1: int
    dst0: int
    dst1: int


@dataclass(frozen=True)
class PackLayout:
    """Where each item lies in a packed row.

    Attributes:
        items: the items, normalised: names, or ``(name, index tuple)``.
        width: floats per world (columns of the packed array).
        slices: item name -> its columns in the packed row.
        shapes: item name -> its per-world shape (e.g. ``(nbody_selected, 6)`` for cfrc_ext).
        dtype: the packed dtype (float32).
    """

    items: Tuple[PackItem, ...]
    width: int
    slices: Dict[str, slice]
    shapes: Dict[str, Tuple[int, ...]]
    dtype: np.dtype


class Packed:
    """One ``(nworld, width)`` float32 array holding every world's packed items.

    Made by :meth:`mjbatch_uni.Batch.pack`; see the module docstring.

    Attributes:
        buffer: the packed array, ``(nworld, width)`` float32, C-contiguous. Refreshed in place by
            :meth:`pull`; never reallocated.
        layout: the :class:`PackLayout`.
        nblocks: vectorised copies per full :meth:`pull`.
        copies, nbytes: cumulative copies made and bytes written into ``buffer`` by :meth:`pull`.
    """

    def __init__(
        self,
        batch: "Batch",
        layout: PackLayout,
        runs: Dict[str, List[Tuple[int, _Block]]],
        out: Optional[np.ndarray] = None,
    ):
        shape = (batch.nworld, layout.width)
        if out is None:
            out = np.zeros(shape, layout.dtype)
        elif (
            not isinstance(out, np.ndarray)
            or out.shape != shape
            or out.dtype != layout.dtype
            or not out.flags.c_contiguous
            or not out.flags.writeable
        ):
            got = (
                f"{type(out).__name__} {getattr(out, 'dtype', '')} {getattr(out, 'shape', '')}"
            )
            raise ValueError(
                f"out must be a writable C-contiguous {layout.dtype} array of shape {shape}, "
                f"got {got}"
            )
        self.buffer = out
        self.layout = layout
        self._runs = runs  # item -> [(first-axis index or -1, block of that index)]
        self._selected: Dict[str, Optional[Tuple[int, ...]]] = {name: None for name in runs}
        self._batch = batch
        self._merge()
        self.copies = 0
        self.nbytes = 0

    def _merge(self) -> None:
        blocks: List[_Block] = []
        for name, runs in self._runs.items():
            chosen = self._selected[name]
            for index, b in runs:
                if chosen is not None and index not in chosen:
                    continue
                prev = blocks[-1] if blocks else None
                if (prev is not None and prev.base is b.base and prev.src1 == b.src0
                        and prev.dst1 == b.dst0):
                    blocks[-1] = _Block(b.base, prev.src0, b.src1, prev.dst0, b.dst1)
                else:
                    blocks.append(b)
        self._blocks = blocks
        self.nblocks = len(blocks)
        self._rows_per_pull = sum(b.dst1 - b.dst0 for b in blocks)

    def select(self, name: str, index: Optional[Sequence[int]]) -> None:
        """From now on, copy only the rows ``index`` of item ``name``'s first axis (None: all).

        The layout is unchanged: the columns of unselected rows keep whatever they held (zero if
        never pulled). Use it to pack the contact forces of all bodies in the layout but copy
        only those someone reads. Selected rows are copied at the next :meth:`pull`.

        Raises:
            KeyError: not an item of this layout.
            ValueError: the item has no first-axis rows to select, or an index outside them.
        """
        if name not in self._runs:
            raise KeyError(f"{name!r} is not packed; packed items: {', '.join(self._runs)}")
        if index is not None:
            known = {i for i, _ in self._runs[name]}
            if known == {-1}:
                raise ValueError(f"{name} was packed whole; pack it as ({name!r}, index)")
            index = tuple(int(i) for i in index)
            bad = [i for i in index if i not in known]
            if bad:
                raise ValueError(f"rows {bad} of {name} are not in its packed index")
        self._selected[name] = index
        self._merge()

    def view(self, name: str) -> np.ndarray:
        """``(nworld, *shape)`` view of item ``name`` in :attr:`buffer` (no copy).

        Raises:
            KeyError: not an item of this layout, listing the items.
        """
        if name not in self.layout.slices:
            raise KeyError(
                f"{name!r} is not packed; packed items: {', '.join(self.layout.slices)}"
            )
        cols = self.buffer[:, self.layout.slices[name]]
        return cols.reshape(self.buffer.shape[0], *self.layout.shapes[name])

    def pull(self, rows: Optional[np.ndarray] = None) -> None:
        """Refresh :attr:`buffer` from the batch: all rows (one copy per block) or ``rows``.

        Args:
            rows: sorted unique int world indices, or None for all worlds.
        """
        buf = self.buffer
        if rows is None:
            for b in self._blocks:
                np.copyto(buf[:, b.dst0 : b.dst1], b.base[:, b.src0 : b.src1], casting="same_kind")
            nbytes = buf.shape[0] * self._rows_per_pull * buf.itemsize
        else:
            for b in self._blocks:
                buf[rows, b.dst0 : b.dst1] = b.base[rows, b.src0 : b.src1]
            nbytes = len(rows) * self._rows_per_pull * buf.itemsize
        self.copies += len(self._blocks)
        self.nbytes += nbytes
        self._batch._count("pack", len(self._blocks), nbytes)


def normalise_items(items: Sequence[PackItem]) -> Tuple[PackItem, ...]:
    out: List[PackItem] = []
    seen = set()
    for item in items:
        if isinstance(item, str):
            name: str = item
            norm: PackItem = item
        else:
            try:
                name, index = item
                index = tuple(int(i) for i in np.asarray(index).reshape(-1))
            except (TypeError, ValueError):
                raise ValueError(
                    f"a pack item is a field name or (field, index), got {item!r}"
                ) from None
            norm = (name, index)
        if name in seen:
            raise ValueError(f"{name!r} is packed twice")
        seen.add(name)
        out.append(norm)
    return tuple(out)


def build(
    batch: "Batch", items: Sequence[PackItem], dtype=np.float32
) -> Tuple[PackLayout, Dict[str, List[Tuple[int, _Block]]]]:
    """The layout of ``items`` and, per item, its copy runs (one per first-axis index for
    ``(field, index)`` items, tagged with the index; one tagged -1 for whole fields)."""
    items = normalise_items(items)
    slices: Dict[str, slice] = {}
    shapes: Dict[str, Tuple[int, ...]] = {}
    runs: Dict[str, List[Tuple[int, _Block]]] = {}
    width = 0
    for item in items:
        name, index = (item, None) if isinstance(item, str) else item
        base, src0, field_shape = batch._pack_source(name)  # (nworld, n) float64 rows
        start = width
        if index is None:
            size = int(np.prod(field_shape, dtype=int))
            runs[name] = [(-1, _Block(base, src0, src0 + size, width, width + size))]
            width += size
            shape = tuple(field_shape)
        else:
            if not field_shape:
                raise ValueError(f"{name} has no first axis to index")
            n0, row = field_shape[0], int(np.prod(field_shape[1:], dtype=int))
            bad = [i for i in index if not 0 <= i < n0]
            if bad:
                raise IndexError(f"index for {name} must be in [0, {n0}), got {bad[0]}")
            if len(set(index)) != len(index):
                raise ValueError(f"index for {name} has duplicates: {list(index)}")
            runs[name] = []
            for i in index:
                s0 = src0 + i * row
                runs[name].append((i, _Block(base, s0, s0 + row, width, width + row)))
                width += row
            shape = (len(index), *field_shape[1:])
        slices[name] = slice(start, width)
        shapes[name] = shape
    layout = PackLayout(items, width, slices, shapes, np.dtype(dtype))
    return layout, runs
