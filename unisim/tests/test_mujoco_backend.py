"""The mujoco backend against plain MuJoCo on a small inline model."""

import copy

import mujoco
import numpy as np
import pytest
import torch

from unisim import CONTRACT_VERSION, CapabilityError, SimSpec
from unisim.backends.mujoco import MujocoBackend

# A free box (tracked) that falls onto a plane and a hinge pendulum with a position actuator,
# with a tilted free body so that body velocities are not trivially aligned. No acceleration
# sensor: the backend adds its contact-force trigger.
MJCF = """
<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 .1"/>
    <body name="box" pos="0 0 .3">
      <freejoint name="root"/>
      <geom name="box" type="box" size=".1 .05 .08" mass="2" pos=".02 .01 0"/>
      <site name="imu" pos=".05 0 .03"/>
      <body name="flap" pos=".1 0 .05" euler="0 30 0">
        <geom type="capsule" fromto="0 0 0 .1 0 0" size=".02" mass=".2"/>
      </body>
    </body>
    <body name="pole" pos="1 0 1">
      <joint name="hinge" axis="0 1 0" damping=".1"/>
      <geom name="pole" type="capsule" fromto="0 0 0 .4 0 0" size=".04" mass="1"/>
    </body>
  </worldbody>
  <actuator>
    <position name="hinge" joint="hinge" kp="20" kv="1"/>
  </actuator>
  <sensor>
    <jointpos name="hinge_pos" joint="hinge"/>
    <gyro name="gyro" site="imu"/>
    <framequat name="box_quat" objtype="body" objname="box"/>
  </sensor>
  <keyframe>
    <key qpos="0 0 .3 .9659 .2588 0 0 .2" qvel="0.3 -0.2 1 2 -1 3 0" ctrl=".2"/>
  </keyframe>
</mujoco>
"""
N = 4
TRACKED = ("box", "flap", "pole")


def make(**kw) -> MujocoBackend:
    spec = dict(mjcf=MJCF, num_envs=N, nthread=2, decimation=4, tracked_bodies=TRACKED)
    spec.update(kw)
    return MujocoBackend(SimSpec(**spec))


@pytest.fixture
def backend():
    b = make()
    yield b
    b.close()


def _plain(nworld=N):
    m = mujoco.MjModel.from_xml_string(MJCF)
    datas = []
    for _ in range(nworld):
        d = mujoco.MjData(m)
        mujoco.mj_resetDataKeyframe(m, d, 0)
        mujoco.mj_forward(m, d)
        datas.append(d)
    return m, datas


def _f32(datas, name):
    return np.stack([getattr(d, name) for d in datas]).astype(np.float32)


def _ctrl(seed, n=N):
    return torch.from_numpy(np.random.default_rng(seed).uniform(-1, 1, (n, 1)).astype(np.float32))


def test_declares_contract(backend):
    assert backend.contract_version == CONTRACT_VERSION
    caps = backend.capabilities
    assert caps.tensor_kind == "host_bridge" and caps.selected_reset and caps.randomization
    assert caps.deterministic and not caps.rendering


def test_names_and_sizes(backend):
    assert (backend.nq, backend.nv, backend.nu) == (8, 7, 1)
    assert backend.dt == 0.005
    assert backend.joint_names == ["root", "hinge"]
    assert backend.actuator_names == ["hinge"]
    assert backend.sensor_names == ["hinge_pos", "gyro", "box_quat"]  # trigger hidden
    assert backend.body_names == list(TRACKED)


def test_shapes_dtypes_devices(backend):
    tensors = {
        "qpos": (backend.qpos, (N, 8)),
        "qvel": (backend.qvel, (N, 7)),
        "sensor": (backend.sensor("gyro"), (N, 3)),
        "contact_force": (backend.contact_force("box"), (N, 3)),
        "model_field": (backend.model_field("geom_friction"), (N, 4, 3)),
    }
    for name, t in zip(("pos", "quat", "lin_vel", "ang_vel"), backend.body_state()):
        tensors[name] = (t, (N, 3, 4 if name == "quat" else 3))
    for name, (t, shape) in tensors.items():
        assert isinstance(t, torch.Tensor), name
        assert t.shape == shape, name
        assert t.dtype == torch.float32, name
        assert t.device == torch.device("cpu"), name
    div = backend.diverged()
    assert div.shape == (N,) and div.dtype == torch.bool and not div.any()


def test_starts_at_keyframe(backend):
    m, datas = _plain()
    np.testing.assert_array_equal(backend.qpos.numpy(), _f32(datas, "qpos"))
    np.testing.assert_array_equal(
        backend.sensor("hinge_pos").numpy()[:, 0], np.float32(m.key_qpos[0, 7])
    )


def _forwarded(m, d):
    f = copy.copy(d)
    mujoco.mj_forward(m, f)
    return f


def _expected_tensors(b, m, datas, derived):
    """Every tensor the backend hands out, as the float32 cast of plain MuJoCo."""
    refs = [_forwarded(m, d) if derived == "current" else d for d in datas]
    out = {"qpos": _f32(datas, "qpos"), "qvel": _f32(datas, "qvel")}
    for name in b.sensor_names:
        s = m.sensor(name).id
        adr, dim = m.sensor_adr[s], m.sensor_dim[s]
        acc = m.sensor_needstage[s] == int(mujoco.mjtStage.mjSTAGE_ACC)
        src = datas if acc else refs
        out[f"sensor:{name}"] = np.stack([d.sensordata[adr : adr + dim] for d in src]).astype(
            np.float32
        )
    ids = [m.body(n).id for n in TRACKED]
    out["pos"] = np.stack([d.xpos[ids] for d in refs]).astype(np.float32)
    out["quat"] = np.stack([d.xquat[ids] for d in refs]).astype(np.float32)
    vel = np.zeros((len(datas), len(ids), 6))
    for i, d in enumerate(refs):
        for j, bid in enumerate(ids):
            mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_XBODY, bid, vel[i, j], 0)
    out["lin_vel"] = vel[..., 3:].astype(np.float32)
    out["ang_vel"] = vel[..., :3].astype(np.float32)
    for name in ("box", "flap", "pole", "world"):
        out[f"contact:{name}"] = np.stack(
            [d.cfrc_ext[m.body(name).id, 3:] for d in datas]
        ).astype(np.float32)
    return out


def _tensors(b):
    out = {"qpos": b.qpos, "qvel": b.qvel}
    out.update({f"sensor:{n}": b.sensor(n) for n in b.sensor_names})
    out.update(zip(("pos", "quat", "lin_vel", "ang_vel"), b.body_state()))
    out.update({f"contact:{n}": b.contact_force(n) for n in ("box", "flap", "pole", "world")})
    return out


@pytest.mark.parametrize("derived", ["current", "last_substep"])
@pytest.mark.parametrize("persistent", [False, True])
def test_every_tensor_is_the_float32_cast_of_a_mj_step_loop(derived, persistent):
    """Bit-identical trajectories, and every tensor exactly MuJoCo's float64 value cast to
    float32 (tracked bodies exactly mj_objectVelocity of the body frame)."""
    b = make(options={"derived": derived, "persistent": persistent})
    m = b.model  # the backend's model (plus its hidden sensors) is the plain loop's too
    datas = []
    for _ in range(N):
        d = mujoco.MjData(m)
        mujoco.mj_resetDataKeyframe(m, d, 0)
        mujoco.mj_forward(m, d)
        datas.append(d)
    for k in range(30):
        u = _ctrl(k)
        b.step(u)  # decimation 4
        for d, ui in zip(datas, u.numpy()):
            d.ctrl[:] = ui
            mujoco.mj_step(m, d, 4)
        expected = _expected_tensors(b, m, datas, derived)
        for name, t in _tensors(b).items():
            np.testing.assert_array_equal(t.numpy(), expected[name], err_msg=name)
    assert np.abs(expected["lin_vel"][:, 1]).max() > 0.1  # the flap moves: not vacuous
    assert expected["contact:box"][:, 2].max() > 0  # the box has landed


def test_the_plain_model_gives_the_same_trajectory(backend):
    """The backend's hidden sensors do not change the physics."""
    m, datas = _plain()
    for k in range(15):
        u = _ctrl(k)
        backend.step(u)
        for d, ui in zip(datas, u.numpy()):
            d.ctrl[:] = ui
            mujoco.mj_step(m, d, 4)
        np.testing.assert_array_equal(backend.qpos.numpy(), _f32(datas, "qpos"))
        np.testing.assert_array_equal(backend.qvel.numpy(), _f32(datas, "qvel"))


def test_one_packed_buffer_backs_every_tensor(backend):
    packed = backend.packed
    assert packed.dtype == torch.float32 and packed.is_contiguous()
    lo = packed.data_ptr()
    hi = lo + packed.numel() * packed.element_size()
    for name, t in _tensors(backend).items():
        assert lo <= t.data_ptr() < hi, name
    layout = backend.packed_layout
    assert list(layout) == ["qpos", "qvel", "sensordata", "contact"]
    assert layout["contact"].stop == packed.shape[1]
    np.testing.assert_array_equal(packed[:, layout["qpos"]].numpy(), backend.qpos.numpy())
    # a step: ctrl in (1 copy) + qpos|qvel, sensordata, contact (3 copies), nothing per world
    stats0 = backend.transfer_stats
    assert stats0["copies_per_step"] == 4
    assert stats0["bytes_per_step"] == N * backend.nu * 8 + packed.numel() * 4
    before = packed.clone()
    backend.step(_ctrl(0))
    stats = backend.transfer_stats
    assert stats["host_copies"] - stats0["host_copies"] == 4
    assert stats["host_bytes"] - stats0["host_bytes"] == stats0["bytes_per_step"]
    assert not torch.equal(packed, before)  # refreshed in place


def test_contact_rows_are_copied_once_read():
    b = make(mjcf=MJCF.replace('qvel="0.3 -0.2 1 2 -1 3 0"', ""))
    assert b.transfer_stats["copies_per_step"] == 3  # ctrl, qpos|qvel, sensordata: no contacts
    for _ in range(100):
        b.step(torch.zeros(N, 1))
    contact = b.packed[:, b.packed_layout["contact"]]
    assert not contact.any()  # nobody asked yet
    box = b.contact_force("box")  # current at once, and from now on
    np.testing.assert_allclose(box[:, 2].numpy(), 2.2 * 9.81, rtol=1e-3)
    assert b.transfer_stats["copies_per_step"] == 4
    b.contact_force("pole")  # body 3, not next to body 1: one more block
    assert b.transfer_stats["copies_per_step"] == 5
    b.contact_force("flap")  # bodies 1-3 are one run again
    assert b.transfer_stats["copies_per_step"] == 4
    u = torch.full((N, 1), 0.5)
    b.step(u)
    ref = make(
        mjcf=MJCF.replace('qvel="0.3 -0.2 1 2 -1 3 0"', ""), options={"contact_bodies": ["box"]}
    )
    for _ in range(100):
        ref.step(torch.zeros(N, 1))
    ref.step(u)
    assert torch.equal(box, ref.contact_force("box"))


def test_contact_bodies_option():
    b = make(options={"contact_bodies": ["pole", "box"]})
    assert b.packed_layout["contact"].stop - b.packed_layout["contact"].start == 12
    for _ in range(30):
        b.step(torch.zeros(N, 1))
    assert b.contact_force("box")[:, 2].min() > 0
    with pytest.raises(KeyError, match="not packed; packed .*: pole, box"):
        b.contact_force("flap")
    with pytest.raises(KeyError, match="valid bodies"):
        b.contact_force("flop")
    with pytest.raises(KeyError, match="did you mean 'pole'"):
        make(options={"contact_bodies": ["pol"]})


def test_option_values_are_checked():
    with pytest.raises(ValueError, match="'derived' must be one of 'current', 'last_substep'"):
        make(options={"derived": "fresh"})
    with pytest.raises(ValueError, match="option 'persistent' must be bool"):
        make(options={"persistent": 1})
    with pytest.raises(ValueError, match="'contact_bodies' must be a list of body names"):
        make(options={"contact_bodies": [1]})
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="pin_memory' needs CUDA"):
            make(options={"pin_memory": True})


@pytest.mark.parametrize("derived", ["current", "last_substep"])
def test_g1_steps_bit_identical_to_a_plain_loop(derived):
    g1 = pytest.importorskip("unilab.robots.g1")
    tracked = ("pelvis", "torso_link", "left_ankle_roll_link")
    b = MujocoBackend(
        SimSpec(mjcf=g1.g1_scene_xml(), num_envs=3, nthread=2, tracked_bodies=tracked,
                options={"derived": derived})
    )
    m = b.model
    datas = []
    for _ in range(3):
        d = mujoco.MjData(m)
        mujoco.mj_resetDataKeyframe(m, d, 0)
        mujoco.mj_forward(m, d)
        datas.append(d)
    rng = np.random.default_rng(0)
    for _ in range(8):
        u = torch.from_numpy(
            (m.key_ctrl[0] + rng.normal(0, 0.1, (3, m.nu))).astype(np.float32)
        )
        b.step(u)
        for d, ui in zip(datas, u.numpy()):
            d.ctrl[:] = ui
            mujoco.mj_step(m, d, 4)
        np.testing.assert_array_equal(b.qpos.numpy(), _f32(datas, "qpos"))
        np.testing.assert_array_equal(b.qvel.numpy(), _f32(datas, "qvel"))
    refs = [_forwarded(m, d) for d in datas] if derived == "current" else datas
    ids = [m.body(n).id for n in tracked]
    pos, quat, lin, ang = b.body_state()
    for got, field in ((pos, "xpos"), (quat, "xquat")):
        ref = np.stack([getattr(d, field)[ids] for d in refs]).astype(np.float32)
        np.testing.assert_array_equal(got.numpy(), ref)
    for name in b.sensor_names:
        assert torch.isfinite(b.sensor(name)).all()


def test_contact_force_is_the_weight_at_rest():
    b = make(mjcf=MJCF.replace('qvel="0.3 -0.2 1 2 -1 3 0"', ""))
    for _ in range(100):
        b.step(torch.zeros(N, 1))
    f = b.contact_force("box").numpy()
    weight = 2.2 * 9.81  # box + flap
    np.testing.assert_allclose(f[:, 2], weight, rtol=1e-3)
    np.testing.assert_allclose(f[:, :2], 0, atol=1e-3)
    assert not b.contact_force("pole").numpy().any()  # hangs free
    with pytest.raises(KeyError, match="did you mean 'box'"):
        b.contact_force("boxx")


def test_contact_forces_off():
    b = make(options={"contact_forces": False})
    names = [b.model.sensor(i).name for i in range(b.model.nsensor)]
    assert "unisim_cfrc_ext_trigger" not in names  # no trigger added
    assert "contact" not in b.packed_layout
    with pytest.raises(CapabilityError, match="contact_forces"):
        b.contact_force("box")


def test_selected_reset_touches_only_its_rows(backend):
    for k in range(5):
        backend.step(_ctrl(k))
    before_q, before_v = backend.qpos.clone(), backend.qvel.clone()
    before_s = backend.sensor("gyro").clone()
    ids = torch.tensor([2, 0])
    qpos = backend.qpos[[2, 0]].clone()
    qpos[:, 2] = torch.tensor([0.5, 0.7])
    backend.reset(ids, qpos=qpos)
    m, _ = _plain(1)
    np.testing.assert_array_equal(backend.qpos[[1, 3]].numpy(), before_q[[1, 3]].numpy())
    np.testing.assert_array_equal(backend.qvel[[1, 3]].numpy(), before_v[[1, 3]].numpy())
    np.testing.assert_array_equal(backend.sensor("gyro")[[1, 3]].numpy(), before_s[[1, 3]].numpy())
    assert backend.qpos[2, 2] == np.float32(0.5) and backend.qpos[0, 2] == np.float32(0.7)
    key_qvel = np.tile(m.key_qvel[0], (2, 1)).astype(np.float32)
    np.testing.assert_array_equal(backend.qvel[[0, 2]].numpy(), key_qvel)
    # the tracked-body tensors of the reset rows follow the new state
    assert backend.body_state()[0][2, 0, 2] == pytest.approx(0.5, abs=1e-6)
    backend.reset(torch.tensor([], dtype=torch.int64))  # nothing


def test_kinematics_only_resets_leave_contact_forces_zero_and_the_trajectory_unchanged():
    """With SimSpec.reset_kinematics_only the reset rows get the full reset's state, tracked
    bodies and position/velocity sensors, zero contact forces until their next step, and every
    later step equals the full reset's bit for bit (the box rests on the floor: contacts)."""
    mjcf = MJCF.replace('qvel="0.3 -0.2 1 2 -1 3 0"', "")
    runs = []
    for kinematics_only in (False, True):
        b = make(mjcf=mjcf, reset_kinematics_only=kinematics_only)
        for k in range(60):  # the box lands and rests on the floor
            b.step(_ctrl(k))
        b.contact_force("box")  # copied from now on
        ids = torch.tensor([2, 0])
        qpos = b.qpos[ids].clone()
        qpos[:, 2] -= 0.002  # pressed into the floor: the reset state has contact forces
        b.reset(ids, qpos=qpos)
        after = [b.qpos.clone(), b.qvel.clone(), b.sensor("gyro").clone(), b.contact_force("box").clone(),
                 *(x.clone() for x in b.body_state())]
        for k in range(5):
            b.step(_ctrl(k))
        runs.append((after, b.packed.clone()))
        b.close()
    (full, full_end), (kin, kin_end) = runs
    for i, (x, y) in enumerate(zip(full, kin)):
        if i == 3:  # contact forces: the full reset's at rest on the floor, zero until the next step
            assert full[3][[2, 0], 2].min() > 1.0 and not kin[3][[2, 0]].any()
            assert torch.equal(x[[1, 3]], y[[1, 3]])
        else:
            assert torch.equal(x, y), i
    assert torch.equal(full_end, kin_end)


def test_kinematics_only_resets_read_zero_contact_forces_every_time_with_several_threads():
    """mujoco.batch with several threads sometimes keeps an acceleration-stage output row as the
    last step wrote it after a velocity-stage reset; the backend's rows read zero every time."""
    mjcf = MJCF.replace('qvel="0.3 -0.2 1 2 -1 3 0"', "")
    b = make(mjcf=mjcf, reset_kinematics_only=True, nthread=2)
    try:
        for k in range(60):  # the box lands and rests on the floor
            b.step(_ctrl(k))
        b.contact_force("box")  # copied from now on
        ids = torch.tensor([2, 0])
        for k in range(16):  # without the backend's zeros, about 1 reset in 4 kept the resting force
            b.step(_ctrl(k))
            assert b.contact_force("box")[ids, 2].min() > 1.0  # at rest on the floor: a force to clear
            qpos = b.qpos[ids].clone()
            qpos[:, 2] -= 0.002
            b.reset(ids, qpos=qpos)
            assert not b.contact_force("box")[ids].any(), k
            assert b.contact_force("box")[[1, 3], 2].min() > 1.0  # the other rows keep theirs
    finally:
        b.close()


def test_set_state_keeps_time_and_ctrl(backend):
    backend.step(_ctrl(0))
    t = backend.batch.bind("time").copy()
    ctrl = backend.batch.ctrl.copy()
    qvel = backend.qvel[[1]].clone()
    qvel[0, 0] += 1.0  # a push
    backend.set_state(torch.tensor([1]), qvel=qvel)
    np.testing.assert_array_equal(backend.batch.bind("time"), t)
    np.testing.assert_array_equal(backend.batch.ctrl, ctrl)
    assert backend.qvel[1, 0] == qvel[0, 0]


def test_set_model_field_affects_only_its_worlds(backend):
    pole = backend.model.body("pole").id
    masses = backend.model_field("body_mass")[[1], :].clone()
    masses[0, pole] *= 4
    backend.set_model_field("body_mass", torch.tensor([1]), masses)
    np.testing.assert_array_equal(backend.model_field("body_mass")[:, pole].numpy(), [1, 4, 1, 1])
    friction = torch.full((2, 4, 3), 0.5)
    backend.set_model_field("geom_friction", torch.tensor([3, 2]), friction)
    assert backend.model_field("geom_friction")[0, 1, 0] == 1.0
    assert backend.model_field("geom_friction")[2, 1, 0] == 0.5
    u = torch.full((N, 1), 0.8)
    for _ in range(20):
        backend.step(u)
    hinge = backend.qpos[:, 7].numpy()
    assert hinge[0] == hinge[2] == hinge[3] != hinge[1]
    with pytest.raises(ValueError, match="did you mean 'body_mass'"):
        backend.set_model_field("body_mas", torch.tensor([0]), masses)
    with pytest.raises(ValueError, match="must have shape"):
        backend.set_model_field("body_mass", torch.tensor([0, 1]), masses)


def test_ctrl_errors(backend):
    shape = r"ctrl must have shape \(num_envs=4, nu=1\), got \(4, 2\)"
    with pytest.raises(ValueError, match=shape):
        backend.step(torch.zeros(N, 2))
    with pytest.raises(ValueError, match="float32"):
        backend.step(torch.zeros(N, 1, dtype=torch.int64))
    u = torch.zeros(N, 1)
    u[2] = float("nan")
    with pytest.raises(ValueError, match="non-finite values in 1 rows: 2"):
        backend.step(u)


def test_reset_errors(backend):
    with pytest.raises(IndexError, match=r"env_ids must be in \[0, num_envs=4\), got 4"):
        backend.reset(torch.tensor([0, 4]))
    with pytest.raises(ValueError, match=r"qpos must have shape \(len\(env_ids\)=1, nq=8\)"):
        backend.reset(torch.tensor([0]), qpos=torch.zeros(1, 7))
    with pytest.raises(ValueError, match="unique"):
        backend.reset(torch.tensor([1, 1]))


def test_lookup_errors(backend):
    with pytest.raises(KeyError, match="valid sensors: hinge_pos, gyro, box_quat"):
        backend.sensor("gyr")
    with pytest.raises(KeyError, match="valid bodies"):
        make(tracked_bodies=("pelvis",))


def test_non_cpu_device_refused():
    message = "host-bridge: its tensors live on the CPU, got device='cuda'"
    with pytest.raises(ValueError, match=message):
        make(device="cuda")


def test_unknown_option_refused():
    with pytest.raises(ValueError, match="did you mean 'contact_forces'"):
        make(options={"contact_force": True})


def test_diverged_rows(backend, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # MuJoCo's warning handler writes MUJOCO_LOG.TXT to the cwd
    backend.batch.bind("qvel")[1, 0] = np.inf  # escape hatch: a raw state write
    backend.step(torch.zeros(N, 1))
    np.testing.assert_array_equal(backend.diverged().numpy(), [False, True, False, False])
    backend.reset(torch.tensor([1]))
    assert not backend.diverged().any()


def test_unstable_row_is_reported_others_unaffected(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # MuJoCo's warning handler writes MUJOCO_LOG.TXT to the cwd
    b = make()
    ref = make()
    gain = b.model_field("actuator_gainprm")[[2]]
    bias = b.model_field("actuator_biasprm")[[2]]
    gain[0, 0, 0], bias[0, 0, 1] = 1e4, -1e4  # far too stiff for dt: world 2 blows up
    b.set_model_field("actuator_gainprm", torch.tensor([2]), gain)
    b.set_model_field("actuator_biasprm", torch.tensor([2]), bias)
    seen = False
    for k in range(20):
        u = _ctrl(k)
        b.step(u)
        ref.step(u)
        div = b.diverged()
        seen |= bool(div[2])
        assert not div[[0, 1, 3]].any()
        np.testing.assert_array_equal(b.qpos[[0, 1, 3]].numpy(), ref.qpos[[0, 1, 3]].numpy())
    assert seen and b.diverged()[2]


def test_close_is_idempotent():
    b = make()
    b.close()
    b.close()
    with pytest.raises(RuntimeError, match="closed"):
        b.step(torch.zeros(N, 1))
