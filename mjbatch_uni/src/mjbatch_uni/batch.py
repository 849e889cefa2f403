"""Many worlds of one MuJoCo model, stepped on a persistent thread pool.

:class:`Batch` wraps MuJoCo's own batch stepper, :class:`mujoco.batch.Batch` (MuJoCo >= 3.17), and
adds what an RL environment needs on top of it: controls written and checked in one call, read-only
batched views, a one-call selected reset, per-world model parameters, CPU affinity and a
per-row divergence report instead of exceptions from the physics.

  batch = Batch(model, nworld=1024, nthread=8)
  for _ in range(1000):
    batch.step(policy(batch.qpos, batch.qvel), nstep=4)   # ctrl (nworld, nu), held 4 substeps
    done = batch.diverged() | terminated(batch.xpos)
    batch.reset(np.flatnonzero(done))

Every array is ``(nworld, ...)`` and float64 (MuJoCo's ``mjtNum``) unless stated. Units are
MuJoCo's: SI (m, rad, s, kg, N) for the usual models.

State after :meth:`Batch.step`: the batch is persistent (one ``MjData`` per world, by default) and
every step ends with the position and velocity stages computed at the new state
(``mjSTAGE_VEL``): ``xpos``, ``xquat``, ``cvel``, ``subtree_com`` and the position- and
velocity-dependent sensors describe the state the step ended in, as after ``mj_step1``. A
persistent batch starts its next step from those stages, so this costs nothing extra (measured:
within noise of ``mjSTAGE_NONE``; a non-persistent batch pays ~10-20 % for the same stages at
``nstep=4``). Acceleration-dependent values (``cfrc_ext``, acceleration-stage sensors such as
``touch``, ``accelerometer``, ``force``) are those MuJoCo computed during the last substep, i.e. at
the state one substep before the returned one. Trajectories are bit-identical to a loop of
``mujoco.mj_step`` over one ``MjData`` per world, at any thread count.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Optional, Sequence, Tuple, Union

import mujoco
import numpy as np
from mujoco import batch as _mjbatch
from numpy import typing as npt

__all__ = [
    "Batch",
    "SimulationError",
    "DIVERGENCE_WARNINGS",
    "add_cfrc_ext_trigger",
    "computes_cfrc_ext",
    "setconst_inputs",
]

logger = logging.getLogger("mjbatch_uni")

SimulationError = _mjbatch.SimulationError
"""MuJoCo raised an error (``mjERROR``) in some worlds of a call; re-exported from mujoco.batch."""

_STAGE_NONE = int(mujoco.mjtStage.mjSTAGE_NONE)
_STAGE_VEL = int(mujoco.mjtStage.mjSTAGE_VEL)
_STAGE_ACC = int(mujoco.mjtStage.mjSTAGE_ACC)

DIVERGENCE_WARNINGS: Tuple[int, ...] = (
    int(mujoco.mjtWarning.mjWARN_BADQPOS),
    int(mujoco.mjtWarning.mjWARN_BADQVEL),
    int(mujoco.mjtWarning.mjWARN_BADQACC),
)
"""MuJoCo warnings that mean a world's state blew up (MuJoCo then auto-resets it to qpos0)."""

# Derived fields every Batch binds at construction, so that they are copied out after every call
# and valid from the first read on. cfrc_ext is added only if the model computes it.
_OUTPUTS = ("sensordata", "xpos", "xquat", "cvel", "subtree_com")

# model fields mj_setConst reads (mujoco exposes the list privately; this is its 4.0 subset that
# domain randomization touches, used only if the private attribute disappears)
_SETCONST_FALLBACK = (
    "qpos0", "body_pos", "body_quat", "body_ipos", "body_iquat", "body_mass", "body_inertia",
    "dof_armature", "jnt_pos", "jnt_axis", "geom_size", "geom_pos", "geom_quat", "site_pos",
    "site_quat", "actuator_gear",
)

Ids = Union[None, int, Sequence[int], npt.NDArray[np.integer], npt.NDArray[np.bool_]]


def setconst_inputs() -> Tuple[str, ...]:
    """Names of the MjModel fields that mj_setConst reads (call set_const after writing one)."""
    return tuple(getattr(mujoco.MjModel, "_setconst_inputs", _SETCONST_FALLBACK))


def computes_cfrc_ext(model: mujoco.MjModel) -> bool:
    """Whether ``mj_step`` on ``model`` computes ``cfrc_ext`` (and ``cacc``, ``cfrc_int``).

    MuJoCo runs ``mj_rnePostConstraint`` inside a step only when the model has a sensor that
    needs it (an accelerometer, force, torque, frame acceleration sensor, ...). This probes the
    model directly: it applies a force to a body on a scratch ``MjData``, runs ``mj_forward`` and
    checks whether ``cfrc_ext`` saw it, so it also respects disabled sensors.

    Returns:
        True if the model computes cfrc_ext during every step.
    """
    if model.nbody < 2:
        return False
    data = mujoco.MjData(model)
    data.xfrc_applied[1] = (0.0, 0.0, 1.0, 0.0, 0.0, 0.0)
    mujoco.mj_forward(model, data)
    return bool(np.any(data.cfrc_ext[1] != 0))


def add_cfrc_ext_trigger(spec: mujoco.MjSpec, name: str = "mjbatch_uni_cfrc_ext") -> None:
    """Add a 3-value sensor to ``spec`` that makes every step compute ``cfrc_ext``.

    The sensor is a ``framelinacc`` of the world body (always zero); its only effect is that
    MuJoCo runs ``mj_rnePostConstraint`` once per substep, which costs about 1.5 us per step for a
    14-body humanoid (a few per cent of a step). It does not change the trajectory. Compile the
    spec afterwards. The sensor takes the last 3 entries of ``sensordata``.

    Args:
        spec: the model's spec, modified in place.
        name: the sensor's name.
    """
    spec.add_sensor(
        name=name,
        type=mujoco.mjtSensor.mjSENS_FRAMELINACC,
        objtype=mujoco.mjtObj.mjOBJ_BODY,
        objname="world",
    )


def _available_cpus() -> int:
    """CPUs this process may run on: its affinity set on Linux, else os.cpu_count()."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _readonly(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view


class Batch:
    """``nworld`` worlds of one model, stepped on ``nthread`` threads with the GIL released.

    Args:
        model: the model; the batch keeps its own copy (per-world parameters go through
            :meth:`expand`, never through model copies).
        nworld: number of worlds, >= 1.
        nthread: threads including the caller's; 0 means one per CPU available to the process
            (``len(os.sched_getaffinity(0))`` on Linux, else ``os.cpu_count()``), after pinning
            to ``cpu_ids`` if given.
        cpu_ids: CPUs to run on. On Linux this calls ``os.sched_setaffinity(0, cpu_ids)`` before
            the pool threads are created: it pins the calling thread, hence the pool (which
            inherits it, and which includes the calling thread) and every thread the caller
            creates afterwards, to that set. The OS schedules the threads within the set; they
            are not bound one per CPU. Elsewhere a notice is logged and the batch runs unpinned.
        persistent: keep one ``MjData`` per world (default). Required for a free
            ``mjSTAGE_VEL`` at the end of every step and for models with sleep or IPC. It costs
            memory per world (measured ~0.2 MB for a 14-body humanoid; more for bigger models);
            False keeps one ``MjData`` per thread and makes every step compute the velocity
            stage again at the end (~10-20 % slower at nstep=4).

    Raises:
        ValueError: nworld < 1, nthread < 0, or invalid cpu_ids.

    After construction every world is at the model's defaults (``qpos0``) with ``mj_forward``
    computed. The batch is a context manager; :meth:`close` releases the threads.
    Not thread-safe: use a Batch from one Python thread at a time.
    """

    def __init__(
        self,
        model: mujoco.MjModel,
        nworld: int,
        *,
        nthread: int = 0,
        cpu_ids: Optional[Sequence[int]] = None,
        persistent: bool = True,
    ):
        if int(nworld) < 1:
            raise ValueError(f"nworld must be >= 1, got {nworld}")
        if int(nthread) < 0:
            raise ValueError(f"nthread must be >= 0 (0: one per available CPU), got {nthread}")
        self._cpu_ids = None if cpu_ids is None else self._pin(cpu_ids)
        nthread = int(nthread) or _available_cpus()
        self._b = _mjbatch.Batch(model, int(nworld), nthread, persistent=persistent)
        self.model = model
        self._nworld = int(nworld)
        self._closed = False

        # state fields: writable views of the state rows, kept private; the public ones are
        # read-only so that writes go through step() and reset()
        self._qpos = self._b.bind("qpos")
        self._qvel = self._b.bind("qvel")
        self._ctrl = self._b.bind("ctrl")
        self._views = {
            "qpos": _readonly(self._qpos),
            "qvel": _readonly(self._qvel),
            "ctrl": _readonly(self._ctrl),
        }
        self.cfrc_ext_computed = computes_cfrc_ext(model)
        outputs = _OUTPUTS + (("cfrc_ext",) if self.cfrc_ext_computed else ())
        for name in outputs:
            self._views[name] = self._b.bind(name)  # outputs are read-only already
        self._warning = self._b.warning  # (nworld, mjNWARNING, 2) int32: (lastinfo, number)
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
        return self._view("sensordata")

    @property
    def xpos(self) -> np.ndarray:
        """(nworld, nbody, 3) body frame positions, world frame, m."""
        return self._view("xpos")

    @property
    def xquat(self) -> np.ndarray:
        """(nworld, nbody, 4) body frame orientations, wxyz."""
        return self._view("xquat")

    @property
    def cvel(self) -> np.ndarray:
        """(nworld, nbody, 6) com-based velocities [ang rad/s, lin m/s], world-aligned, about
        ``subtree_com`` of each body's root body."""
        return self._view("cvel")

    @property
    def subtree_com(self) -> np.ndarray:
        """(nworld, nbody, 3) centre of mass of each body's subtree, world frame, m."""
        return self._view("subtree_com")

    @property
    def cfrc_ext(self) -> np.ndarray:
        """(nworld, nbody, 6) com-based external forces [torque N·m, force N] on each body.

        Contacts, ``xfrc_applied`` and connect/weld equality forces, from the last substep (the
        state one substep before the current one); world-aligned, the torque about
        ``subtree_com`` of the body's root body.

        Raises:
            ValueError: the model does not compute cfrc_ext (no sensor makes MuJoCo run
                mj_rnePostConstraint); see :func:`add_cfrc_ext_trigger`.
        """
        if not self.cfrc_ext_computed:
            raise ValueError(
                "cfrc_ext is not computed by this model: MuJoCo runs mj_rnePostConstraint in a "
                "step only for models with an acceleration sensor (accelerometer, force, torque, "
                "framelinacc, ...); add one, e.g. with mjbatch_uni.add_cfrc_ext_trigger(spec)"
            )
        return self._view("cfrc_ext")

    @property
    def warning(self) -> np.ndarray:
        """(nworld, mjNWARNING) int32 MuJoCo warning counters since each world's last reset."""
        self._check_open()
        return _readonly(self._warning[..., 1])

    def _view(self, name: str) -> np.ndarray:
        self._check_open()
        return self._views[name]

    def bind(self, name: str) -> np.ndarray:
        """Live (nworld, ...) array of any MjData field, as :meth:`mujoco.batch.Batch.bind`.

        State fields (qpos, qvel, ctrl, act, qfrc_applied, xfrc_applied, mocap_pos, ...) are
        writable views of the state rows: a write is the world's state at its next call, with
        derived fields stale until then. Other fields are outputs, read-only, copied out after
        every call; one bound for the first time reads zero until the next call.

        Raises:
            ValueError: unknown field, with close valid names.
        """
        self._check_open()
        return self._b.bind(name)

    # ------------------------------------------------------------------ stepping
    def step(self, ctrl: Optional[npt.ArrayLike], nstep: int = 1) -> None:
        """Hold ``ctrl`` for ``nstep`` physics steps in every world, then compute the position
        and velocity stages at the new state. The GIL is released while the physics runs.

        A world in which MuJoCo raises an error (:class:`SimulationError`, e.g. its arena
        overflowed) keeps the state it had before the call, and the others run on: the call does
        not raise; the world is reported by :meth:`diverged` until it is reset, and a warning is
        logged.

        Args:
            ctrl: (nworld, nu) float32 or float64 controls, or None to keep the current ones.
            nstep: physics steps (substeps), >= 1.

        Raises:
            ValueError: wrong ctrl shape or dtype, non-finite ctrl (naming the rows), nstep < 1.
        """
        self._check_open()
        if ctrl is not None:
            self._write_ctrl(ctrl)
        if int(nstep) < 1:
            raise ValueError(f"nstep must be >= 1, got {nstep}")
        try:
            self._b.step(None, int(nstep), _STAGE_VEL)
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
        finite = np.isfinite(ctrl).all(axis=1)
        if not finite.all():
            rows = np.flatnonzero(~finite)
            shown = ", ".join(str(r) for r in rows[:8]) + (", ..." if len(rows) > 8 else "")
            raise ValueError(f"ctrl has non-finite values in {len(rows)} rows: {shown}")
        np.copyto(self._ctrl, ctrl)

    def forward(self, ids: Ids = None, stage: int = _STAGE_ACC) -> None:
        """Compute the forward stages up to ``stage`` (default: all, ``mj_forward``) for rows.

        Raises:
            IndexError: a row outside [0, nworld).
            SimulationError: MuJoCo raised in some rows (also reported by diverged()).
        """
        self._check_open()
        rows, _ = self._rows(ids)
        self._call(self._b.forward, rows, stage=int(stage))

    def reset(
        self,
        ids: Ids = None,
        qpos: Optional[npt.ArrayLike] = None,
        qvel: Optional[npt.ArrayLike] = None,
        keyframe: Union[None, int, npt.ArrayLike] = None,
    ) -> None:
        """Reset rows to a keyframe, overwrite their qpos/qvel, and run ``mj_forward`` on them.

        One call: ``reset(stage=mjSTAGE_NONE)`` (``mj_resetDataKeyframe``: qpos, qvel, act, ctrl
        and mocap from the keyframe; time, warm start, applied forces and warning counters
        cleared), then the state writes, then ``forward(ids)``. Other rows are untouched.

        Args:
            ids: rows, in any order (int array, sequence, or a (nworld,) bool mask); None for all.
            qpos: (k, nq) positions for the k rows in the order of ``ids``, or None.
            qvel: (k, nv) velocities likewise, or None.
            keyframe: keyframe index for every row, or one per row (k,); -1 for the model's
                defaults; None for keyframe 0 if the model has keyframes, else the defaults.

        Raises:
            IndexError: a row outside [0, nworld).
            ValueError: duplicate rows, wrong qpos/qvel shape, non-finite qpos/qvel, bad keyframe.
            SimulationError: MuJoCo raised in the forward pass of some rows.
        """
        self._check_open()
        rows, order = self._rows(ids)
        if rows is not None and len(rows) == 0:
            return
        values = self._state_values(rows, order, qpos, qvel)
        if keyframe is None:
            keyframe = 0 if self.model.nkey else -1
        keyframe = np.asarray(keyframe)
        if keyframe.ndim == 1 and order is not None:
            keyframe = keyframe[order]
        self._b.reset(rows, keyframe, stage=_STAGE_NONE)
        self._write_state(rows, values)
        self._failed[slice(None) if rows is None else rows] = False
        self._call(self._b.forward, rows, stage=_STAGE_ACC)

    def set_state(
        self,
        ids: Ids,
        qpos: Optional[npt.ArrayLike] = None,
        qvel: Optional[npt.ArrayLike] = None,
    ) -> None:
        """Overwrite qpos and/or qvel of rows mid-episode (e.g. a push), then ``mj_forward``.

        Time, ctrl, the solver warm start and the warning counters are kept; other rows are
        untouched. Stepping on afterwards equals writing ``d.qpos``/``d.qvel`` of an MjData and
        calling ``mj_step``.

        Args:
            ids: rows, in any order (int array, sequence, or a (nworld,) bool mask); None for all.
            qpos: (k, nq) positions for the k rows in the order of ``ids``, or None.
            qvel: (k, nv) velocities likewise, or None.

        Raises:
            IndexError: a row outside [0, nworld).
            ValueError: duplicate rows, wrong qpos/qvel shape, non-finite qpos/qvel.
            SimulationError: MuJoCo raised in the forward pass of some rows.
        """
        self._check_open()
        rows, order = self._rows(ids)
        if rows is not None and len(rows) == 0:
            return
        self._write_state(rows, self._state_values(rows, order, qpos, qvel))
        self._call(self._b.forward, rows, stage=_STAGE_ACC)

    def _state_values(self, rows, order, qpos, qvel) -> dict:
        """Checked qpos/qvel arrays, reordered to the sorted rows."""
        n = self._nworld if rows is None else len(rows)
        values = {}
        for name, arr, width in (("qpos", qpos, self.model.nq), ("qvel", qvel, self.model.nv)):
            if arr is None:
                continue
            arr = np.asarray(arr)
            if arr.shape != (n, width):
                w = "nq" if name == "qpos" else "nv"
                raise ValueError(
                    f"{name} must have shape (len(ids)={n}, {w}={width}), got {arr.shape}"
                )
            finite = np.isfinite(arr).all(axis=1)
            if not finite.all():
                bad = np.flatnonzero(~finite)
                raise ValueError(f"{name} has non-finite values in rows {bad[:8].tolist()} of ids")
            values[name] = arr if order is None else arr[order]
        return values

    def _write_state(self, rows, values: dict) -> None:
        sel = slice(None) if rows is None else rows
        for name, arr in values.items():
            (self._qpos if name == "qpos" else self._qvel)[sel] = arr

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
        its last call raised a :class:`SimulationError`. Reset such rows.
        """
        self._check_open()
        bad = (self._warning[:, DIVERGENCE_WARNINGS, 1] > 0).any(axis=1)
        bad |= ~np.isfinite(self._qpos).all(axis=1)
        bad |= ~np.isfinite(self._qvel).all(axis=1)
        return bad | self._failed

    def error(self, world: int) -> str:
        """MuJoCo's message for the error ``world`` raised in its last call, or ''."""
        self._check_open()
        return self._b.error(int(world))

    # ------------------------------------------------------------------ model parameters
    def expand(self, name: str) -> np.ndarray:
        """Give model field ``name`` per-world values; return them, live and writable.

        Returns (nworld, *field_shape) of the field's dtype, initialized to the model's value.
        Option fields are named ``"opt.<name>"``. A write takes effect at each world's next
        call; after writing a field that ``mj_setConst`` reads (:func:`setconst_inputs`:
        ``body_mass``, ``body_ipos``, ``body_inertia``, ``dof_armature``, ...; or an option
        field), call :meth:`set_const` for the rows. Memory: one row of this field per world,
        never a model copy per world.

        Raises:
            ValueError: not an expandable field, with close valid names.
        """
        self._check_open()
        return self._b.expand(name)

    def model_values(self, name: str) -> np.ndarray:
        """(nworld, *field_shape) read-only per-world values of a model field, expanded or not."""
        self._check_open()
        values = self._b.expanded(name)
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
        self._b.set_const(rows)

    # ------------------------------------------------------------------ one world
    def get_data(self, world: int, data: Optional[mujoco.MjData] = None) -> mujoco.MjData:
        """World ``world``'s MjData (in a persistent batch, with its derived fields)."""
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
        self._qpos = self._qvel = self._ctrl = self._warning = None
        self._b = None

    def __enter__(self) -> "Batch":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._closed:
            return f"Batch(nworld={self._nworld}, closed)"
        state = f"nthread={self.nthread}, persistent={self.persistent}"
        return f"Batch(nworld={self._nworld}, {state})"
