"""MjStepBackend: one ``MjData`` per world, stepped in a Python loop; float32 CPU tensors."""

from __future__ import annotations

import mujoco
import numpy as np
import torch

from unisim import Capabilities, SimBackend, SimSpec


class MjStepBackend(SimBackend):
    """``num_envs`` MuJoCo worlds of ``spec.mjcf``, each its own ``mujoco.MjData``.

    Host-bridge: the tensors are CPU float32 copies of the worlds, refreshed after every
    :meth:`step`, :meth:`reset` and :meth:`set_state`. ``spec.nthread`` and ``spec.cpu_ids`` are
    ignored (one thread). No per-world model parameters: ``set_model_field`` raises
    :class:`unisim.CapabilityError`.

    Raises:
        ValueError: a non-CPU ``spec.device``, ``num_envs < 1`` or backend options (it has none).
        KeyError: a tracked body the model lacks.
    """

    capabilities = Capabilities(tensor_kind="host_bridge", selected_reset=True, deterministic=True)

    def __init__(self, spec: SimSpec):
        if torch.device(spec.device).type != "cpu":
            raise ValueError(f"mjstep runs on the CPU, got device={spec.device!r}")
        if spec.num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {spec.num_envs}")
        if spec.options:
            raise ValueError(f"mjstep takes no options, got {sorted(spec.options)}")
        self.spec = spec
        self.model = m = mujoco.MjModel.from_xml_string(spec.mjcf)
        self.worlds = [mujoco.MjData(m) for _ in range(spec.num_envs)]
        self.num_envs, self.device, self.dt = spec.num_envs, torch.device("cpu"), m.opt.timestep
        self.nq, self.nv, self.nu = m.nq, m.nv, m.nu
        self.joint_names = [m.joint(i).name for i in range(m.njnt)]
        self.actuator_names = [m.actuator(i).name for i in range(m.nu)]
        self._sensors = {
            m.sensor(i).name: slice(m.sensor_adr[i], m.sensor_adr[i] + m.sensor_dim[i])
            for i in range(m.nsensor) if m.sensor(i).name
        }
        self.sensor_names = list(self._sensors)
        self._bodies = {m.body(i).name: i for i in range(m.nbody)}
        self.body_names = list(spec.tracked_bodies)
        self._tracked = [self._body_id(name) for name in self.body_names]
        n, nb = self.num_envs, len(self._tracked)
        self._qpos, self._qvel = torch.zeros(n, m.nq), torch.zeros(n, m.nv)
        self._sensordata = torch.zeros(n, m.nsensordata)
        self._pos, self._quat = torch.zeros(n, nb, 3), torch.zeros(n, nb, 4)
        self._lin, self._ang = torch.zeros(n, nb, 3), torch.zeros(n, nb, 3)
        self._contact = torch.zeros(n, m.nbody, 3)
        self._bad = torch.zeros(n, dtype=torch.bool)
        self.reset(torch.arange(n))

    # ------------------------------------------------------------------ stepping
    def step(self, ctrl: torch.Tensor, nstep: int | None = None) -> None:
        """Hold ``ctrl`` ((num_envs, nu) float32) for ``nstep`` (default decimation) mj_steps."""
        if not isinstance(ctrl, torch.Tensor) or tuple(ctrl.shape) != (self.num_envs, self.nu):
            got = tuple(ctrl.shape) if isinstance(ctrl, torch.Tensor) else type(ctrl).__name__
            raise ValueError(f"ctrl must have shape (num_envs={self.num_envs}, nu={self.nu}), "
                             f"got {got}")
        ctrl = ctrl.detach().cpu().double().numpy()
        if not np.isfinite(ctrl).all():
            raise ValueError(f"ctrl has non-finite values in rows "
                             f"{np.flatnonzero(~np.isfinite(ctrl).all(1)).tolist()}")
        for i, d in enumerate(self.worlds):
            d.ctrl[:] = ctrl[i]
            for _ in range(self.spec.decimation if nstep is None else nstep):
                mujoco.mj_step(self.model, d)
            self._bad[i] |= bool(d.warning[mujoco.mjtWarning.mjWARN_BADQACC].number)
        self._pull(range(self.num_envs))

    def reset(self, env_ids, qpos=None, qvel=None) -> None:
        """Rows ``env_ids`` to keyframe 0 (or the defaults), then ``qpos``/``qvel``, forward."""
        ids = self._ids(env_ids, qpos, qvel)
        for row in ids:
            d = self.worlds[row]
            if self.model.nkey:
                mujoco.mj_resetDataKeyframe(self.model, d, 0)
            else:
                mujoco.mj_resetData(self.model, d)
            self._bad[row] = False
        self.set_state(ids, qpos, qvel)

    def set_state(self, env_ids, qpos=None, qvel=None) -> None:
        """Overwrite qpos ((k, nq)) and/or qvel ((k, nv)) of rows ``env_ids``, then forward."""
        ids = self._ids(env_ids, qpos, qvel)
        for i, row in enumerate(ids):
            d = self.worlds[row]
            if qpos is not None:
                d.qpos[:] = qpos[i].detach().cpu().double().numpy()
            if qvel is not None:
                d.qvel[:] = qvel[i].detach().cpu().double().numpy()
            mujoco.mj_forward(self.model, d)
        self._pull(ids)

    def _pull(self, rows) -> None:
        """Copy rows of the worlds into the float32 tensors."""
        m, f6 = self.model, np.zeros(6)
        for row in rows:
            d = self.worlds[row]
            self._qpos[row] = torch.from_numpy(d.qpos)
            self._qvel[row] = torch.from_numpy(d.qvel)
            self._sensordata[row] = torch.from_numpy(d.sensordata)
            self._pos[row] = torch.from_numpy(d.xpos[self._tracked])
            self._quat[row] = torch.from_numpy(d.xquat[self._tracked])
            for j, body in enumerate(self._tracked):
                mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_XBODY, body, f6, 0)
                self._ang[row, j], self._lin[row, j] = torch.from_numpy(f6[:3]), torch.from_numpy(f6[3:])
            force = np.zeros((m.nbody, 3))
            for k, contact in enumerate(d.contact[: d.ncon]):
                mujoco.mj_contactForce(m, d, k, f6)
                world = contact.frame.reshape(3, 3).T @ f6[:3]  # normal points geom1 -> geom2
                force[m.geom_bodyid[contact.geom2]] += world
                force[m.geom_bodyid[contact.geom1]] -= world
            self._contact[row] = torch.from_numpy(force)

    # ------------------------------------------------------------------ state
    @property
    def qpos(self) -> torch.Tensor:
        return self._qpos

    @property
    def qvel(self) -> torch.Tensor:
        return self._qvel

    def sensor(self, name: str) -> torch.Tensor:
        if name not in self._sensors:
            raise KeyError(f"unknown sensor {name!r}; valid sensors: {', '.join(self._sensors)}")
        return self._sensordata[:, self._sensors[name]]

    def body_state(self):
        return self._pos, self._quat, self._lin, self._ang

    def contact_force(self, body: str) -> torch.Tensor:
        return self._contact[:, self._body_id(body)]

    def diverged(self) -> torch.Tensor:
        return super().diverged() | self._bad

    # ------------------------------------------------------------------ helpers
    def _body_id(self, name: str) -> int:
        if name not in self._bodies:
            raise KeyError(f"unknown body {name!r}; valid bodies: {', '.join(self._bodies)}")
        return self._bodies[name]

    def _ids(self, env_ids, qpos=None, qvel=None) -> list[int]:
        """Checked rows (and shapes of qpos/qvel for them), before anything changes."""
        ids = torch.as_tensor(env_ids).flatten().tolist()
        for row in ids:
            if not 0 <= row < self.num_envs:
                raise IndexError(f"env_ids must be in [0, num_envs={self.num_envs}), got {row}")
        for name, x, width in (("qpos", qpos, self.nq), ("qvel", qvel, self.nv)):
            if x is not None and tuple(x.shape) != (len(ids), width):
                raise ValueError(f"{name} must have shape (len(env_ids)={len(ids)}, {width}), "
                                 f"got {tuple(x.shape)}")
        return ids
