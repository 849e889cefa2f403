"""Many worlds of one MuJoCo model, stepped on a persistent thread pool.

:class:`Batch` wraps MuJoCo's own batch stepper, :class:`mujoco.batch.Batch` (MuJoCo >= 3.17), and
adds what an RL environment needs on top of it: controls written and checked in one call, read-only
batched views, the packed float32 host bridge (:meth:`Batch.pack`), one-call selected reads,
writes and resets (keyframe plus perturbation), per-world model parameters, CPU affinity, and a
per-row divergence report instead of exceptions from the physics.

  batch = Batch(model, nworld=1024)                        # one thread per available core
  packed = batch.pack(["qpos", "qvel", "sensordata"])      # (nworld, nq+nv+nsensordata) float32
  for _ in range(1000):
    batch.step(policy(packed.buffer), nstep=4)             # ctrl (nworld, nu), held 4 substeps
    packed.pull()                                          # 2 vectorised copies, no per-world work
    done = batch.diverged() | terminated(packed.buffer)
    batch.reset(np.flatnonzero(done), dqpos=noise(done.sum()))
    packed.pull(np.flatnonzero(done))

Every array is ``(nworld, ...)`` and float64 (MuJoCo's ``mjtNum``) unless stated. Units are
MuJoCo's: SI (m, rad, s, kg, N) for the usual models.

What the derived fields describe after :meth:`Batch.step` (``derived=``):

* ``"current"`` (default): every step ends with the position and velocity stages computed at the
  new state (``mjSTAGE_VEL``): ``xpos``, ``xquat``, ``cvel``, ``subtree_com`` and the position-
  and velocity-dependent sensors describe the state the step ended in, as after ``mj_step1``. A
  persistent batch starts its next step from those stages, so this costs nothing extra; a
  non-persistent one (the default, for memory) computes them once more per call: measured on the
  G1 at ``nstep=4``, +10 % (paired single-core C loops) to +12 % (batch) of the physics.
* ``"last_substep"``: MuJoCo's own ``mj_step`` semantics, the fastest: every derived field is the
  one MuJoCo computed during the last substep, i.e. at the state one substep before the returned
  ``qpos``/``qvel`` (which are always current).

In both modes, acceleration-dependent values (``cfrc_ext``, acceleration-stage sensors such as
``touch``, ``accelerometer``, ``force``) are those MuJoCo computed during the last substep.
Trajectories are bit-identical to a loop of ``mujoco.mj_step`` over one ``MjData`` per world, at
any thread count, in every mode.

Memory: a non-persistent batch (the default) keeps one ``MjData`` per *thread* and one
``mjSTATE_INTEGRATION`` row per world (357 doubles for the G1); ``persistent=True`` keeps one
``MjData`` per world (measured ~370 KB per G1 world once stepped: 1.5 GB at 4096 worlds).
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Dict, Optional, Sequence, Tuple, Union

import mujoco
import numpy as np
from mujoco import batch as _mjbatch
from numpy import typing as npt

from mjbatch_uni import pack as _pack
from mjbatch_uni.model import computes_cfrc_ext, setconst_inputs
from mjbatch_uni.names import did_you_mean

__all__ = [
    "Batch",
    "DATA_FIELDS",
    "DERIVED_MODES",
    "DIVERGENCE_WARNINGS",
    "MODEL_FIELDS",
    "SimulationError",
    "available_cores",
]

logger = logging.getLogger("mjbatch_uni")

SimulationError = _mjbatch.SimulationError
"""MuJoCo raised an error (``mjERROR``) in some worlds of a call; re-exported from mujoco.batch."""

DATA_FIELDS = _mjbatch.DATA_FIELDS
"""MjData field names that :meth:`Batch.bind` accepts."""
MODEL_FIELDS = _mjbatch.MODEL_FIELDS
"""MjModel field names that :meth:`Batch.expand` accepts (options as ``"opt.<name>"``)."""

_STAGE_NONE = int(mujoco.mjtStage.mjSTAGE_NONE)
_STAGE_VEL = int(mujoco.mjtStage.mjSTAGE_VEL)
_STAGE_ACC = int(mujoco.mjtStage.mjSTAGE_ACC)

DERIVED_MODES: Dict[str, int] = {"current": _STAGE_VEL, "last_substep": _STAGE_NONE}
"""``derived=`` values of :class:`Batch` and the stage each step ends with."""

DIVERGENCE_WARNINGS: Tuple[int, ...] = (
    int(mujoco.mjtWarning.mjWARN_BADQPOS),
    int(mujoco.mjtWarning.mjWARN_BADQVEL),
    int(mujoco.mjtWarning.mjWARN_BADQACC),
)
"""MuJoCo warnings that mean a world's state blew up (MuJoCo then auto-resets it to qpos0)."""

DEFAULT_OUTPUTS = ("sensordata", "xpos", "xquat", "cvel", "subtree_com")
"""Derived fields a Batch binds at construction unless told otherwise (plus cfrc_ext when the
model computes it), so that they are copied out after every call and valid from the first read."""

_INTEGRATION = int(mujoco.mjtState.mjSTATE_INTEGRATION)
_STATE_BITS = tuple(1 << i for i in range(_INTEGRATION.bit_length()) if _INTEGRATION >> i & 1)
_QPOS_BIT = int(mujoco.mjtState.mjSTATE_QPOS)
_QVEL_BIT = int(mujoco.mjtState.mjSTATE_QVEL)

Ids = Union[None, int, Sequence[int], npt.NDArray[np.integer], npt.NDArray[np.bool_]]


def available_cores() -> int:
    """Physical CPU cores this process may run on.

    On Linux: the distinct (package, core) pairs of the CPUs in the process's affinity set,
    read from ``/sys/devices/system/cpu/cpu*/topology`` (so SMT siblings count once); a CPU
    without topology information counts as its own core. Elsewhere ``os.cpu_count()``.
    """
    if not hasattr(os, "sched_getaffinity"):
        return os.cpu_count() or 1
    cores = set()
    for cpu in os.sched_getaffinity(0):
        topo = f"/sys/devices/system/cpu/cpu{cpu}/topology/"
        try:
            with open(topo + "physical_package_id") as f:
                package = f.read().strip()
            with open(topo + "core_id") as f:
                core = f.read().strip()
            cores.add((package, core))
        except OSError:
            cores.add(("cpu", str(cpu)))
    return max(1, len(cores))


def _readonly(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view


def _shown(rows: np.ndarray) -> str:
    return ", ".join(str(r) for r in rows[:8]) + (", ..." if len(rows) > 8 else "")


class Batch:
    """``nworld`` worlds of one model, stepped on ``nthread`` threads with the GIL released.

    Args:
        model: the model; the batch keeps its own copy (per-world parameters go through
            :meth:`expand`, never through model copies).
        nworld: number of worlds, >= 1.
        nthread: threads including the caller's; 0 means one per physical core available to the
            process (:func:`available_cores`, after pinning to ``cpu_ids`` if given; on systems
            without affinity support, ``len(cpu_ids)`` if given).
        cpu_ids: CPUs to run on. On Linux this calls ``os.sched_setaffinity(0, cpu_ids)`` before
            the pool threads are created: it pins the calling thread, hence the pool (which
            inherits it, and which includes the calling thread) and every thread the caller
            creates afterwards, to that set. The OS schedules the threads within the set; they
            are not bound one per CPU. Elsewhere a notice is logged and the batch runs unpinned.
        persistent: keep one ``MjData`` per world instead of one per thread. Makes
            ``derived="current"`` free, and is required for models with sleep or IPC, but costs
            memory per world (see the module docstring). Default False.
        derived: ``"current"`` or ``"last_substep"``: what derived fields describe after a step
            (module docstring).
        outputs: derived MjData fields to copy out after every call, bound now so that they are
            valid from the first read; default :data:`DEFAULT_OUTPUTS` plus ``cfrc_ext`` when the
            model computes it. Fields bound later (``bind``, the properties) read zero until the
            next call. Each costs a copy per world per call on the batch threads.

    Raises:
        ValueError: nworld < 1, nthread < 0, invalid cpu_ids, unknown derived mode or output.

    After construction every world is at the model's defaults (``qpos0``) with ``mj_forward``
    computed. The batch is a context manager; :meth:`close` releases the threads.
    Not thread-safe: use a Batch from one Python thread at a time.

    Attributes:
        transfer_stats: host-bridge counters, cumulative: ``ctrl_copies``/``ctrl_bytes`` (control
            writes into the state rows), ``state_copies``/``state_bytes`` (qpos/qvel/state
            writes), ``pack_copies``/``pack_bytes`` (:meth:`Packed.pull`).
    """

    def __init__(
        self,
        model: mujoco.MjModel,
        nworld: int,
        *,
        nthread: int = 0,
        cpu_ids: Optional[Sequence[int]] = None,
        persistent: bool = False,
        derived: str = "current",
        outputs: Optional[Sequence[str]] = None,
    ):
        if int(nworld) < 1:
            raise ValueError(f"nworld must be >= 1, got {nworld}")
        if int(nthread) < 0:
            raise ValueError(f"nthread must be >= 0 (0: one per available core), got {nthread}")
        if derived not in DERIVED_MODES:
            raise ValueError(
                f"derived must be one of {', '.join(map(repr, DERIVED_MODES))}, got {derived!r}"
            )
        self._cpu_ids = None if cpu_ids is None else self._pin(cpu_ids)
        if int(nthread) == 0:
            if self._cpu_ids is not None and not hasattr(os, "sched_setaffinity"):
                nthread = len(self._cpu_ids)
            else:
                nthread = available_cores()
            logger.debug("nthread=0: using %d threads (available cores)", nthread)
        self._b = _mjbatch.Batch(model, int(nworld), int(nthread), persistent=bool(persistent))
        self.model = model
        self._nworld = int(nworld)
        self._closed = False
        self._derived = derived
        self._stage = DERIVED_MODES[derived]
        self.transfer_stats = {
            "ctrl_copies": 0, "ctrl_bytes": 0,
            "state_copies": 0, "state_bytes": 0,
            "pack_copies": 0, "pack_bytes": 0,
        }

        # state fields: writable views of the state rows, kept private; the public ones are
        # read-only so that writes go through step(), reset() and set_state()
        self._state = self._b.state  # (nworld, nstate) float64
        self._qpos = self._b.bind("qpos")
        self._qvel = self._b.bind("qvel")
        self._ctrl = self._b.bind("ctrl")
        self._views: Dict[str, np.ndarray] = {
            "qpos": _readonly(self._qpos),
            "qvel": _readonly(self._qvel),
            "ctrl": _readonly(self._ctrl),
        }
        self.cfrc_ext_computed = computes_cfrc_ext(model)
        if outputs is None:
            outputs = DEFAULT_OUTPUTS + (("cfrc_ext",) if self.cfrc_ext_computed else ())
        for name in outputs:
            self._output(name)
        self._warning = self._b.warning  # (nworld, mjNWARNING, 2) int32: (lastinfo, number)
        # what diverged() reads, as few arrays as the layout allows: the divergence warnings'
        # counters (a slice when their indices are consecutive), qpos and qvel (one block when
        # qvel follows qpos in each state row)
        w = np.asarray(DIVERGENCE_WARNINGS)
        consecutive = bool((np.diff(w) == 1).all())
        self._divergence_counts = (self._warning[:, w[0] : w[-1] + 1, 1] if consecutive
                                   else None)  # fmt: skip
        self._finite_blocks = (self._qpos, self._qvel)
        start = self._qpos.ctypes.data - self._state.ctypes.data
        if (
            self._qpos.strides == self._qvel.strides == self._state.strides
            and self._qvel.ctypes.data == self._qpos.ctypes.data + self._qpos.shape[1] * self._qpos.itemsize
            and start % self._state.itemsize == 0
        ):  # fmt: skip
            col = start // self._state.itemsize
            self._finite_blocks = (self._state[:, col : col + self._qpos.shape[1] + self._qvel.shape[1]],)
        self._failed = np.zeros(self._nworld, bool)  # rows whose last call raised in MuJoCo
        self._b.reset(None, -1, stage=_STAGE_ACC)

    # ------------------------------------------------------------------ affinity
    @staticmethod
    def _pin(cpu_ids: Sequence[int]) -> Tuple[int, ...]:
        ids = tuple(int(c) for c in cpu_ids)
        if not ids:
            raise ValueError("cpu_ids must name at least one CPU, got an empty sequence")
        if len(set(ids)) != len(ids):
            raise ValueError(f"cpu_ids must be unique, got {list(ids)}")
        ncpu = os.cpu_count() or 1
        bad = [c for c in ids if not 0 <= c < ncpu]
        if bad:
            raise ValueError(f"cpu_ids must be in [0, os.cpu_count()={ncpu}), got {bad}")
        if not hasattr(os, "sched_setaffinity"):
            logger.info(
                "cpu_ids=%s ignored: CPU affinity is not supported on %s; threads run unpinned",
                list(ids), sys.platform,
            )
            return ids
        try:
            os.sched_setaffinity(0, ids)
        except OSError as e:
            raise ValueError(
                f"cannot pin to cpu_ids={list(ids)}: {e} (allowed now: "
                f"{sorted(os.sched_getaffinity(0))})"
            ) from e
        return ids

    # ------------------------------------------------------------------ sizes
    @property
    def nworld(self) -> int:
        return self._nworld

    @property
    def nthread(self) -> int:
        """Threads stepping the worlds, including the caller's."""
        return self._b.nthread

    @property
    def persistent(self) -> bool:
        return self._b.persistent

    @property
    def derived(self) -> str:
        """``"current"`` or ``"last_substep"`` (see the module docstring)."""
        return self._derived

    @property
    def cpu_ids(self) -> Optional[Tuple[int, ...]]:
        """The CPUs given at construction, or None."""
        return self._cpu_ids

    @property
    def nq(self) -> int:
        return self.model.nq

    @property
    def nv(self) -> int:
        return self.model.nv

    @property
    def nu(self) -> int:
        return self.model.nu

    @property
    def raw(self) -> _mjbatch.Batch:
        """The wrapped :class:`mujoco.batch.Batch`, for anything this class does not cover."""
        self._check_open()
        return self._b

    # ------------------------------------------------------------------ views
    @property
    def qpos(self) -> np.ndarray:
        """(nworld, nq) generalized positions (free joint: pos m, quat wxyz). Read-only, live."""
        return self._view("qpos")

    @property
    def qvel(self) -> np.ndarray:
        """(nworld, nv) generalized velocities. Read-only, live."""
        return self._view("qvel")

    @property
    def ctrl(self) -> np.ndarray:
        """(nworld, nu) controls the last step held. Read-only, live; write through step()."""
        return self._view("ctrl")

    @property
    def sensordata(self) -> np.ndarray:
        """(nworld, nsensordata) sensor readings (see the module docstring for their stage)."""
        return self._output("sensordata")

    @property
    def xpos(self) -> np.ndarray:
        """(nworld, nbody, 3) body frame positions, world frame, m."""
        return self._output("xpos")

    @property
    def xquat(self) -> np.ndarray:
        """(nworld, nbody, 4) body frame orientations, wxyz."""
        return self._output("xquat")

    @property
    def cvel(self) -> np.ndarray:
        """(nworld, nbody, 6) com-based velocities [ang rad/s, lin m/s], world-aligned, about
        ``subtree_com`` of each body's root body."""
        return self._output("cvel")

    @property
    def subtree_com(self) -> np.ndarray:
        """(nworld, nbody, 3) centre of mass of each body's subtree, world frame, m."""
        return self._output("subtree_com")

    @property
    def cfrc_ext(self) -> np.ndarray:
        """(nworld, nbody, 6) com-based external forces [torque N·m, force N] on each body.

        Contacts, ``xfrc_applied`` and connect/weld equality forces, from the last substep (the
        state one substep before the current one); world-aligned, the torque about
        ``subtree_com`` of the body's root body.

        Raises:
            ValueError: the model does not compute cfrc_ext (no sensor makes MuJoCo run
                mj_rnePostConstraint); see :func:`mjbatch_uni.add_cfrc_ext_trigger`.
        """
        return self._output("cfrc_ext")

    @property
    def warning(self) -> np.ndarray:
        """(nworld, mjNWARNING) int32 MuJoCo warning counters since each world's last reset."""
        self._check_open()
        return _readonly(self._warning[..., 1])

    def _view(self, name: str) -> np.ndarray:
        self._check_open()
        return self._views[name]

    def _output(self, name: str) -> np.ndarray:
        """A derived field, bound on first use (read-only; zero until the next call if new)."""
        self._check_open()
        view = self._views.get(name)
        if view is None:
            if name == "cfrc_ext" and not self.cfrc_ext_computed:
                raise ValueError(
                    "cfrc_ext is not computed by this model: MuJoCo runs mj_rnePostConstraint in "
                    "a step only for models with an acceleration sensor (accelerometer, force, "
                    "torque, framelinacc, ...); add one, e.g. with "
                    "mjbatch_uni.add_cfrc_ext_trigger(spec)"
                )
            view = self.bind(name)
            self._views[name] = view
        return view

    def bind(self, name: str) -> np.ndarray:
        """Live (nworld, ...) array of any MjData field, as :meth:`mujoco.batch.Batch.bind`.

        State fields (qpos, qvel, ctrl, act, qfrc_applied, xfrc_applied, mocap_pos, ...) are
        writable views of the state rows: a write is the world's state at its next call, with
        derived fields stale until then. Other fields are outputs, read-only, copied out after
        every call; one bound for the first time reads zero until the next call.

        Raises:
            ValueError: unknown field, with close valid names (all: :data:`DATA_FIELDS`).
        """
        self._check_open()
        try:
            return self._b.bind(name)
        except ValueError as e:
            raise ValueError(f"{e}; valid names: mjbatch_uni.DATA_FIELDS") from None

    # ------------------------------------------------------------------ the host bridge
    def pack_layout(self, items: Sequence[_pack.PackItem]) -> _pack.PackLayout:
        """The :class:`~mjbatch_uni.pack.PackLayout` of ``items`` (width, columns, shapes), to
        allocate the packed array elsewhere (e.g. pinned memory) before :meth:`pack`.

        Raises:
            ValueError: an unknown item, an item twice, or an output this batch does not compute.
            IndexError: an index outside the field's first axis.
        """
        self._check_open()
        return _pack.build(self, items)[0]

    def pack(
        self, items: Sequence[_pack.PackItem], out: Optional[np.ndarray] = None
    ) -> _pack.Packed:
        """The packed host bridge for ``items``: one float32 row per world, filled by
        :meth:`Packed.pull <mjbatch_uni.pack.Packed.pull>` (see :mod:`mjbatch_uni.pack`).

        The new buffer is pulled once, so it is valid at once (outputs bound now read zero until
        the next call: bind them at construction with ``outputs=``).

        Args:
            items: field names (state fields or outputs) or ``(output, index)`` pairs.
            out: a writable C-contiguous float32 ``(nworld, width)`` array to fill, or None to
                allocate one.

        Returns:
            The :class:`~mjbatch_uni.pack.Packed`.

        Raises:
            ValueError: as :meth:`pack_layout`; ``out`` of the wrong shape, dtype or layout.
        """
        self._check_open()
        layout, runs = _pack.build(self, items)
        packed = _pack.Packed(self, layout, runs, out)
        packed.pull()
        return packed

    def _pack_source(self, name: str) -> Tuple[np.ndarray, int, Tuple[int, ...]]:
        """(float64 (nworld, n) base rows, first column, per-world field shape) of a field."""
        if name not in DATA_FIELDS:
            raise ValueError(
                f"unknown field {name!r} to pack{did_you_mean(name, DATA_FIELDS)}; "
                "valid names: mjbatch_uni.DATA_FIELDS"
            )
        if name == "cfrc_ext":
            self._output(name)  # raises if the model does not compute it
        arr = self._b.bind(name)
        shape = tuple(arr.shape[1:])
        if np.may_share_memory(arr, self._state):  # a state field: columns of the state rows
            offset = arr.__array_interface__["data"][0] - self._state.__array_interface__["data"][0]
            return self._state, offset // self._state.itemsize, shape
        if arr.dtype != np.float64:
            raise ValueError(f"{name} is {arr.dtype}; only floating-point fields can be packed")
        self._views.setdefault(name, arr)
        return arr.reshape(self._nworld, -1), 0, shape

    def _count(self, kind: str, copies: int, nbytes: int) -> None:
        self.transfer_stats[f"{kind}_copies"] += copies
        self.transfer_stats[f"{kind}_bytes"] += int(nbytes)

    # ------------------------------------------------------------------ stepping
    def step(self, ctrl: Optional[npt.ArrayLike], nstep: int = 1) -> None:
        """Hold ``ctrl`` for ``nstep`` physics steps in every world; the GIL is released while
        the physics runs. Derived fields afterwards: see ``derived`` (module docstring).

        A world in which MuJoCo raises an error (:class:`SimulationError`, e.g. its arena
        overflowed) keeps the state it had before the call, and the others run on: the call does
        not raise; the world is reported by :meth:`diverged` until it is reset, and a warning is
        logged. A world whose state blows up (bad qpos/qvel/qacc) is auto-reset by MuJoCo and
        reported by :meth:`diverged` likewise.

        Args:
            ctrl: (nworld, nu) float32 or float64 controls (numpy, or anything ``np.asarray``
                takes without a copy, such as a CPU torch tensor), or None to keep the current
                ones. One vectorised copy into the state rows.
            nstep: physics steps (substeps), >= 1.

        Raises:
            ValueError: wrong ctrl shape or dtype, non-finite ctrl (naming the rows), nstep < 1.
        """
        self._check_open()
        if int(nstep) < 1:
            raise ValueError(f"nstep must be >= 1, got {nstep}")
        if ctrl is not None:
            self._write_ctrl(ctrl)
        try:
            self._b.step(None, int(nstep), self._stage)
        except SimulationError as e:
            self._failed[e.ids] = True
            logger.warning("%s; reported by diverged() until reset", e)

    def _write_ctrl(self, ctrl: npt.ArrayLike) -> None:
        ctrl = np.asarray(ctrl)
        shape = (self._nworld, self.model.nu)
        if ctrl.shape != shape:
            raise ValueError(
                f"ctrl must have shape (nworld={shape[0]}, nu={shape[1]}), got {ctrl.shape}"
            )
        if ctrl.dtype not in (np.float32, np.float64):
            raise ValueError(f"ctrl must be float32 or float64, got {ctrl.dtype}")
        if not np.isfinite(ctrl).all():
            rows = np.flatnonzero(~np.isfinite(ctrl).all(axis=1))
            raise ValueError(f"ctrl has non-finite values in {len(rows)} rows: {_shown(rows)}")
        np.copyto(self._ctrl, ctrl)
        self._count("ctrl", 1, ctrl.size * 8)

    def forward(self, ids: Ids = None, stage: int = _STAGE_ACC) -> None:
        """Compute the forward stages up to ``stage`` (default: all, ``mj_forward``) for rows.

        Raises:
            IndexError: a row outside [0, nworld).
            SimulationError: MuJoCo raised in some rows (also reported by diverged()).
        """
        self._check_open()
        rows, _ = self._rows(ids)
        self._call(self._b.forward, rows, stage=int(stage))

    # ------------------------------------------------------------------ rows: read, write, reset
    def reset(
        self,
        ids: Ids = None,
        qpos: Optional[npt.ArrayLike] = None,
        qvel: Optional[npt.ArrayLike] = None,
        keyframe: Union[None, int, npt.ArrayLike] = None,
        *,
        dqpos: Optional[npt.ArrayLike] = None,
        dqvel: Optional[npt.ArrayLike] = None,
        stage: int = _STAGE_ACC,
    ) -> None:
        """Reset rows to a keyframe plus a perturbation, and run ``mj_forward`` on them: one call.

        In order, for the rows ``ids`` only: ``mj_resetDataKeyframe`` (qpos, qvel, act, ctrl and
        mocap from the keyframe; time, warm start, applied forces and warning counters cleared);
        ``qpos``/``qvel`` overwrite the keyframe's if given; ``dqpos`` is integrated into qpos as
        a velocity over 1 s (``mj_integratePos(m, qpos, dqpos, 1)``: joint-space offsets for
        hinge and slide joints, and rotation vectors, local frame, for ball and free joints, so
        quaternions stay unit); ``dqvel`` is added to qvel; then ``mj_forward`` (or its stages up
        to ``stage``). Other rows are untouched.

        Args:
            ids: rows, in any order (int array, sequence, or a (nworld,) bool mask); None for all.
            qpos: (k, nq) positions for the k rows in the order of ``ids``, or None.
            qvel: (k, nv) velocities likewise, or None.
            keyframe: keyframe index for every row, or one per row (k,); -1 for the model's
                defaults; None for keyframe 0 if the model has keyframes, else the defaults.
            dqpos: (k, nv) position perturbation (rad, m; tangent space), or None.
            dqvel: (k, nv) velocity perturbation (rad/s, m/s), or None.
            stage: ``mjSTAGE_ACC`` (default): ``mj_forward``, everything at the reset state;
                ``mjSTAGE_VEL``: the position and velocity stages only (poses, velocities and
                the position- and velocity-dependent sensors at the reset state), the
                acceleration-dependent values (``qacc``, ``cfrc_ext``, acceleration-stage
                sensors such as ``touch``, ``force``, ``contact``) left as the reset cleared them
                (zero) until the rows' next step, which computes every stage itself (the
                trajectory from there is the same: a forward pass writes no state the step
                reads). It skips the constraint solver, most of a reset's cost on a robot in
                contact. The batch's copied outputs of those values (``cfrc_ext`` and the
                ``sensordata`` outputs) can differ: with several threads a non-persistent batch
                sometimes leaves a reset row's output as a last step wrote it, usually the row's
                own, rarely another row's that the thread's data last held (1 reset in 4 to 1 in 7
                with 2 threads, never with 1 or persistent); they are read-only here, so a reader
                that needs the zeros writes them in its own copy, as ``unisim``'s
                ``MujocoBackend.reset`` does.

        Raises:
            IndexError: a row outside [0, nworld).
            ValueError: duplicate rows, wrong shapes, non-finite values, a bad keyframe, a stage
                other than those two.
            SimulationError: MuJoCo raised in the forward pass of some rows.
        """
        self._check_open()
        if int(stage) not in (_STAGE_VEL, _STAGE_ACC):
            raise ValueError(f"stage must be mjSTAGE_VEL ({_STAGE_VEL}) or mjSTAGE_ACC ({_STAGE_ACC}), got {stage}")
        rows, order = self._rows(ids)
        if rows is not None and len(rows) == 0:
            return
        values = self._state_values(rows, order, qpos=qpos, qvel=qvel, dqpos=dqpos, dqvel=dqvel)
        if keyframe is None:
            keyframe = 0 if self.model.nkey else -1
        keyframe = np.asarray(keyframe)
        if keyframe.ndim == 1 and order is not None:
            keyframe = keyframe[order]
        try:
            self._b.reset(rows, keyframe, stage=_STAGE_NONE)
        except ValueError as e:
            raise ValueError(f"bad keyframe: {e} (the model has {self.model.nkey})") from None
        self._write_state(rows, values)
        self._failed[slice(None) if rows is None else rows] = False
        self._call(self._b.forward, rows, stage=int(stage))

    def set_state(
        self,
        ids: Ids,
        qpos: Optional[npt.ArrayLike] = None,
        qvel: Optional[npt.ArrayLike] = None,
        *,
        state: Optional[npt.ArrayLike] = None,
        spec: int = _INTEGRATION,
    ) -> None:
        """Overwrite rows' state mid-episode (e.g. a push), then ``mj_forward`` on them.

        ``state`` (components ``spec``, as ``mj_setState``) is written first, then ``qpos`` and
        ``qvel``. What is not written is kept (time, ctrl, warm start, warning counters); other
        rows are untouched. Stepping on afterwards equals writing an MjData's fields and calling
        ``mj_step``.

        Args:
            ids: rows, in any order (int array, sequence, or a (nworld,) bool mask); None for all.
            qpos: (k, nq) positions for the k rows in the order of ``ids``, or None.
            qvel: (k, nv) velocities likewise, or None.
            state: (k, mj_stateSize(spec)) state vectors, as from :meth:`get_state`, or None.
            spec: the ``mjtState`` components of ``state``, within ``mjSTATE_INTEGRATION``.

        Raises:
            IndexError: a row outside [0, nworld).
            ValueError: duplicate rows, wrong shapes, non-finite values, a bad spec.
            SimulationError: MuJoCo raised in the forward pass of some rows.
        """
        self._check_open()
        rows, order = self._rows(ids)
        if rows is not None and len(rows) == 0:
            return
        cols = self._state_columns(spec) if state is not None else None
        values = self._state_values(rows, order, qpos=qpos, qvel=qvel, state=(state, cols))
        self._write_state(rows, values)
        self._call(self._b.forward, rows, stage=_STAGE_ACC)

    def get_state(self, ids: Ids = None, spec: int = _INTEGRATION) -> np.ndarray:
        """(k, mj_stateSize(spec)) copy of the rows' state components ``spec``, as
        ``mj_getState``, in the order of ``ids`` (all rows if None).

        Raises:
            IndexError: a row outside [0, nworld).
            ValueError: duplicate rows, a spec outside ``mjSTATE_INTEGRATION``.
        """
        self._check_open()
        rows, order = self._rows(ids)
        cols = self._state_columns(spec)
        sel = slice(None) if rows is None else rows
        out = self._state[sel][:, cols] if not isinstance(cols, slice) else self._state[sel, cols]
        out = np.array(out)
        if order is not None:  # back to the caller's order
            back = np.empty_like(order)
            back[order] = np.arange(len(order))
            out = out[back]
        return out

    def _state_columns(self, spec: int) -> Union[slice, np.ndarray]:
        spec = int(spec)
        if spec <= 0 or spec & ~_INTEGRATION:
            raise ValueError(
                f"spec must be a non-empty set of mjtState components within "
                f"mjSTATE_INTEGRATION={_INTEGRATION}, got {spec}"
            )
        parts = []
        for bit in _STATE_BITS:
            if spec & bit:
                offset, size = self._b._component(bit)
                parts.append(np.arange(offset, offset + size))
        cols = np.concatenate(parts) if parts else np.zeros(0, int)
        if len(cols) and (np.diff(cols) == 1).all():
            return slice(int(cols[0]), int(cols[-1]) + 1)
        return cols

    def _state_values(self, rows, order, **arrays) -> dict:
        """Checked arrays, reordered to the sorted rows."""
        n = self._nworld if rows is None else len(rows)
        widths = {"qpos": ("nq", self.model.nq), "qvel": ("nv", self.model.nv),
                  "dqpos": ("nv", self.model.nv), "dqvel": ("nv", self.model.nv)}
        values = {}
        for name, arr in arrays.items():
            if name == "state":
                arr, cols = arr
                if arr is None:
                    continue
                nc = cols.stop - cols.start if isinstance(cols, slice) else len(cols)
                w, width = "mj_stateSize(spec)", nc
            else:
                if arr is None:
                    continue
                w, width = widths[name]
            arr = np.asarray(arr)
            if arr.shape != (n, width):
                raise ValueError(
                    f"{name} must have shape (len(ids)={n}, {w}={width}), got {arr.shape}"
                )
            if arr.dtype.kind not in "fiu":
                raise ValueError(f"{name} must be a float array, got {arr.dtype}")
            finite = np.isfinite(arr).all(axis=1)
            if not finite.all():
                bad = np.flatnonzero(~finite)
                raise ValueError(f"{name} has non-finite values in rows {bad[:8].tolist()} of ids")
            arr = arr if order is None else arr[order]
            values[name] = (arr, cols) if name == "state" else arr
        return values

    def _write_state(self, rows, values: dict) -> None:
        sel = slice(None) if rows is None else rows
        n = self._nworld if rows is None else len(rows)
        if "state" in values:
            arr, cols = values["state"]
            if isinstance(cols, slice):
                self._state[sel, cols] = arr
            else:
                block = self._state[sel]
                block[:, cols] = arr
                self._state[sel] = block
            self._count("state", 1, arr.size * 8)
        for name in ("qpos", "qvel"):
            if name in values:
                (self._qpos if name == "qpos" else self._qvel)[sel] = values[name]
                self._count("state", 1, values[name].size * 8)
        if "dqpos" in values:
            q = np.array(self._qpos[sel])
            dq = np.ascontiguousarray(values["dqpos"], dtype=np.float64)
            for i in range(n):
                mujoco.mj_integratePos(self.model, q[i], dq[i], 1.0)
            self._qpos[sel] = q
            self._count("state", 1, q.size * 8)
        if "dqvel" in values:
            self._qvel[sel] += values["dqvel"]
            self._count("state", 1, values["dqvel"].size * 8)

    def _call(self, fn, rows: Optional[np.ndarray], **kwargs) -> None:
        try:
            fn(rows, **kwargs)
        except SimulationError as e:
            self._failed[e.ids] = True
            raise

    # ------------------------------------------------------------------ divergence
    def diverged(self) -> np.ndarray:
        """(nworld,) bool: rows that diverged since their last reset.

        A row is diverged if its qpos or qvel is non-finite, if MuJoCo raised one of
        :data:`DIVERGENCE_WARNINGS` in it (bad qpos, qvel or qacc; MuJoCo then auto-resets the
        world to the model defaults, so its state looks finite but is not the trajectory), or if
        its last call raised a :class:`SimulationError`. The other rows are unaffected and the
        batch keeps stepping all of them; reset the diverged rows.
        """
        self._check_open()
        counts = self._divergence_counts
        if counts is None:
            counts = self._warning[:, DIVERGENCE_WARNINGS, 1]
        bad = (counts > 0).any(axis=1)
        for block in self._finite_blocks:
            bad |= ~np.isfinite(block).all(axis=1)
        return bad | self._failed

    def error(self, world: int) -> str:
        """MuJoCo's message for the error ``world`` raised in its last call, or ''."""
        self._check_open()
        return self._b.error(self._row(world))

    # ------------------------------------------------------------------ model parameters
    def expand(self, name: str) -> np.ndarray:
        """Give model field ``name`` per-world values; return them, live and writable.

        Returns (nworld, *field_shape) of the field's dtype, initialized to the model's value.
        Option fields are named ``"opt.<name>"``. A write takes effect at each world's next
        call; after writing a field that ``mj_setConst`` reads (:func:`setconst_inputs`:
        ``body_mass``, ``body_ipos``, ``body_inertia``, ``dof_armature``, ...; or an option
        field), call :meth:`set_const` for the rows (:meth:`set_model_field` does both).
        Memory: one row of this field per world, never a model copy per world.

        Raises:
            ValueError: not an expandable field, with close valid names (all: MODEL_FIELDS).
        """
        self._check_open()
        try:
            return self._b.expand(name)
        except ValueError as e:
            raise ValueError(f"{e}; valid names: mjbatch_uni.MODEL_FIELDS") from None

    def set_model_field(self, name: str, ids: Ids, values: npt.ArrayLike) -> None:
        """Give rows ``ids`` their own values of floating-point model field ``name``: one call.

        Expands the field (per-world storage of that one field, never a model copy), writes the
        rows, and runs ``mj_setConst`` on them when the field is one it reads
        (:func:`setconst_inputs`) or an option. Acts from each row's next call; the state and
        derived fields are not recomputed. Typical domain randomization: ``geom_friction``
        (ngeom, 3); ``body_mass`` (nbody,) kg; ``body_ipos`` (nbody, 3) m, the CoM offset in the
        body frame; position-actuator gains ``actuator_gainprm[:, 0]`` = kp together with
        ``actuator_biasprm[:, 1]`` = -kp and ``actuator_biasprm[:, 2]`` = -kv.

        Args:
            name: MjModel field, or ``"opt.<field>"`` for an option.
            ids: rows, in any order (int array, sequence, or a (nworld,) bool mask); None for all.
            values: (k, *field_shape) float values in the order of ``ids``.

        Raises:
            ValueError: unknown or non-float field (with close valid names), wrong values shape,
                non-finite values, duplicate rows.
            IndexError: a row outside [0, nworld).
        """
        self._check_open()
        rows, order = self._rows(ids)
        field = self.expand(name)
        if field.dtype.kind != "f":
            raise ValueError(f"{name} is {field.dtype}; set_model_field sets floating-point fields")
        n = self._nworld if rows is None else len(rows)
        values = np.asarray(values)
        expected = (n, *field.shape[1:])
        if values.shape != expected:
            raise ValueError(
                f"values for {name} must have shape (len(ids)={n}, "
                f"{', '.join(map(str, field.shape[1:]))}), got {values.shape}"
            )
        if not np.isfinite(values).all():
            raise ValueError(f"values for {name} must be finite")
        if order is not None:
            values = values[order]
        field[slice(None) if rows is None else rows] = values
        if name in setconst_inputs() or name.startswith("opt."):
            self._call(self._b.set_const, rows)

    def model_values(self, name: str) -> np.ndarray:
        """(nworld, *field_shape) read-only per-world values of a model field, expanded or not.

        Raises:
            ValueError: not an expandable field, with close valid names.
        """
        self._check_open()
        try:
            values = self._b.expanded(name)
        except ValueError as e:
            raise ValueError(f"{e}; valid names: mjbatch_uni.MODEL_FIELDS") from None
        if values is not None:
            return values
        if name.startswith("opt."):
            base = np.asarray(getattr(self.model.opt, name[4:]))
        else:
            base = getattr(self.model, name)
        return np.broadcast_to(base, (self._nworld, *base.shape))

    def set_const(self, ids: Ids = None) -> None:
        """Run ``mj_setConst`` on the rows' models so derived constants follow expanded fields.

        Raises:
            IndexError: a row outside [0, nworld).
            SimulationError: MuJoCo raised in some rows.
        """
        self._check_open()
        rows, _ = self._rows(ids)
        self._call(self._b.set_const, rows)

    # ------------------------------------------------------------------ one world
    def get_data(self, world: int, data: Optional[mujoco.MjData] = None) -> mujoco.MjData:
        """World ``world``'s MjData: its state, and in a persistent batch its derived fields
        (else run ``mj_forward(batch.get_model(world), data)`` for them)."""
        self._check_open()
        return self._b.get_data(self._row(world), data)

    def get_model(self, world: int) -> mujoco.MjModel:
        """World ``world``'s model, with its per-world fields, for rendering or any mj_ call."""
        self._check_open()
        return self._b.get_model(self._row(world))

    # ------------------------------------------------------------------ rows
    def _row(self, world: int) -> int:
        if not 0 <= int(world) < self._nworld:
            raise IndexError(f"world must be in [0, nworld={self._nworld}), got {world}")
        return int(world)

    def _rows(self, ids: Ids) -> Tuple[Optional[np.ndarray], Optional[np.ndarray]]:
        """(sorted int32 rows or None for all, permutation that sorts the caller's order)."""
        if ids is None:
            return None, None
        ids = np.asarray(ids)
        if ids.dtype == bool:
            if ids.shape != (self._nworld,):
                raise ValueError(
                    f"a boolean ids mask must have shape (nworld={self._nworld},), got {ids.shape}"
                )
            return np.flatnonzero(ids).astype(np.int32), None
        ids = ids.reshape(-1) if ids.ndim == 0 else ids
        if ids.ndim != 1:
            raise ValueError(f"ids must be one-dimensional, got shape {ids.shape}")
        if ids.size == 0:
            return np.zeros(0, np.int32), None
        if not np.issubdtype(ids.dtype, np.integer):
            raise ValueError(f"ids must be integers, got {ids.dtype}")
        lo, hi = ids.min(), ids.max()
        if lo < 0 or hi >= self._nworld:
            bad = lo if lo < 0 else hi
            raise IndexError(f"ids must be in [0, nworld={self._nworld}), got {bad}")
        order = None
        if ids.size > 1 and not (ids[1:] > ids[:-1]).all():
            order = np.argsort(ids, kind="stable")
            ids = ids[order]
            dup = ids[1:] == ids[:-1]
            if dup.any():
                raise ValueError(f"ids must be unique, got {ids[1:][dup][0]} twice")
        return np.ascontiguousarray(ids, dtype=np.int32), order

    # ------------------------------------------------------------------ lifetime
    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this Batch is closed")

    def close(self) -> None:
        """Drop the batch; its threads and memory are freed once no array from it is alive.

        Arrays obtained earlier keep the underlying MuJoCo batch alive (they stay valid).
        Idempotent; any other call afterwards raises RuntimeError.
        """
        if self._closed:
            return
        self._closed = True
        self._views = {}
        self._qpos = self._qvel = self._ctrl = self._warning = self._state = None
        self._b = None

    def __enter__(self) -> "Batch":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._closed:
            return f"Batch(nworld={self._nworld}, closed)"
        state = f"nthread={self.nthread}, persistent={self.persistent}, derived={self._derived!r}"
        return f"Batch(nworld={self._nworld}, {state})"
