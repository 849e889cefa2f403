"""The ``mujoco`` backend: MuJoCo CPU physics on :class:`mjbatch_uni.Batch`, host-bridge tensors.

Physics runs on a persistent pool of CPU threads (``spec.nthread``; 0: one per available core).

The packed host bridge: every tensor the env reads is a view into ONE preallocated float32 CPU
tensor, :attr:`MujocoBackend.packed`, ``(num_envs, width)``, one row per world::

    [ qpos (nq) | qvel (nv) | sensordata (user sensors, then the tracked-body sensors) | contact ]

(contact: the ``cfrc_ext`` rows [torque, force] of every body, or of ``contact_bodies``). It is
refreshed in place after every :meth:`~MujocoBackend.step` and :meth:`~MujocoBackend.reset` by a
few vectorised float64 -> float32 copies (``mjbatch_uni.Packed``), never per world: qpos|qvel
from the state rows (one copy, they are adjacent), sensordata (one copy), and the contact rows
(one copy per contiguous run of bodies). Without ``contact_bodies``, a body's contact row is
copied from the first time ``contact_force`` is asked for it on (before that it holds zeros), so
the host copies only the contact forces the env reads.
MuJoCo's batch threads compute the tracked bodies' world poses and velocities as sensors
(``mjbatch_uni.add_body_sensors``) and copy sensordata out in parallel, so the host does no
per-world work and no math. ctrl goes in from one tensor with one copy. ``transfer_stats`` counts
the copies and bytes; ``packed`` can be sent to a learner device in one transfer, and
``packed_layout`` says where each quantity lies in a row. The tensors are updated in place: clone
one to keep a snapshot, and never write to them.

What the tensors describe after a step, by ``SimSpec.options["derived"]``:

* ``"current"``: qpos, qvel, tracked-body poses and
  velocities and position/velocity sensors are at the new state. Costs one extra position and
  velocity stage per step per world unless ``persistent`` (measured on the G1: ~10 % of the
  physics at decimation 4).
* ``"last_substep"`` (default): MuJoCo's ``mj_step`` semantics, the fastest: qpos and qvel are at
  the new state; sensors and tracked bodies are those computed during the last physics substep,
  i.e. one ``dt`` (5 ms for the G1) before the new state. Gymnasium's MuJoCo envs and MuJoCo
  Playground read MjData the same way. It is the default because "current" costs 12-18 % of
  the physics on the G1 in most cells of ``benchmarks/physics.py`` (docs/benchmarks.md).

In both, contact forces and acceleration-stage sensors (touch, accelerometer, force, torque) come
from the last physics substep. After a reset, everything is at the reset state; with
``SimSpec.reset_kinematics_only``, everything but the acceleration-dependent values (contact
forces and acceleration-stage sensors such as touch or contact), which read zero for the reset
rows until their next step: the reset then skips the constraint solver, most of its cost on a
robot in contact, and the trajectory from there is the same (``mjbatch_uni.Batch.reset``).

Contact forces: ``contact_force(body)`` is the force part of MuJoCo's ``cfrc_ext`` for the body,
which MuJoCo computes (``mj_rnePostConstraint``) inside a step only when the model has an
acceleration sensor that needs it. If the model has none, the backend adds one invisible 3-value
sensor (:func:`mjbatch_uni.add_cfrc_ext_trigger`); it does not change the trajectory and costs a
few per cent of a step. ``SimSpec.options["contact_forces"] = False`` skips it, and
``contact_force`` then raises :class:`~unisim.contract.CapabilityError`.

Backend options (``SimSpec.options``):
    contact_forces (bool, default True): make :meth:`MujocoBackend.contact_force` available.
    contact_bodies (list of body names, default all bodies, each copied once read): the bodies
        whose contact forces are packed and copied every step; ``contact_force`` of any other
        body raises KeyError.
    derived (str, default "last_substep"): "current" or "last_substep", see above.
    persistent (bool, default False): one MjData per world (see :class:`mjbatch_uni.Batch`):
        "current" without its extra cost, at ~370 KB per G1 world.
    pin_memory (bool, default False): allocate ``packed`` in page-locked memory for fast
        asynchronous copies to a CUDA device (needs CUDA).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import mujoco
import numpy as np
import torch

import mjbatch_uni
from mjbatch_uni import did_you_mean
from unisim.contract import Capabilities, CapabilityError, SimBackend, SimSpec

__all__ = ["MujocoBackend"]

_TRIGGER = "unisim_cfrc_ext_trigger"  # name of the sensor added for contact forces, if any
_BODY_SENSORS = "unisim_body"  # prefix of the tracked-body sensors the backend adds
_OPTIONS: dict[str, Any] = {
    "contact_forces": bool,
    "contact_bodies": (list, tuple),
    "derived": str,
    "persistent": bool,
    "pin_memory": bool,
}


class MujocoBackend(SimBackend):
    """MuJoCo on CPU threads; float32 CPU torch tensors in and out.

    Args:
        spec: what to build. ``spec.device`` must be a CPU device.

    Raises:
        ValueError: a non-CPU device, num_envs < 1, decimation < 1, an unknown option or a bad
            option value.
        KeyError: a tracked or contact body the model does not have, listing the valid names.

    Besides the contract's attributes: ``model`` is the compiled ``mujoco.MjModel`` the worlds
    run (with the sensors the backend added), ``batch`` the :class:`mjbatch_uni.Batch`,
    ``packed`` the packed float32 tensor and ``packed_layout`` its columns (see the module
    docstring), and ``transfer_stats`` counts host-bridge copies, cumulative since construction:
    ``{"host_copies": int, "host_bytes": int, "copies_per_step": int, "bytes_per_step": int}``
    (every copy between the physics rows and the tensors, controls in and state out, and the
    bytes it wrote; the last two are what one :meth:`step` costs).
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
        options = self._check_options(dict(spec.options))
        self._closed = False
        self.spec = spec

        # the model: the scene plus the tracked-body sensors (and a cfrc_ext trigger if needed)
        mjspec = mujoco.MjSpec.from_string(spec.mjcf)
        self.body_names = list(spec.tracked_bodies)
        body_sensors = mjbatch_uni.add_body_sensors(mjspec, self.body_names, _BODY_SENSORS)
        model = mjspec.compile()
        self._contact_forces = options.get("contact_forces", True)
        if self._contact_forces and not mjbatch_uni.computes_cfrc_ext(model):
            mjbatch_uni.add_cfrc_ext_trigger(mjspec, _TRIGGER)
            model = mjspec.compile()
        self.model = model

        # names
        self.num_envs = n = int(spec.num_envs)
        self.device = device
        self.dt = float(model.opt.timestep)
        self.nq, self.nv, self.nu = model.nq, model.nv, model.nu
        self.joint_names = [model.joint(i).name for i in range(model.njnt)]
        self.actuator_names = [model.actuator(i).name for i in range(model.nu)]
        self._all_body_names = [model.body(i).name for i in range(model.nbody)]
        hidden = set(body_sensors) | {_TRIGGER}
        self._sensors = {
            model.sensor(i).name: (int(model.sensor_adr[i]), int(model.sensor_dim[i]))
            for i in range(model.nsensor)
            if model.sensor(i).name and model.sensor(i).name not in hidden
        }
        self.sensor_names = list(self._sensors)
        if self._contact_forces:
            names = options.get("contact_bodies", self._all_body_names)
            self._contact_ids = {name: self._body_id(name) for name in names}
        else:
            self._contact_ids = {}
        # without contact_bodies, every body has its columns but is copied only once read
        self._contact_lazy = self._contact_forces and "contact_bodies" not in options
        self._contact_read: list[int] = []

        self.batch = mjbatch_uni.Batch(
            model,
            n,
            nthread=spec.nthread,
            cpu_ids=spec.cpu_ids,
            persistent=options.get("persistent", False),
            derived=options.get("derived", "last_substep"),
            outputs=("sensordata",) + (("cfrc_ext",) if self._contact_forces else ()),
        )

        # the packed host bridge: one float32 tensor, every other tensor a view of it
        items: list[Any] = ["qpos", "qvel", "sensordata"]
        if self._contact_forces:
            items.append(("cfrc_ext", list(self._contact_ids.values())))
        layout = self.batch.pack_layout(items)
        pin = options.get("pin_memory", False)
        self.packed = torch.zeros((n, layout.width), dtype=torch.float32, pin_memory=pin)
        self._bridge = self.batch.pack(items, out=self.packed.numpy())
        if self._contact_lazy:
            self._bridge.select("cfrc_ext", [])
        self.packed_layout = {
            ("contact" if k == "cfrc_ext" else k): v for k, v in layout.slices.items()
        }
        cols = layout.slices
        self._qpos = self.packed[:, cols["qpos"]]
        self._qvel = self.packed[:, cols["qvel"]]
        self._sensordata = self.packed[:, cols["sensordata"]]
        nb = len(self.body_names)
        body = []
        for k, (_, _, dim) in enumerate(mjbatch_uni.BODY_SENSOR_KINDS):
            if nb:
                adr = int(model.sensor_adr[model.sensor(body_sensors[k * nb]).id])
                body.append(self._sensordata[:, adr : adr + nb * dim].unflatten(1, (nb, dim)))
            else:
                body.append(self._sensordata[:, :0].unflatten(1, (0, dim)))
        self._body_state = tuple(body)
        if self._contact_forces:
            cfrc = self.packed[:, cols["cfrc_ext"]].unflatten(1, (len(self._contact_ids), 6))
            self._contact = {name: cfrc[:, j, 3:] for j, name in enumerate(self._contact_ids)}
        self._ctrl_bytes = n * self.nu * 8
        # the batch's reset of rows, with the forward stages spec.reset_kinematics_only asks for
        reset_stage = mujoco.mjtStage.mjSTAGE_VEL if spec.reset_kinematics_only else mujoco.mjtStage.mjSTAGE_ACC
        self._reset_rows = functools.partial(self.batch.reset, stage=int(reset_stage))
        # Packed columns of the acceleration-stage values (contact forces, acceleration-stage
        # sensors), which a kinematics-only reset leaves at zero. mujoco.batch with several
        # threads sometimes leaves those output rows as the last step wrote them after a reset
        # that stops at the velocity stage (about 1 reset in 4 with 2 threads on the dev
        # machine, never with 1), so reset() writes the zeros itself.
        self._acc_columns: torch.Tensor | None = None
        if spec.reset_kinematics_only:
            start = cols["sensordata"].start
            acc = [start + int(model.sensor_adr[i]) + d for i in range(model.nsensor)
                   if model.sensor_needstage[i] == mujoco.mjtStage.mjSTAGE_ACC for d in range(int(model.sensor_dim[i]))]
            if self._contact_forces:
                acc += list(range(cols["cfrc_ext"].start, cols["cfrc_ext"].stop))
            self._acc_columns = torch.tensor(acc, dtype=torch.long) if acc else None

        self.batch.reset()  # keyframe 0 if the model has one, else its defaults; mj_forward
        self._bridge.pull()

    def _check_options(self, options: dict) -> dict:
        for key, value in options.items():
            if key not in _OPTIONS:
                raise ValueError(
                    f"unknown mujoco backend option {key!r}{did_you_mean(key, list(_OPTIONS))};"
                    f" valid options: {', '.join(_OPTIONS)}"
                )
            kind = _OPTIONS[key]
            if not isinstance(value, kind):
                names = "list" if key == "contact_bodies" else kind.__name__
                raise ValueError(f"option {key!r} must be {names}, got {value!r}")
        derived = options.get("derived", "last_substep")
        if derived not in mjbatch_uni.DERIVED_MODES:
            raise ValueError(
                f"option 'derived' must be one of "
                f"{', '.join(map(repr, mjbatch_uni.DERIVED_MODES))}, got {derived!r}"
            )
        if options.get("pin_memory") and not torch.cuda.is_available():
            raise ValueError("option 'pin_memory' needs CUDA, which this torch does not see")
        bodies = options.get("contact_bodies")
        if bodies is not None and not all(isinstance(b, str) for b in bodies):
            raise ValueError(f"option 'contact_bodies' must be a list of body names, got {bodies}")
        return options

    # ---------------------------------------------------------------- stepping
    def step(self, ctrl: torch.Tensor, nstep: int | None = None) -> None:
        """Hold ``ctrl`` for ``nstep`` physics steps (default ``spec.decimation``), then refresh
        every tensor (one packed pull).

        Args:
            ctrl: (num_envs, nu) float32 (float64 accepted) CPU tensor; for position
                actuators, joint targets in rad. Written with one copy.
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
        self.batch.step(ctrl.detach().numpy(), nstep)  # checks finiteness and nstep
        self._bridge.pull()

    def reset(
        self,
        env_ids: torch.Tensor,
        qpos: torch.Tensor | None = None,
        qvel: torch.Tensor | None = None,
    ) -> None:
        """Reset rows ``env_ids`` to keyframe 0 (or the model defaults), then ``qpos``/``qvel``.

        One transaction per the contract: keyframe (qpos, qvel, ctrl; time 0, warm start and
        warnings cleared), then the given qpos/qvel rows, then ``mj_forward`` on those rows only
        (its position and velocity stages alone with ``spec.reset_kinematics_only``; see the
        module docstring), then the packed rows of those worlds are refreshed. Other rows are
        untouched.

        Args:
            env_ids: (k,) integer tensor of rows in [0, num_envs), any order, unique.
            qpos: (k, nq) float32 in the order of env_ids, or None.
            qvel: (k, nv) float32, or None.

        Raises:
            IndexError: a row outside [0, num_envs).
            ValueError: wrong shapes or dtypes, duplicate rows, non-finite values.
        """
        ids = self._write_rows(self._reset_rows, env_ids, qpos, qvel)
        if self._acc_columns is not None and len(ids):
            self.packed[torch.from_numpy(ids)[:, None], self._acc_columns] = 0.0

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
        self._write_rows(self.batch.set_state, env_ids, qpos, qvel)

    def _write_rows(
        self,
        write: Callable[[np.ndarray, np.ndarray | None, np.ndarray | None], None],
        env_ids: torch.Tensor,
        qpos: torch.Tensor | None,
        qvel: torch.Tensor | None,
    ) -> np.ndarray:
        """Check rows ``env_ids`` and their qpos/qvel (:meth:`_env_ids`, :meth:`_state_arrays`),
        call ``write(ids, qpos, qvel)`` (the batch's ``reset`` or ``set_state``, numpy arrays, ids in
        the caller's order) and refresh the packed rows of those worlds; no rows: nothing is done.

        Returns:
            the checked rows, (k,) int64, in the caller's order.

        Raises:
            RuntimeError: the backend is closed.
            IndexError, ValueError: as :meth:`reset`.
        """
        self._check_open()
        ids = self._env_ids(env_ids)
        qpos_np, qvel_np = self._state_arrays(len(ids), qpos, qvel)
        if len(ids) == 0:
            return ids
        write(ids, qpos_np, qvel_np)
        self._bridge.pull(np.sort(ids))
        return ids

    def _state_arrays(
        self, k: int, qpos: torch.Tensor | None, qvel: torch.Tensor | None
    ) -> list[np.ndarray | None]:
        """Checked numpy views of qpos/qvel for k rows."""
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
        return arrays

    @property
    def transfer_stats(self) -> dict[str, int]:
        """Host-bridge counters (see the class docstring); a fresh dict on every read."""
        s = self.batch.transfer_stats
        kinds = ("ctrl", "state", "pack")
        return {
            "host_copies": sum(s[f"{k}_copies"] for k in kinds),
            "host_bytes": sum(s[f"{k}_bytes"] for k in kinds),
            "copies_per_step": 1 + self._bridge.nblocks,
            "bytes_per_step": self._ctrl_bytes + self.packed.numel() * 4,
        }

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
                f"unknown sensor {name!r}{did_you_mean(name, self.sensor_names)}; "
                f"valid sensors: {', '.join(self.sensor_names) or '(none)'}"
            )
        adr, dim = self._sensors[name]
        return self._sensordata[:, adr : adr + dim]

    def body_state(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """World-frame state of the tracked bodies (``spec.tracked_bodies``).

        Computed by MuJoCo as frame sensors of each body (see ``derived`` in the module
        docstring for the state they describe after a step).

        Returns:
            pos (num_envs, B, 3) m, body frame origin (xpos);
            quat (num_envs, B, 4) wxyz (xquat);
            lin_vel (num_envs, B, 3) m/s of the body frame origin, world frame;
            ang_vel (num_envs, B, 3) rad/s, world frame;
            all float32 views of ``packed``, B = len(body_names). Equals
            ``mj_objectVelocity(..., mjOBJ_XBODY, ..., flg_local=0)``.
        """
        self._check_open()
        return self._body_state  # type: ignore[return-value]

    def contact_force(self, body: str) -> torch.Tensor:
        """(num_envs, 3) float32 total external force on ``body``, world frame, N.

        The force part of ``cfrc_ext``: all contacts of the body's geoms (plus ``xfrc_applied``
        and connect/weld equality forces, which envs do not use), from the last physics substep.

        Raises:
            KeyError: unknown body, or one not in ``options["contact_bodies"]``, listing them.
            CapabilityError: built with ``options={"contact_forces": False}``.
        """
        self._check_open()
        if not self._contact_forces:
            raise CapabilityError(
                "contact forces are off: this backend was built with "
                "options={'contact_forces': False}; build it without that option"
            )
        force = self._contact.get(body)
        if force is None:
            self._body_id(body)  # unknown body: KeyError listing all bodies
            raise KeyError(
                f"contact forces of {body!r} are not packed; packed (options['contact_bodies']):"
                f" {', '.join(self._contact)}"
            )
        if self._contact_lazy:
            bid = self._contact_ids[body]
            if bid not in self._contact_read:  # first read: copy this body from now on
                self._contact_read.append(bid)
                self._bridge.select("cfrc_ext", sorted(self._contact_read))
                self._bridge.pull()
        return force

    def diverged(self) -> torch.Tensor:
        """(num_envs,) bool: rows whose state went non-finite, tripped MuJoCo's bad
        qpos/qvel/qacc warning (MuJoCo then auto-resets them), or whose physics raised an error,
        since their last reset. The other rows are unaffected and keep stepping."""
        self._check_open()
        return torch.from_numpy(self.batch.diverged())

    # ---------------------------------------------------------------- randomization
    def set_model_field(self, name: str, env_ids: torch.Tensor, values: torch.Tensor) -> None:
        """Give rows ``env_ids`` their own values of floating-point model field ``name``.

        Per-world storage of that one field (``Batch.set_model_field``), never a model copy.
        Fields that ``mj_setConst`` reads (body_mass, body_ipos, body_inertia, dof_armature, ...)
        and option fields (``"opt.gravity"``) also get ``set_const`` on those rows. The new values
        act from the next step or reset; the state tensors are not recomputed.

        Args:
            name: MjModel field (e.g. ``geom_friction``, ``body_mass``, ``body_ipos``,
                ``actuator_gainprm``) or ``"opt.<field>"``.
            env_ids: (k,) integer tensor of unique rows in [0, num_envs).
            values: (k, *field_shape) float tensor, in the order of env_ids.

        Raises:
            ValueError: unknown or non-float field (with close valid names), wrong values shape,
                non-finite values.
            IndexError: a row outside [0, num_envs).
        """
        self._check_open()
        ids = self._env_ids(env_ids)
        if not isinstance(values, torch.Tensor):
            raise ValueError(f"values must be a torch.Tensor, got {type(values).__name__}")
        self.batch.set_model_field(name, ids, values.detach().cpu().numpy())

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
                f"unknown body {name!r}{did_you_mean(name, self._all_body_names)}; "
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
        # strictly increasing ids (an env's ended rows, from nonzero) are unique without a sort
        if len(ids) > 1 and not (ids[1:] > ids[:-1]).all() and len(np.unique(ids)) != len(ids):
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
