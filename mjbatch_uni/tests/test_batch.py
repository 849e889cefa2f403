"""mjbatch_uni.Batch against a plain per-world mj_step loop, on tiny inline models."""

import copy
import os

import mujoco
import numpy as np
import pytest

import mjbatch_uni
from mjbatch_uni import Batch

# A free box falling onto a plane, a hinge pendulum driven by a position actuator, and sensors
# of every stage (touch is an acceleration-stage sensor; the accelerometer makes MuJoCo compute
# cfrc_ext in every step).
XML = """
<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 .1"/>
    <body name="box" pos="0 0 .3">
      <freejoint/>
      <geom name="box" type="box" size=".1 .1 .1" mass="2"/>
      <site name="box_bottom" pos="0 0 -.1" size=".11 .11 .02" type="box"/>
    </body>
    <body name="pole" pos="1 0 1">
      <joint name="hinge" axis="0 1 0" damping=".1"/>
      <geom name="pole" type="capsule" fromto="0 0 0 .4 0 0" size=".04" mass="1"/>
      <site name="tip" pos=".4 0 0"/>
    </body>
  </worldbody>
  <actuator>
    <position name="hinge" joint="hinge" kp="20" kv="1"/>
  </actuator>
  <sensor>
    <jointpos name="hinge_pos" joint="hinge"/>
    <jointvel name="hinge_vel" joint="hinge"/>
    <framepos name="tip_pos" objtype="site" objname="tip"/>
    <touch name="box_touch" site="box_bottom"/>
    <accelerometer name="tip_acc" site="tip"/>
  </sensor>
  <keyframe>
    <key name="home" qpos="0 0 .5 1 0 0 0 .3" ctrl=".3"/>
  </keyframe>
</mujoco>
"""
NWORLD = 5
NSTEP = 4


@pytest.fixture(scope="module")
def model():
    return mujoco.MjModel.from_xml_string(XML)


def _controls(model, nenvstep, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, (nenvstep, NWORLD, model.nu))


def _forwarded(model, data):
    """What a step at stage VEL leaves: the position/velocity stages at the current state."""
    d = copy.copy(data)
    mujoco.mj_forward(model, d)
    return d


def _compare(model, batch, datas, plain):
    """Batch rows equal the per-world reference: state, kinematics, pos/vel sensors."""
    np.testing.assert_array_equal(batch.qpos, np.stack([d.qpos for d in datas]))
    np.testing.assert_array_equal(batch.qvel, np.stack([d.qvel for d in datas]))
    fwd = [_forwarded(model, d) for d in datas]
    for name in ("xpos", "xquat", "cvel", "subtree_com"):
        ref = np.stack([getattr(d, name) for d in fwd])
        np.testing.assert_array_equal(getattr(batch, name), ref)
    for s in range(model.nsensor):
        adr, dim = model.sensor_adr[s], model.sensor_dim[s]
        cols = slice(adr, adr + dim)
        # position/velocity sensors describe the new state; acceleration sensors the last substep
        ref = fwd if model.sensor_needstage[s] < int(mujoco.mjtStage.mjSTAGE_ACC) else plain
        np.testing.assert_array_equal(
            batch.sensordata[:, cols], np.stack([d.sensordata[cols] for d in ref])
        )


@pytest.mark.parametrize("persistent", [True, False])
@pytest.mark.parametrize("nthread", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_step_matches_mj_step_loop(model, nthread, dtype, persistent):
    batch = Batch(model, NWORLD, nthread=nthread, persistent=persistent)
    assert batch.persistent == persistent
    batch.reset()
    datas = [mujoco.MjData(model) for _ in range(NWORLD)]
    for d in datas:
        mujoco.mj_resetDataKeyframe(model, d, 0)
        mujoco.mj_forward(model, d)
    for u in _controls(model, 25).astype(dtype):
        batch.step(u, NSTEP)
        for d, ui in zip(datas, u):
            d.ctrl[:] = ui
            mujoco.mj_step(model, d, NSTEP)
        _compare(model, batch, datas, datas)
    np.testing.assert_array_equal(batch.ctrl, u)
    # the box lands: touch and cfrc_ext see its weight (cfrc_ext: last substep's contacts)
    box = model.body("box").id
    for i, d in enumerate(datas):
        np.testing.assert_array_equal(batch.cfrc_ext[i], d.cfrc_ext)
    assert batch.cfrc_ext[0, box, 5] > 0


def test_nthread_defaults_to_available_cores(model):
    cores = mjbatch_uni.available_cores()
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert 1 <= cores <= cpus  # physical cores: SMT siblings count once
    assert Batch(model, 2).nthread == cores


def test_reset_selected_rows(model):
    batch = Batch(model, NWORLD, nthread=2)
    batch.reset()
    for u in _controls(model, 5):
        batch.step(u, NSTEP)
    before = {n: getattr(batch, n).copy() for n in ("qpos", "qvel", "ctrl", "xpos", "sensordata")}
    state_before = batch.raw.state.copy()

    ids = np.array([3, 1])  # any order: qpos rows follow ids
    qpos = np.tile(model.key_qpos[0], (2, 1))
    qpos[:, 7] = [-0.5, 0.7]
    qvel = np.zeros((2, model.nv))
    qvel[:, 0] = [1.0, 2.0]
    batch.reset(ids, qpos=qpos, qvel=qvel)

    untouched = [0, 2, 4]
    np.testing.assert_array_equal(batch.raw.state[untouched], state_before[untouched])
    for name, value in before.items():
        np.testing.assert_array_equal(getattr(batch, name)[untouched], value[untouched])

    # the reset rows equal mj_resetDataKeyframe + writes + mj_forward, and continue identically
    refs = []
    for row, q, v in zip(ids, qpos, qvel):
        d = mujoco.MjData(model)
        mujoco.mj_resetDataKeyframe(model, d, 0)
        d.qpos[:], d.qvel[:] = q, v
        mujoco.mj_forward(model, d)
        np.testing.assert_array_equal(batch.qpos[row], d.qpos)
        np.testing.assert_array_equal(batch.ctrl[row], model.key_ctrl[0])
        np.testing.assert_array_equal(batch.xpos[row], d.xpos)
        np.testing.assert_array_equal(batch.sensordata[row], d.sensordata)
        refs.append(d)
    assert batch.bind("time")[3] == 0.0
    for u in _controls(model, 4, seed=1):
        batch.step(u, NSTEP)
        for row, d in zip(ids, refs):
            d.ctrl[:] = u[row]
            mujoco.mj_step(model, d, NSTEP)
            np.testing.assert_array_equal(batch.qpos[row], d.qpos)
            np.testing.assert_array_equal(batch.qvel[row], d.qvel)


def test_reset_keyframe_and_defaults(model):
    batch = Batch(model, NWORLD, nthread=1)
    np.testing.assert_array_equal(batch.qpos, np.tile(model.qpos0, (NWORLD, 1)))  # constructed
    batch.reset([0, 2], keyframe=[-1, 0])
    np.testing.assert_array_equal(batch.qpos[0], model.qpos0)
    np.testing.assert_array_equal(batch.qpos[2], model.key_qpos[0])
    batch.reset(np.array([False, True, False, False, True]))
    np.testing.assert_array_equal(batch.qpos[[1, 4]], np.tile(model.key_qpos[0], (2, 1)))
    batch.reset([])  # nothing


def test_expand_affects_only_its_world(model):
    batch = Batch(model, NWORLD, nthread=2)
    batch.reset()
    pole = model.body("pole").id
    mass = batch.expand("body_mass")
    mass[2, pole] *= 3.0
    batch.set_const([2])
    friction = batch.expand("geom_friction")
    friction[2, model.geom("box").id, 0] = 0.01
    assert batch.model_values("body_mass")[2, pole] == 3.0 * model.body_mass[pole]
    assert batch.model_values("geom_friction")[1, 0, 0] == model.geom_friction[0, 0]
    assert batch.model_values("dof_damping").shape == (NWORLD, model.nv)  # not expanded

    heavy = copy.copy(model)
    heavy.body_mass[pole] *= 3.0
    heavy.geom_friction[model.geom("box").id, 0] = 0.01
    mujoco.mj_setConst(heavy, mujoco.MjData(heavy))
    datas = []
    for i in range(NWORLD):
        m = heavy if i == 2 else model
        d = mujoco.MjData(m)
        mujoco.mj_resetDataKeyframe(m, d, 0)
        mujoco.mj_forward(m, d)
        datas.append((m, d))
    us = _controls(model, 10)
    for u in us:
        batch.step(u, NSTEP)
        for (m, d), ui in zip(datas, u):
            d.ctrl[:] = ui
            mujoco.mj_step(m, d, NSTEP)
    np.testing.assert_array_equal(batch.qpos, np.stack([d.qpos for _, d in datas]))
    # same controls in world 2 on the nominal model: the trajectory differs
    d = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, d, 0)
    for u in us:
        d.ctrl[:] = u[2]
        mujoco.mj_step(model, d, NSTEP)
    assert not np.array_equal(batch.qpos[2], d.qpos)


def test_ctrl_errors(model):
    batch = Batch(model, NWORLD, nthread=1)
    with pytest.raises(ValueError, match=r"ctrl must have shape \(nworld=5, nu=1\), got \(5, 3\)"):
        batch.step(np.zeros((NWORLD, 3)), 1)
    with pytest.raises(ValueError, match="float32 or float64, got int64"):
        batch.step(np.zeros((NWORLD, 1), np.int64), 1)
    u = np.zeros((NWORLD, model.nu))
    u[[1, 3]] = [[np.nan], [np.inf]]
    with pytest.raises(ValueError, match="non-finite values in 2 rows: 1, 3"):
        batch.step(u, 1)
    with pytest.raises(ValueError, match="nstep must be >= 1"):
        batch.step(None, 0)


def test_row_errors(model):
    batch = Batch(model, NWORLD, nthread=1)
    with pytest.raises(IndexError, match=r"ids must be in \[0, nworld=5\), got 5"):
        batch.reset([1, 5])
    with pytest.raises(IndexError, match=r"ids must be in \[0, nworld=5\), got -1"):
        batch.reset([-1])
    with pytest.raises(ValueError, match="unique, got 2 twice"):
        batch.reset([2, 0, 2])
    with pytest.raises(ValueError, match=r"qpos must have shape \(len\(ids\)=2, nq=8\)"):
        batch.reset([0, 1], qpos=np.zeros((2, 7)))
    with pytest.raises(ValueError, match="non-finite"):
        batch.reset([0], qvel=np.full((1, model.nv), np.nan))
    with pytest.raises(IndexError):
        batch.set_const([7])


def test_unknown_fields_hint(model):
    batch = Batch(model, 2, nthread=1)
    with pytest.raises(ValueError, match="did you mean 'qpos'"):
        batch.bind("qpso")
    with pytest.raises(ValueError, match="did you mean 'body_mass'"):
        batch.expand("body_mas")
    with pytest.raises(ValueError, match="did you mean 'body_mass'"):
        batch.model_values("body_mas")


def test_views_are_read_only(model):
    batch = Batch(model, 2, nthread=1)
    for name in ("qpos", "qvel", "ctrl", "xpos", "sensordata", "warning"):
        with pytest.raises(ValueError):
            getattr(batch, name)[0, 0] = 1.0


def test_diverged_and_reset(model, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # MuJoCo's warning handler writes MUJOCO_LOG.TXT to the cwd
    batch = Batch(model, NWORLD, nthread=2)
    batch.reset()
    assert not batch.diverged().any()
    batch.bind("qvel")[3, 0] = np.inf  # escape hatch: a raw state write
    batch.step(np.zeros((NWORLD, model.nu)), 2)
    # MuJoCo auto-resets the world and counts a bad-qvel warning
    np.testing.assert_array_equal(batch.diverged(), [False, False, False, True, False])
    assert batch.warning[3, mujoco.mjtWarning.mjWARN_BADQVEL] == 1
    batch.reset([3])
    assert not batch.diverged().any()


def test_diverged_non_finite_without_autoreset():
    m = mujoco.MjModel.from_xml_string(XML)
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_AUTORESET
    batch = Batch(m, 3, nthread=1)
    batch.bind("qpos")[1, 0] = np.nan
    np.testing.assert_array_equal(batch.diverged(), [False, True, False])
    # diverged() checks qpos and qvel as one block of the state rows: both ends of it
    batch.bind("qpos")[1, 0] = 0.0
    batch.bind("qpos")[0, -1] = np.inf
    batch.bind("qvel")[2, -1] = -np.inf
    np.testing.assert_array_equal(batch.diverged(), [True, False, True])
    (block,) = batch._finite_blocks
    np.testing.assert_array_equal(block, np.concatenate((batch.qpos, batch.qvel), axis=1))


def test_simulation_error_is_reported_not_raised():
    # a tiny arena: the solver overflows it in a world with contacts
    xml = XML.replace("<option", '<size memory="8K"/><option')
    m = mujoco.MjModel.from_xml_string(xml)
    batch = Batch(m, 3, nthread=2)
    q = batch.bind("qpos")
    q[:, 2] = 1.0
    q[1, 2] = 0.05  # world 1's box starts in the floor
    qpos_before = batch.qpos[1].copy()
    batch.step(None, 2)
    np.testing.assert_array_equal(batch.diverged(), [False, True, False])
    np.testing.assert_array_equal(batch.qpos[1], qpos_before)  # kept its state
    assert "out of memory" in batch.error(1)
    assert batch.qpos[0, 2] < 1.0  # the others ran


def test_cfrc_ext_needs_a_trigger():
    xml = XML.replace('<accelerometer name="tip_acc" site="tip"/>', "")
    m = mujoco.MjModel.from_xml_string(xml)
    assert not mjbatch_uni.computes_cfrc_ext(m)
    with pytest.raises(ValueError, match="add_cfrc_ext_trigger"):
        Batch(m, 2, nthread=1).cfrc_ext
    spec = mujoco.MjSpec.from_string(xml)
    mjbatch_uni.add_cfrc_ext_trigger(spec)
    m2 = spec.compile()
    assert mjbatch_uni.computes_cfrc_ext(m2)
    assert m2.nsensordata == m.nsensordata + 3
    # the trigger does not change the trajectory
    b1, b2 = Batch(m, 2, nthread=1), Batch(m2, 2, nthread=1)
    for u in _controls(m, 5)[:, :2]:
        b1.step(u, NSTEP)
        b2.step(u, NSTEP)
    np.testing.assert_array_equal(b1.qpos, b2.qpos)


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="Linux only")
def test_cpu_ids_pin_the_process(model):
    allowed = sorted(os.sched_getaffinity(0))
    try:
        batch = Batch(model, 2, cpu_ids=allowed[:1])
        assert os.sched_getaffinity(0) == set(allowed[:1])
        assert batch.nthread == 1 and batch.cpu_ids == tuple(allowed[:1])
    finally:
        os.sched_setaffinity(0, allowed)
    with pytest.raises(ValueError, match="cpu_ids must be in"):
        Batch(model, 2, cpu_ids=[10_000])


def test_cpu_ids_elsewhere_logs(model, monkeypatch, caplog):
    monkeypatch.delattr(os, "sched_setaffinity", raising=False)
    with caplog.at_level("INFO", logger="mjbatch_uni"):
        batch = Batch(model, 2, cpu_ids=[0])
    assert "not supported" in caplog.text
    assert batch.nthread == 1  # as many threads as CPUs named, though unpinned
    batch.step(None, 1)


def test_close(model):
    with Batch(model, 2, nthread=1) as batch:
        qpos = batch.qpos
    batch.close()
    assert qpos.shape == (2, model.nq)  # arrays stay valid
    with pytest.raises(RuntimeError, match="closed"):
        batch.step(None, 1)
    with pytest.raises(RuntimeError, match="closed"):
        batch.qpos


def test_constructor_errors(model):
    with pytest.raises(ValueError, match="nworld must be >= 1"):
        Batch(model, 0)
    with pytest.raises(ValueError, match="nthread must be >= 0"):
        Batch(model, 1, nthread=-1)


def test_set_state_mid_episode(model):
    batch = Batch(model, NWORLD, nthread=2)
    batch.reset()
    datas = []
    for _ in range(NWORLD):
        d = mujoco.MjData(model)
        mujoco.mj_resetDataKeyframe(model, d, 0)
        mujoco.mj_forward(model, d)
        datas.append(d)
    us = _controls(model, 6)
    for k, u in enumerate(us):
        if k == 3:  # a push on rows 4 and 0, mid-episode: time, ctrl and warm start are kept
            qvel = batch.qvel[[4, 0]] + 0.5
            batch.set_state([4, 0], qvel=qvel)
            datas[4].qvel[:], datas[0].qvel[:] = qvel
            assert batch.bind("time")[4] == datas[4].time > 0
        batch.step(u, NSTEP)
        for d, ui in zip(datas, u):
            d.ctrl[:] = ui
            mujoco.mj_step(model, d, NSTEP)
    np.testing.assert_array_equal(batch.qpos, np.stack([d.qpos for d in datas]))
    np.testing.assert_array_equal(batch.qvel, np.stack([d.qvel for d in datas]))
