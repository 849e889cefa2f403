"""The conformance checks: each ``check_<name>(target)`` raises :class:`ConformanceError` (an
AssertionError) saying what the contract expects and what the backend did."""

from __future__ import annotations

import dataclasses
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import mujoco
import numpy as np
import torch

from unisim.contract import CONTRACT_VERSION, Capabilities, CapabilityError, SimBackend, SimSpec

# A floating torso (yawed 30 degrees) with a two-joint leg; the shin's foot and a skid under the
# torso stand on the floor, 5 mm above it at the keyframe. Sensors: a position-stage jointpos, a
# velocity-stage gyro, a 4-value framequat. No acceleration sensor.
CONFORMANCE_MJCF = """
<mujoco model="unisim_conformance">
  <option timestep="0.004"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="torso" pos="0 0 0.31">
      <freejoint name="root"/>
      <geom name="torso" type="box" size="0.12 0.08 0.04" mass="3"/>
      <geom name="skid" type="sphere" pos="-0.1 0 -0.255" size="0.025" mass="0.1"/>
      <site name="imu" pos="0.02 0 0.02"/>
      <body name="thigh" pos="0.05 0 -0.04">
        <joint name="hip" type="hinge" axis="0 1 0" range="-1 1" damping="0.2"/>
        <geom name="thigh" type="capsule" fromto="0 0 0 0 0 -0.12" size="0.025" mass="0.4"/>
        <body name="shin" pos="0 0 -0.12">
          <joint name="knee" type="hinge" axis="0 1 0" range="-1.5 0.1" damping="0.2"/>
          <geom name="foot" type="capsule" fromto="0 0 0 0.03 0 -0.12" size="0.025" mass="0.3"/>
        </body>
      </body>
    </body>
  </worldbody>
  <actuator>
    <position name="hip" joint="hip" kp="40" ctrlrange="-1 1"/>
    <position name="knee" joint="knee" kp="40" ctrlrange="-1.5 0.1"/>
  </actuator>
  <sensor>
    <jointpos name="hip_pos" joint="hip"/>
    <gyro name="imu_gyro" site="imu"/>
    <framequat name="torso_quat" objtype="body" objname="torso"/>
  </sensor>
  <keyframe>
    <key name="stand" qpos="0 0 0.31 0.9659258 0 0 0.2588190 0 0" ctrl="0 0"/>
  </keyframe>
</mujoco>
"""
TRACKED_BODIES = ("torso", "thigh", "shin")
CONTACT_BODY = "shin"


class ConformanceError(AssertionError):
    """A backend broke the contract; the message names the check, what was expected and got."""


class ConformanceSkip(Exception):
    """A check that does not apply (e.g. determinism for a backend that does not claim it)."""


def conformance_spec(
    num_envs: int = 3,
    *,
    device: str = "cpu",
    nthread: int = 1,
    decimation: int = 2,
    options: dict | None = None,
) -> SimSpec:
    """The :class:`SimSpec` the checks build backends from (on :data:`CONFORMANCE_MJCF`).

    Args:
        num_envs: worlds, >= 3 (the checks reset and compare subsets of rows).
        device: where the backend's tensors should live (``"cuda"`` for a device-native one).
        nthread: physics threads.
        decimation: physics steps per ``step()`` by default.
        options: backend-specific ``SimSpec.options``.
    """
    if num_envs < 3:
        raise ValueError(f"num_envs must be >= 3 for the conformance checks, got {num_envs}")
    return SimSpec(
        mjcf=CONFORMANCE_MJCF,
        num_envs=num_envs,
        nthread=nthread,
        decimation=decimation,
        tracked_bodies=TRACKED_BODIES,
        device=device,
        options=dict(options or {}),
    )


@dataclasses.dataclass(frozen=True)
class Target:
    """The backend under test: its class and the spec each check builds it from."""

    backend_cls: type
    spec: SimSpec

    @contextmanager
    def build(self, **changes: Any) -> Iterator[SimBackend]:
        """A fresh backend (``spec`` with ``changes``), closed afterwards."""
        backend = self.backend_cls(dataclasses.replace(self.spec, **changes))
        try:
            yield backend
        finally:
            backend.close()

    @property
    def capabilities(self) -> Capabilities:
        return self.backend_cls.capabilities


# ------------------------------------------------------------------------------ helpers
class _Reference:
    """Plain MuJoCo on the spec's model: what the contract's quantities mean."""

    def __init__(self, spec: SimSpec) -> None:
        self.m = mujoco.MjModel.from_xml_string(spec.mjcf)
        self.d = mujoco.MjData(self.m)
        self.bodies = [self.m.body(n).id for n in spec.tracked_bodies]

    def state(self, qpos: np.ndarray | None = None, qvel: np.ndarray | None = None) -> dict:
        """Keyframe 0, then qpos/qvel, then mj_forward: qpos, qvel, pos, quat, lin, ang, sensors."""
        m, d = self.m, self.d
        mujoco.mj_resetDataKeyframe(m, d, 0) if m.nkey else mujoco.mj_resetData(m, d)
        if qpos is not None:
            d.qpos[:] = qpos
        if qvel is not None:
            d.qvel[:] = qvel
        mujoco.mj_forward(m, d)
        vel = np.zeros((len(self.bodies), 6))
        for i, b in enumerate(self.bodies):
            mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_XBODY, b, vel[i], 0)
        sensors = {
            m.sensor(i).name: d.sensordata[m.sensor_adr[i] : m.sensor_adr[i] + m.sensor_dim[i]].copy()
            for i in range(m.nsensor)
            if m.sensor(i).name
        }
        return {
            "qpos": d.qpos.copy(), "qvel": d.qvel.copy(), "pos": d.xpos[self.bodies].copy(),
            "quat": d.xquat[self.bodies].copy(), "ang": vel[:, :3], "lin": vel[:, 3:],
            "sensors": sensors,
        }

    def step(self, qpos: np.ndarray, qvel: np.ndarray, ctrl: np.ndarray, nstep: int) -> dict:
        """From (qpos, qvel) at rest of the keyframe's other state, hold ctrl for nstep steps."""
        self.state(qpos, qvel)
        self.d.ctrl[:] = ctrl
        for _ in range(nstep):
            mujoco.mj_step(self.m, self.d)
        return {"qpos": self.d.qpos.copy(), "qvel": self.d.qvel.copy()}

    def random_state(self, rng: np.random.Generator, k: int) -> tuple[np.ndarray, np.ndarray]:
        """k valid (qpos, qvel) rows near the keyframe: unit quaternion, joints in range."""
        base = self.state()
        qpos = np.repeat(base["qpos"][None], k, axis=0)
        qpos[:, :3] += rng.uniform(-0.05, 0.05, (k, 3)) + [0, 0, 0.1]
        quat = qpos[:, 3:7] + rng.uniform(-0.2, 0.2, (k, 4))
        qpos[:, 3:7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
        qpos[:, 7:] = rng.uniform(-0.5, 0.0, (k, self.m.nq - 7))
        qvel = rng.uniform(-1.0, 1.0, (k, self.m.nv))
        return qpos, qvel

    def random_ctrl(self, rng: np.random.Generator, k: int) -> np.ndarray:
        low, high = self.m.actuator_ctrlrange.T
        return rng.uniform(low, high, (k, self.m.nu))


def _fail(check: str, message: str) -> None:
    raise ConformanceError(f"{check}: {message}")


def _t(x: np.ndarray, backend: SimBackend) -> torch.Tensor:
    return torch.as_tensor(np.asarray(x), dtype=torch.float32, device=backend.device)


def _np(x: torch.Tensor) -> np.ndarray:
    return x.detach().to("cpu", torch.float64).numpy()


def _close(check: str, what: str, actual: torch.Tensor, expected: Any, atol: float) -> None:
    a, e = _np(actual), np.asarray(expected, dtype=np.float64)
    if a.shape != e.shape:
        _fail(check, f"{what} has shape {a.shape}, expected {e.shape}")
    err = np.abs(a - e)
    bad = ~(err <= atol * (1.0 + np.abs(e)))
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        _fail(
            check,
            f"{what} differs from plain MuJoCo: at index {idx} got {a[idx]:.7g}, expected "
            f"{e[idx]:.7g} (max abs error {err.max():.3g}, tolerance {atol:g} relative)",
        )


def _same_device(a: torch.device, b: torch.device) -> bool:
    a, b = torch.device(a), torch.device(b)
    return a.type == b.type and (a.index is None or b.index is None or a.index == b.index)


def _check_tensor(
    check: str, what: str, x: Any, shape: tuple, device: torch.device, dtype=torch.float32
) -> None:
    if not isinstance(x, torch.Tensor):
        _fail(check, f"{what} must be a torch.Tensor, got {type(x).__name__}")
    if tuple(x.shape) != tuple(shape):
        _fail(check, f"{what} has shape {tuple(x.shape)}, expected {tuple(shape)}")
    if x.dtype != dtype:
        _fail(check, f"{what} has dtype {x.dtype}, expected {dtype}")
    if not _same_device(x.device, device):
        _fail(check, f"{what} is on {x.device}, expected the backend's device {device}")


def _expect_raises(check: str, what: str, errors: tuple, fn: Callable[[], Any]) -> None:
    try:
        fn()
    except errors:
        return
    except Exception as exc:  # noqa: BLE001 - report what was raised instead
        names = " or ".join(e.__name__ for e in errors)
        _fail(check, f"{what} must raise {names}, raised {type(exc).__name__}: {exc}")
    names = " or ".join(e.__name__ for e in errors)
    _fail(check, f"{what} must raise {names}, but it returned normally")


def _rows(*ids: int) -> torch.Tensor:
    return torch.tensor(ids, dtype=torch.int64)


def _snapshot(b: SimBackend) -> dict[str, torch.Tensor]:
    pos, quat, lin, ang = b.body_state()
    return {
        "qpos": b.qpos.clone(), "qvel": b.qvel.clone(), "pos": pos.clone(),
        "quat": quat.clone(), "lin": lin.clone(), "ang": ang.clone(),
    }


def _unchanged(check: str, what: str, before: dict, after: dict, rows: list[int]) -> None:
    for key in before:
        if not torch.equal(before[key][rows], after[key][rows]):
            _fail(check, f"{what} changed {key} of rows {rows}, which it must leave untouched")


# ------------------------------------------------------------------------------ checks
def check_declarations(t: Target) -> None:
    from unisim.registry import contract_problems

    c = "declarations"
    cls = t.backend_cls
    version = getattr(cls, "contract_version", None)
    if version != CONTRACT_VERSION:
        _fail(c, f"{cls.__name__}.contract_version is {version!r}; this unisim implements "
                 f"contract {CONTRACT_VERSION}")
    caps = getattr(cls, "capabilities", None)
    if not isinstance(caps, Capabilities):
        _fail(c, f"{cls.__name__}.capabilities must be a unisim.Capabilities, got {caps!r}")
    if caps.tensor_kind not in ("host_bridge", "device_native"):
        _fail(c, f"capabilities.tensor_kind is {caps.tensor_kind!r}; expected 'host_bridge' "
                 f"or 'device_native'")
    problems = contract_problems(cls)
    if problems:
        _fail(c, f"{cls.__name__} does not implement contract {CONTRACT_VERSION}: "
                 f"{'; '.join(problems)}")


def check_attributes(t: Target) -> None:
    c = "attributes"
    ref = _Reference(t.spec)
    m = ref.m
    with t.build() as b:
        if b.num_envs != t.spec.num_envs:
            _fail(c, f"num_envs is {b.num_envs}, expected spec.num_envs={t.spec.num_envs}")
        if not isinstance(b.device, torch.device):
            _fail(c, f"device must be a torch.device, got {b.device!r}")
        if t.capabilities.tensor_kind == "host_bridge" and b.device.type != "cpu":
            _fail(c, f"a host_bridge backend's tensors live on the CPU, device is {b.device}")
        if not _same_device(b.device, torch.device(t.spec.device)):
            _fail(c, f"device is {b.device}, expected spec.device={t.spec.device!r}")
        if not np.isclose(b.dt, m.opt.timestep):
            _fail(c, f"dt is {b.dt}, expected the model's timestep {m.opt.timestep}")
        for key, want in (("nq", m.nq), ("nv", m.nv), ("nu", m.nu)):
            if getattr(b, key) != want:
                _fail(c, f"{key} is {getattr(b, key)}, expected {want}")
        lists = {
            "joint_names": [m.joint(i).name for i in range(m.njnt)],
            "actuator_names": [m.actuator(i).name for i in range(m.nu)],
            "body_names": list(t.spec.tracked_bodies),
        }
        for key, want in lists.items():
            if list(getattr(b, key)) != want:
                _fail(c, f"{key} is {list(getattr(b, key))}, expected {want}")
        named = [m.sensor(i).name for i in range(m.nsensor) if m.sensor(i).name]
        missing = [n for n in named if n not in list(b.sensor_names)]
        if missing:
            _fail(c, f"sensor_names {list(b.sensor_names)} lacks the model's sensors {missing}")


def check_initial_state(t: Target) -> None:
    c = "initial_state"
    ref = _Reference(t.spec).state()
    n = t.spec.num_envs
    with t.build() as b:
        rep = lambda x: np.repeat(np.asarray(x)[None], n, axis=0)  # noqa: E731
        _close(c, "qpos after construction (keyframe 0)", b.qpos, rep(ref["qpos"]), 1e-6)
        _close(c, "qvel after construction (keyframe 0)", b.qvel, rep(ref["qvel"]), 1e-6)
        pos, quat, lin, ang = b.body_state()
        _close(c, "body_state pos", pos, rep(ref["pos"]), 1e-5)
        _close(c, "body_state quat (wxyz)", quat, rep(ref["quat"]), 1e-5)
        for name, value in ref["sensors"].items():
            _close(c, f"sensor({name!r})", b.sensor(name), rep(value), 1e-5)


def check_tensors(t: Target) -> None:
    c = "tensors"
    ref = _Reference(t.spec)
    m = ref.m
    n, nb = t.spec.num_envs, len(t.spec.tracked_bodies)
    with t.build() as b:
        dev = b.device
        for when in ("after construction", "after step"):
            _check_tensor(c, f"qpos {when}", b.qpos, (n, m.nq), dev)
            _check_tensor(c, f"qvel {when}", b.qvel, (n, m.nv), dev)
            state = b.body_state()
            if len(state) != 4:
                _fail(c, f"body_state() must return (pos, quat, lin_vel, ang_vel), got {len(state)}")
            for what, x, width in zip(("pos", "quat", "lin_vel", "ang_vel"), state, (3, 4, 3, 3)):
                _check_tensor(c, f"body_state {what} {when}", x, (n, nb, width), dev)
            for i in range(m.nsensor):
                name = m.sensor(i).name
                _check_tensor(c, f"sensor({name!r}) {when}", b.sensor(name),
                              (n, int(m.sensor_dim[i])), dev)
            _check_tensor(c, f"contact_force({CONTACT_BODY!r}) {when}",
                          b.contact_force(CONTACT_BODY), (n, 3), dev)
            _check_tensor(c, f"diverged() {when}", b.diverged(), (n,), dev, torch.bool)
            b.step(_t(np.zeros((n, m.nu)), b))


def check_step(t: Target) -> None:
    c = "step"
    ref = _Reference(t.spec)
    n, dec = t.spec.num_envs, t.spec.decimation
    rng = np.random.default_rng(0)
    ctrl = ref.random_ctrl(rng, n)
    start = ref.state()
    with t.build() as b1, t.build() as b2:
        b1.step(_t(ctrl, b1))
        for _ in range(dec):
            b2.step(_t(ctrl, b2), 1)
        if not (torch.isfinite(b1.qpos).all() and torch.isfinite(b1.qvel).all()):
            _fail(c, "the state is not finite after one step from the keyframe")
        if torch.equal(b1.qvel, torch.zeros_like(b1.qvel)):
            _fail(c, "qvel is still zero after a step: the worlds did not move")
        exact = t.capabilities.deterministic
        for key in ("qpos", "qvel"):
            a, d = getattr(b1, key), getattr(b2, key)
            same = torch.equal(a, d) if exact else torch.allclose(a, d, atol=1e-5, rtol=1e-5)
            if not same:
                _fail(c, f"step(ctrl) must equal {dec} x step(ctrl, 1) (decimation={dec}): "
                         f"{key} differs by {(a - d).abs().max().item():.3g}")
        for row in range(n):
            want = ref.step(start["qpos"], start["qvel"], ctrl[row], dec)
            _close(c, f"qpos of row {row} after one step", b1.qpos[row], want["qpos"], 1e-4)
            _close(c, f"qvel of row {row} after one step", b1.qvel[row], want["qvel"], 1e-3)


def check_bad_input(t: Target) -> None:
    c = "bad_input"
    ref = _Reference(t.spec)
    n, nq, nu = t.spec.num_envs, ref.m.nq, ref.m.nu
    with t.build() as b:
        before = _snapshot(b)
        _expect_raises(c, f"step() with ctrl of shape ({n}, {nu + 1})", (ValueError,),
                       lambda: b.step(_t(np.zeros((n, nu + 1)), b)))
        bad = np.zeros((n, nu))
        bad[1, 0] = np.nan
        _expect_raises(c, "step() with a NaN in ctrl", (ValueError,), lambda: b.step(_t(bad, b)))
        _unchanged(c, "a refused step()", before, _snapshot(b), list(range(n)))
        _expect_raises(c, f"reset() of row {n} (num_envs={n})", (IndexError,),
                       lambda: b.reset(_rows(n)))
        _expect_raises(c, f"reset() with qpos of shape (1, {nq + 1})", (ValueError,),
                       lambda: b.reset(_rows(0), qpos=_t(np.zeros((1, nq + 1)), b)))
        _expect_raises(c, "sensor('no_such_sensor')", (KeyError,),
                       lambda: b.sensor("no_such_sensor"))
        _expect_raises(c, "contact_force('no_such_body')", (KeyError,),
                       lambda: b.contact_force("no_such_body"))


def check_selected_reset(t: Target) -> None:
    c = "selected_reset"
    ref = _Reference(t.spec)
    n = t.spec.num_envs
    rng = np.random.default_rng(1)
    with t.build() as b:
        for _ in range(3):
            b.step(_t(ref.random_ctrl(rng, n), b))
        if not t.capabilities.selected_reset:
            _expect_raises(c, "reset() of some rows by a backend without selected_reset",
                           (CapabilityError,), lambda: b.reset(_rows(0)))
            b.reset(torch.arange(n))
            return
        before = _snapshot(b)
        rows, others = [0, n - 1], list(range(1, n - 1))
        b.reset(_rows(n - 1, 0))  # any order
        after = _snapshot(b)
        _unchanged(c, f"reset({rows})", before, after, others)
        keyframe = ref.state()
        for row in rows:
            _close(c, f"qpos of reset row {row}", after["qpos"][row], keyframe["qpos"], 1e-6)
            _close(c, f"qvel of reset row {row}", after["qvel"][row], keyframe["qvel"], 1e-6)
            _close(c, f"body pos of reset row {row}", after["pos"][row], keyframe["pos"], 1e-5)
        b.reset(_rows())  # an empty reset is a no-op
        _unchanged(c, "reset([])", after, _snapshot(b), list(range(n)))


def check_reset_with_state(t: Target) -> None:
    c = "reset_with_state"
    ref = _Reference(t.spec)
    n = t.spec.num_envs
    rng = np.random.default_rng(2)
    with t.build() as b:
        if not t.capabilities.selected_reset:
            rows = list(range(n))
        else:
            rows = [2, 0]
        qpos, qvel = ref.random_state(rng, len(rows))
        before = _snapshot(b)
        b.reset(_rows(*rows), qpos=_t(qpos, b), qvel=_t(qvel, b))
        after = _snapshot(b)
        _unchanged(c, f"reset({rows}, qpos, qvel)", before, after, [r for r in range(n) if r not in rows])
        for i, row in enumerate(rows):
            want = ref.state(qpos[i], qvel[i])
            _close(c, f"qpos of row {row}", after["qpos"][row], want["qpos"], 1e-6)
            _close(c, f"qvel of row {row}", after["qvel"][row], want["qvel"], 1e-6)
            _close(c, f"body_state pos of row {row}", after["pos"][row], want["pos"], 1e-5)
            _close(c, f"body_state quat (wxyz) of row {row}", after["quat"][row], want["quat"], 1e-5)
            _close(c, f"body_state lin_vel (world frame, body origin) of row {row}",
                   after["lin"][row], want["lin"], 1e-5)
            _close(c, f"body_state ang_vel (world frame) of row {row}",
                   after["ang"][row], want["ang"], 1e-5)
            for name, value in want["sensors"].items():
                _close(c, f"sensor({name!r}) of row {row}", b.sensor(name)[row], value, 1e-4)


def check_set_state(t: Target) -> None:
    c = "set_state"
    ref = _Reference(t.spec)
    n = t.spec.num_envs
    rng = np.random.default_rng(3)
    qpos, qvel = ref.random_state(rng, 1)
    with t.build() as b:
        b.step(_t(np.zeros((n, ref.m.nu)), b))
        before = _snapshot(b)
        try:
            b.set_state(_rows(1), qpos=_t(qpos, b), qvel=_t(qvel, b))
        except CapabilityError:
            _unchanged(c, "a refused set_state()", before, _snapshot(b), list(range(n)))
            raise ConformanceSkip("set_state raises CapabilityError (not supported)") from None
        after = _snapshot(b)
        _unchanged(c, "set_state([1], ...)", before, after, [0] + list(range(2, n)))
        want = ref.state(qpos[0], qvel[0])
        _close(c, "qpos of row 1", after["qpos"][1], want["qpos"], 1e-6)
        _close(c, "qvel of row 1", after["qvel"][1], want["qvel"], 1e-6)
        _close(c, "body_state pos of row 1", after["pos"][1], want["pos"], 1e-5)
        _close(c, "body_state lin_vel of row 1", after["lin"][1], want["lin"], 1e-5)


def check_contact_forces(t: Target) -> None:
    c = "contact_forces"
    n = t.spec.num_envs
    ref = _Reference(t.spec)
    with t.build() as b:
        up = torch.zeros(n, dtype=torch.float64)
        ctrl = _t(np.repeat(ref.state()["qpos"][None, 7:], n, axis=0), b)  # hold the keyframe pose
        for _ in range(12):
            b.step(ctrl)
            force = b.contact_force(CONTACT_BODY)
            if not torch.isfinite(force).all():
                _fail(c, f"contact_force({CONTACT_BODY!r}) is not finite")
            up = torch.maximum(up, force[:, 2].detach().to("cpu", torch.float64))
        if not (up > 0).all():
            _fail(c, f"contact_force({CONTACT_BODY!r})[:, 2] never became positive while the body "
                     f"stood on the floor (max per world: {up.tolist()}); it must be the total "
                     f"world-frame force on the body, in N")


def check_randomization(t: Target) -> None:
    c = "randomization"
    n = t.spec.num_envs
    ngeom = _Reference(t.spec).m.ngeom
    with t.build() as b:
        if not t.capabilities.randomization:
            values = _t(np.full((1, ngeom, 3), 0.5), b)
            _expect_raises(c, "set_model_field() by a backend that does not declare "
                              "randomization", (CapabilityError,),
                           lambda: b.set_model_field("geom_friction", _rows(0), values))
            _expect_raises(c, "model_field() by a backend that does not declare randomization",
                           (CapabilityError,), lambda: b.model_field("geom_friction"))
            return
        before = b.model_field("geom_friction")
        _check_tensor(c, "model_field('geom_friction')", before, (n, ngeom, 3), before.device)
        values = before[[1]].clone() * 0.5
        b.set_model_field("geom_friction", _rows(1), values)
        after = b.model_field("geom_friction")
        _close(c, "geom_friction of row 1 after set_model_field", after[1], _np(values[0]), 1e-6)
        others = [0] + list(range(2, n))
        if not torch.equal(after[others], before[others]):
            _fail(c, f"set_model_field on row 1 changed rows {others}")


def check_determinism(t: Target) -> None:
    c = "determinism"
    if not t.capabilities.deterministic:
        raise ConformanceSkip("the backend does not declare capabilities.deterministic")
    ref = _Reference(t.spec)
    n = t.spec.num_envs

    def run(b: SimBackend) -> dict:
        rng = np.random.default_rng(4)
        for i in range(6):
            b.step(_t(ref.random_ctrl(rng, n), b))
            if i == 2:
                b.reset(_rows(1) if t.capabilities.selected_reset else torch.arange(n))
        return _snapshot(b)

    other_threads = 2 if t.spec.nthread == 1 else 1
    with t.build() as b1, t.build() as b2, t.build(nthread=other_threads) as b3:
        first, second, third = run(b1), run(b2), run(b3)
    for label, other in (("a second identical run", second),
                         (f"a run with nthread={other_threads}", third)):
        for key in first:
            if not torch.equal(first[key], other[key]):
                diff = (first[key].double() - other[key].double()).abs().max().item()
                _fail(c, f"capabilities.deterministic is True but {label} gives a different "
                         f"{key} (max abs difference {diff:.3g}); it must be bit-identical")


def check_close(t: Target) -> None:
    c = "close"
    with t.build() as b:
        diverged = b.diverged()
        if diverged.any():
            _fail(c, f"diverged() is True for rows {diverged.nonzero().flatten().tolist()} at the "
                     f"keyframe")
        b.close()
        b.close()  # idempotent (build() closes a third time)


CHECKS: dict[str, Callable[[Target], None]] = {
    "declarations": check_declarations,
    "attributes": check_attributes,
    "initial_state": check_initial_state,
    "tensors": check_tensors,
    "step": check_step,
    "bad_input": check_bad_input,
    "selected_reset": check_selected_reset,
    "reset_with_state": check_reset_with_state,
    "set_state": check_set_state,
    "contact_forces": check_contact_forces,
    "randomization": check_randomization,
    "determinism": check_determinism,
    "close": check_close,
}
"""Every check, by name, in the order they run."""
