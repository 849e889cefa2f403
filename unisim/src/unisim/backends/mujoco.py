"""The ``mujoco`` backend: MuJoCo CPU physics on :class:`mjbatch_uni.Batch`, host-bridge tensors.

Physics runs on a persistent pool of CPU threads (``spec.nthread``). The backend keeps one
preallocated float32 CPU tensor per state field and refreshes it after every :meth:`step` and
:meth:`reset`; those tensors are the authoritative state the env reads (see :mod:`unisim.contract`).
The tensors returned are these buffers (or views of them), updated in place: clone one to keep a
snapshot, and never write to them.

What the tensors describe after a step (see :mod:`mjbatch_uni.batch`): qpos, qvel, body poses and
velocities and position/velocity sensors are at the new state; contact forces and
acceleration-stage sensors (touch, accelerometer, force, torque) come from the last physics
substep, i.e. one ``dt`` before the new state. After a reset, everything is at the reset state.

Contact forces: ``contact_force(body)`` is the force part of MuJoCo's ``cfrc_ext`` for the body,
which MuJoCo computes (``mj_rnePostConstraint``) inside a step only when the model has an
acceleration sensor that needs it. If the model has none, the backend adds one invisible 3-value
sensor (:func:`mjbatch_uni.add_cfrc_ext_trigger`); it does not change the trajectory and costs a
few per cent of a step. ``SimSpec.options["contact_forces"] = False`` skips it, and
``contact_force`` then raises :class:`~unisim.contract.CapabilityError`.

Backend options (``SimSpec.options``):
    contact_forces (bool, default True): make :meth:`MujocoBackend.contact_force` available.
    persistent (bool, default True): one MjData per world (see :class:`mjbatch_uni.Batch`).
"""

from __future__ import annotations

import difflib
from typing import Any

import mujoco
import numpy as np
import torch

import mjbatch_uni
from unisim.contract import Capabilities, CapabilityError, SimBackend, SimSpec

__all__ = ["MujocoBackend"]

_TRIGGER = "unisim_cfrc_ext_trigger"  # name of the sensor added for contact forces, if any
_OPTIONS: dict[str, type] = {"contact_forces": bool, "persistent": bool}


def _did_you_mean(name: str, names: list[str]) -> str:
    close = difflib.get_close_matches(name, names, n=3)
    return f" (did you mean {', '.join(map(repr, close))}?)" if close else ""


class MujocoBackend(SimBackend):
    """MuJoCo on CPU threads; float32 CPU torch tensors in and out.

    Args:
        spec: what to build. ``spec.device`` must be a CPU device.

    Raises:
        ValueError: a non-CPU device, num_envs < 1, decimation < 1, or an unknown option.
        KeyError: a tracked body the model does not have, listing the valid names.

    Besides the contract's attributes, ``model`` is the compiled ``mujoco.MjModel`` the worlds
    run (with the contact-force sensor if one was added), ``batch`` the
    :class:`mjbatch_uni.Batch`, and ``transfer_stats`` counts host-bridge copies:
    ``{"host_copies": int, "host_bytes": int}``, cumulative since construction, counting every
    copy between the physics rows and the tensors (controls in, state out) and the bytes
    written by it.
    """

    capabilities = Capabilities(
        tensor_kind="host_bridge",
        selected_reset=True,
        randomization=True,
        rendering=False,
        deterministic=True,
    )

    def __init__(self, spec: SimSpec):
        device = torch.device(spec.device)
        if device.type != "cpu":
            raise ValueError(
                "the mujoco backend is host-bridge: its tensors live on the CPU, "
                f"got device={spec.device!r}"
            )
        if spec.num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {spec.num_envs}")
        if spec.decimation < 1:
            raise ValueError(f"decimation must be >= 1, got {spec.decimation}")
        options = dict(spec.options)
        for key, value in options.items():
            if key not in _OPTIONS:
                raise ValueError(
                    f"unknown mujoco backend option {key!r}{_did_you_mean(key, list(_OPTIONS))};"
                    f" valid options: {', '.join(_OPTIONS)}"
                )
            if not isinstance(value, _OPTIONS[key]):
                raise ValueError(
                    f"option {key!r} must be {_OPTIONS[key].__name__}, got {value!r}"
                )
        self._closed = False
        self.spec = spec

        model = mujoco.MjModel.from_xml_string(spec.mjcf)
        self._contact_forces = options.get("contact_forces", True)
        if self._contact_forces and not mjbatch_uni.computes_cfrc_ext(model):
            mjspec = mujoco.MjSpec.from_string(spec.mjcf)
            mjbatch_uni.add_cfrc_ext_trigger(mjspec, _TRIGGER)
            model = mjspec.compile()
        self.model = model

        # names
        self.num_envs = int(spec.num_envs)
        self.device = device
        self.dt = float(model.opt.timestep)
        self.nq, self.nv, self.nu = model.nq, model.nv, model.nu
        self.joint_names = [model.joint(i).name for i in range(model.njnt)]
        self.actuator_names = [model.actuator(i).name for i in range(model.nu)]
        self._all_body_names = [model.body(i).name for i in range(model.nbody)]
        self._sensors = {
            model.sensor(i).name: (int(model.sensor_adr[i]), int(model.sensor_dim[i]))
            for i in range(model.nsensor)
            if model.sensor(i).name and model.sensor(i).name != _TRIGGER
        }
        self.sensor_names = list(self._sensors)
        self.body_names = list(spec.tracked_bodies)
        self._body_ids = np.array([self._body_id(n) for n in self.body_names], dtype=np.intp)
        self._root_ids = model.body_rootid[self._body_ids].astype(np.intp)

        self.batch = mjbatch_uni.Batch(
            model,
            self.num_envs,
            nthread=spec.nthread,
            cpu_ids=spec.cpu_ids,
            persistent=options.get("persistent", True),
        )

        # host-bridge buffers: float32 CPU tensors and numpy views of the same memory
        n, nb = self.num_envs, len(self.body_names)

        def buffer(*shape: int) -> tuple[torch.Tensor, np.ndarray]:
            t = torch.zeros((n, *shape), dtype=torch.float32)
            return t, t.numpy()

        self._qpos, self._qpos_np = buffer(self.nq)
        self._qvel, self._qvel_np = buffer(self.nv)
        self._sensordata, self._sensordata_np = buffer(model.nsensordata)
        self._body_pos, self._body_pos_np = buffer(nb, 3)
        self._body_quat, self._body_quat_np = buffer(nb, 4)
        self._body_lin_vel, self._body_lin_vel_np = buffer(nb, 3)
        self._body_ang_vel, self._body_ang_vel_np = buffer(nb, 3)
        self._contact, self._contact_np = buffer(model.nbody if self._contact_forces else 0, 3)
        self.transfer_stats = {"host_copies": 0, "host_bytes": 0}

        self.batch.reset()  # keyframe 0 if the model has one, else its defaults; mj_forward
        self._pull()

    # ---------------------------------------------------------------- stepping
    def step(self, ctrl: torch.Tensor, nstep: int | None = None) -> None:
        """Hold ``ctrl`` for ``nstep`` physics steps (default ``spec.decimation``).

        Args:
            ctrl: (num_envs, nu) float32 (float64 accepted) CPU tensor; for position
                actuators, joint targets in rad.
            nstep: physics steps, >= 1.

        Raises:
            ValueError: not a CPU tensor, wrong shape or dtype, non-finite values (naming the
                rows), nstep < 1.
        """
        self._check_open()
        if not isinstance(ctrl, torch.Tensor):
            raise ValueError(f"ctrl must be a torch.Tensor, got {type(ctrl).__name__}")
        if ctrl.device.type != "cpu":
            raise ValueError(f"ctrl must be on the cpu (host-bridge backend), got {ctrl.device}")
        if ctrl.dtype not in (torch.float32, torch.float64):
            raise ValueError(f"ctrl must be float32, got {ctrl.dtype}")
        if tuple(ctrl.shape) != (self.num_envs, self.nu):
            raise ValueError(
                f"ctrl must have shape (num_envs={self.num_envs}, nu={self.nu}), "
                f"got {tuple(ctrl.shape)}"
            )
        nstep = self.spec.decimation if nstep is None else int(nstep)
        # copy in: ctrl tensor -> the batch's float64 ctrl rows (one copy; checks finiteness)
        self.batch.step(ctrl.detach().numpy(), nstep)
        self._count(self.batch.ctrl.nbytes)
        self._pull()

    def reset(
        self,
        env_ids: torch.Tensor,
        qpos: torch.Tensor | None = None,
        qvel: torch.Tensor | None = None,
    ) -> None:
        """Reset rows ``env_ids`` to keyframe 0 (or the model defaults), then ``qpos``/``qvel``.

        One transaction per the contract: keyframe (qpos, qvel, ctrl; time 0, warm start and
        warnings cleared), then the given qpos/qvel rows, then ``mj_forward`` on those rows only.
        Other rows are untouched.

        Args:
            env_ids: (k,) integer tensor of rows in [0, num_envs), any order, unique.
            qpos: (k, nq) float32 in the order of env_ids, or None.
            qvel: (k, nv) float32, or None.

        Raises:
            IndexError: a row outside [0, num_envs).
            ValueError: wrong shapes or dtypes, duplicate rows, non-finite values.
        """
        self._check_open()
        ids = self._env_ids(env_ids)
        qpos_np, qvel_np = self._state_arrays(len(ids), qpos, qvel)
        if len(ids) == 0:
            return
        self.batch.reset(ids, qpos_np, qvel_np)
        self._pull(np.sort(ids))

    def set_state(
        self,
        env_ids: torch.Tensor,
        qpos: torch.Tensor | None = None,
        qvel: torch.Tensor | None = None,
    ) -> None:
        """Overwrite qpos and/or qvel of rows ``env_ids`` mid-episode (e.g. a push), then
        ``mj_forward`` on them; time, ctrl and the solver warm start are kept.

        Args:
            env_ids: (k,) integer tensor of unique rows in [0, num_envs), any order.
            qpos: (k, nq) float32 in the order of env_ids, or None.
            qvel: (k, nv) float32, or None.

        Raises:
            IndexError: a row outside [0, num_envs).
            ValueError: wrong shapes or dtypes, duplicate rows, non-finite values.
        """
        self._check_open()
        ids = self._env_ids(env_ids)
        qpos_np, qvel_np = self._state_arrays(len(ids), qpos, qvel)
        if len(ids) == 0:
            return
        self.batch.set_state(ids, qpos_np, qvel_np)
        self._pull(np.sort(ids))

    def _state_arrays(
        self, k: int, qpos: torch.Tensor | None, qvel: torch.Tensor | None
    ) -> list[np.ndarray | None]:
        """Checked numpy views of qpos/qvel for k rows; counts the copies into the batch."""
        arrays: list[np.ndarray | None] = []
        for name, x, width, w in (("qpos", qpos, self.nq, "nq"), ("qvel", qvel, self.nv, "nv")):
            if x is None:
                arrays.append(None)
                continue
            if not isinstance(x, torch.Tensor) or x.dtype not in (torch.float32, torch.float64):
                raise ValueError(f"{name} must be a float32 tensor, got {getattr(x, 'dtype', x)!r}")
            if tuple(x.shape) != (k, width):
                raise ValueError(
                    f"{name} must have shape (len(env_ids)={k}, {w}={width}), got {tuple(x.shape)}"
                )
            arrays.append(x.detach().cpu().numpy())
            self._count(k * width * 8)  # copy in: rows -> the batch's float64 state rows
        return arrays

    # ---------------------------------------------------------------- host bridge
    def _pull(self, rows: np.ndarray | None = None) -> None:
        """Refresh the float32 tensors from the batch's float64 rows (all rows, or ``rows``).

        Copies, one per field (never per env), each float64 -> float32:
          qpos, qvel, sensordata;
          tracked bodies: pos (xpos), quat (xquat), ang_vel and lin_vel (from cvel, shifted from
            subtree_com to the body origin);
          contact forces: the force part of cfrc_ext, all bodies (if enabled).
        Later work packs these into one buffer, for one transfer per step to the learner device.
        """
        b = self.batch
        sel: Any = slice(None) if rows is None else rows
        self._put(self._qpos_np, b.qpos, sel)
        self._put(self._qvel_np, b.qvel, sel)
        self._put(self._sensordata_np, b.sensordata, sel)
        if len(self._body_ids):
            ids, roots = self._body_ids, self._root_ids
            if rows is None:
                at, at_root = (slice(None), ids), (slice(None), roots)
            else:
                at, at_root = np.ix_(rows, ids), np.ix_(rows, roots)
            xpos = b.xpos[at]  # (k, B, 3)
            cvel = b.cvel[at]  # (k, B, 6): [ang, lin] at subtree_com[rootid], world-aligned
            ang = cvel[..., :3]
            lin = cvel[..., 3:] + np.cross(ang, xpos - b.subtree_com[at_root])
            self._put(self._body_pos_np, xpos, sel, gathered=True)
            self._put(self._body_quat_np, b.xquat[at], sel, gathered=True)
            self._put(self._body_lin_vel_np, lin, sel, gathered=True)
            self._put(self._body_ang_vel_np, ang, sel, gathered=True)
        if self._contact_forces:
            self._put(self._contact_np, b.cfrc_ext[:, :, 3:], sel)

    def _put(self, dst: np.ndarray, src: np.ndarray, sel: Any, gathered: bool = False) -> None:
        """dst[sel] = src[sel] (or = src if already gathered for sel), counted."""
        if isinstance(sel, slice):
            np.copyto(dst, src, casting="same_kind")
            self._count(dst.nbytes)
        else:
            dst[sel] = src if gathered else src[sel]
            self._count(len(sel) * dst[0].nbytes)

    def _count(self, nbytes: int) -> None:
        self.transfer_stats["host_copies"] += 1
        self.transfer_stats["host_bytes"] += int(nbytes)

    # ---------------------------------------------------------------- state
    @property
    def qpos(self) -> torch.Tensor:
        """(num_envs, nq) float32 generalized positions (free joint: pos m, quat wxyz)."""
        self._check_open()
        return self._qpos

    @property
    def qvel(self) -> torch.Tensor:
        """(num_envs, nv) float32 generalized velocities (free joint: lin m/s world, ang rad/s
        local)."""
        self._check_open()
        return self._qvel

    def sensor(self, name: str) -> torch.Tensor:
        """(num_envs, dim) float32 view of the named sensor's slice of sensordata.

        Raises:
            KeyError: unknown sensor, listing the valid names.
        """
        self._check_open()
        if name not in self._sensors:
            raise KeyError(
                f"unknown sensor {name!r}{_did_you_mean(name, self.sensor_names)}; "
                f"valid sensors: {', '.join(self.sensor_names) or '(none)'}"
            )
        adr, dim = self._sensors[name]
        return self._sensordata[:, adr : adr + dim]

    def body_state(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """World-frame state of the tracked bodies (``spec.tracked_bodies``), at the current state.

        Returns:
            pos (num_envs, B, 3) m, body frame origin (xpos);
            quat (num_envs, B, 4) wxyz (xquat);
            lin_vel (num_envs, B, 3) m/s of the body frame origin, world frame;
            ang_vel (num_envs, B, 3) rad/s, world frame;
            all float32, B = len(body_names). Equals ``mj_objectVelocity(..., flg_local=0)``.
        """
        self._check_open()
        return self._body_pos, self._body_quat, self._body_lin_vel, self._body_ang_vel

    def contact_force(self, body: str) -> torch.Tensor:
        """(num_envs, 3) float32 total external force on ``body``, world frame, N.

        The force part of ``cfrc_ext``: all contacts of the body's geoms (plus ``xfrc_applied``
        and connect/weld equality forces, which envs do not use), from the last physics substep.

        Raises:
            KeyError: unknown body, listing the valid names.
            CapabilityError: built with ``options={"contact_forces": False}``.
        """
        self._check_open()
        if not self._contact_forces:
            raise CapabilityError(
                "contact forces are off: this backend was built with "
                "options={'contact_forces': False}; build it without that option"
            )
        return self._contact[:, self._body_id(body)]

    def diverged(self) -> torch.Tensor:
        """(num_envs,) bool: rows whose state went non-finite, tripped MuJoCo's bad
        qpos/qvel/qacc warning (MuJoCo then auto-resets them), or whose physics raised an error,
        since their last reset."""
        self._check_open()
        return torch.from_numpy(self.batch.diverged())

    # ---------------------------------------------------------------- randomization
    def set_model_field(self, name: str, env_ids: torch.Tensor, values: torch.Tensor) -> None:
        """Give rows ``env_ids`` their own values of floating-point model field ``name``.

        Per-world storage of that one field (``Batch.expand``), never a model copy. Fields that
        ``mj_setConst`` reads (body_mass, body_ipos, body_inertia, dof_armature, ...) and
        option fields (``"opt.gravity"``) also get ``set_const`` on those rows. The new values
        act from the next step or reset; the state tensors are not recomputed.

        Args:
            name: MjModel field (e.g. ``geom_friction``, ``body_mass``) or ``"opt.<field>"``.
            env_ids: (k,) integer tensor of unique rows in [0, num_envs).
            values: (k, *field_shape) float tensor, in the order of env_ids.

        Raises:
            ValueError: unknown or non-float field (with close valid names), wrong values shape.
            IndexError: a row outside [0, num_envs).
        """
        self._check_open()
        ids = self._env_ids(env_ids)
        field = self.batch.expand(name)
        if field.dtype.kind != "f":
            raise ValueError(f"{name} is {field.dtype}; set_model_field sets floating-point fields")
        if not isinstance(values, torch.Tensor):
            raise ValueError(f"values must be a torch.Tensor, got {type(values).__name__}")
        expected = (len(ids), *field.shape[1:])
        if tuple(values.shape) != expected:
            raise ValueError(
                f"values for {name} must have shape (len(env_ids)={len(ids)}, "
                f"{', '.join(map(str, field.shape[1:]))}), got {tuple(values.shape)}"
            )
        vals = values.detach().cpu().numpy()
        if not np.isfinite(vals).all():
            raise ValueError(f"values for {name} must be finite")
        field[ids] = vals
        if name in mjbatch_uni.setconst_inputs() or name.startswith("opt."):
            self.batch.set_const(np.sort(ids))

    def model_field(self, name: str) -> torch.Tensor:
        """(num_envs, *field_shape) float32 copy of every world's current value of ``name``.

        Raises:
            ValueError: not a (per-world capable) model field, with close valid names.
        """
        self._check_open()
        return torch.tensor(np.asarray(self.batch.model_values(name)), dtype=torch.float32)

    # ---------------------------------------------------------------- helpers
    def _body_id(self, name: str) -> int:
        try:
            return self._all_body_names.index(name)
        except ValueError:
            raise KeyError(
                f"unknown body {name!r}{_did_you_mean(name, self._all_body_names)}; "
                f"valid bodies: {', '.join(self._all_body_names)}"
            ) from None

    def _env_ids(self, env_ids: torch.Tensor) -> np.ndarray:
        if not isinstance(env_ids, torch.Tensor):
            env_ids = torch.as_tensor(env_ids)
        if env_ids.dtype in (torch.bool,) or env_ids.is_floating_point() or env_ids.is_complex():
            raise ValueError(f"env_ids must be an integer tensor, got {env_ids.dtype}")
        if env_ids.dim() != 1:
            raise ValueError(f"env_ids must be one-dimensional, got shape {tuple(env_ids.shape)}")
        ids = env_ids.detach().cpu().numpy().astype(np.int64, copy=False)
        if ids.size and (ids.min() < 0 or ids.max() >= self.num_envs):
            bad = ids.min() if ids.min() < 0 else ids.max()
            raise IndexError(f"env_ids must be in [0, num_envs={self.num_envs}), got {bad}")
        if len(np.unique(ids)) != len(ids):
            raise ValueError("env_ids must be unique")
        return ids

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this MujocoBackend is closed")

    def close(self) -> None:
        """Release the physics threads. Idempotent; other calls afterwards raise RuntimeError."""
        if self._closed:
            return
        self._closed = True
        self.batch.close()

    def __repr__(self) -> str:
        return f"MujocoBackend(num_envs={self.num_envs}, nq={self.nq}, nu={self.nu})"
