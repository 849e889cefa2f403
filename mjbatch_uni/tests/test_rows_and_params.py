"""Selected-row reads, writes and resets; per-world model parameters; divergence per row."""

import copy
import os

import mujoco
import numpy as np
import pytest

import mjbatch_uni
from mjbatch_uni import Batch

from test_batch import NSTEP, NWORLD, XML, _controls

FULL = int(mujoco.mjtState.mjSTATE_FULLPHYSICS)


@pytest.fixture(scope="module")
def model():
    return mujoco.MjModel.from_xml_string(XML)


def _keyframe_data(model, key=0):
    d = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, d, key)
    return d


def test_reset_keyframe_plus_perturbation_in_one_call(model):
    batch = Batch(model, NWORLD, nthread=2)
    batch.reset()
    for u in _controls(model, 3):
        batch.step(u, NSTEP)
    untouched = batch.get_state([0, 2, 4])
    rng = np.random.default_rng(0)
    ids = np.array([3, 1])
    dqpos = rng.normal(0, 0.1, (2, model.nv))
    dqvel = rng.normal(0, 0.5, (2, model.nv))
    before = dict(batch.transfer_stats)
    batch.reset(ids, dqpos=dqpos, dqvel=dqvel)
    assert batch.transfer_stats["state_copies"] - before["state_copies"] == 2
    np.testing.assert_array_equal(batch.get_state([0, 2, 4]), untouched)
    for row, dq, dv in zip(ids, dqpos, dqvel):
        d = _keyframe_data(model)
        mujoco.mj_integratePos(model, d.qpos, dq, 1.0)
        d.qvel[:] += dv
        mujoco.mj_forward(model, d)
        np.testing.assert_array_equal(batch.qpos[row], d.qpos)
        np.testing.assert_array_equal(batch.qvel[row], d.qvel)
        np.testing.assert_array_equal(batch.sensordata[row], d.sensordata)
        assert np.linalg.norm(batch.qpos[row, 3:7]) == pytest.approx(1.0, abs=1e-12)
    assert (batch.bind("time")[ids] == 0).all() and (batch.bind("time")[[0, 2, 4]] > 0).all()


@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("derived", ["last_substep", "current"])
def test_velocity_stage_reset_has_the_kinematics_and_the_trajectory_of_a_full_one(model, persistent, derived):
    """A reset that stops after the velocity stage gives the reset rows the full reset's state,
    poses and position/velocity sensors, leaves their acceleration-stage values zero, and every
    later step equals the full reset's bit for bit (the box lands on the plane: contacts). The
    batch's copied outputs of those values are zero too, except that a non-persistent batch on
    several threads sometimes leaves a reset row's output (each on its own: the sensors kept and
    ``cfrc_ext`` zeroed was seen) as a last step wrote it: the row's own (90 of 600 reset rows
    here) or, rarely, another row's that the thread's data last held (1 of 600), as
    ``Batch.reset`` documents."""
    acc_sensor = np.zeros(model.nsensordata, bool)
    for s in range(model.nsensor):
        if model.sensor_needstage[s] == int(mujoco.mjtStage.mjSTAGE_ACC):
            acc_sensor[model.sensor_adr[s] : model.sensor_adr[s] + model.sensor_dim[s]] = True
    assert acc_sensor.any()
    runs = []
    for stage in (mujoco.mjtStage.mjSTAGE_ACC, mujoco.mjtStage.mjSTAGE_VEL):
        batch = Batch(model, NWORLD, nthread=2, persistent=persistent, derived=derived,
                      outputs=("sensordata", "cfrc_ext"))
        batch.reset()
        controls = _controls(model, 6)
        for u in controls[:3]:
            batch.step(u, NSTEP)
        dqpos = np.random.default_rng(1).normal(0, 0.1, (2, model.nv))
        before = (np.array(batch.sensordata), np.array(batch.bind("cfrc_ext")))
        batch.reset([3, 1], dqpos=dqpos, stage=int(stage))
        after = (batch.get_state(spec=FULL), np.array(batch.sensordata), np.array(batch.bind("cfrc_ext")))
        for u in controls[3:]:
            batch.step(u, NSTEP)
        runs.append((after, batch.get_state(spec=FULL), np.array(batch.sensordata)))
        batch.close()
    (full, full_end, full_sensors), (vel, vel_end, vel_sensors) = runs
    np.testing.assert_array_equal(vel[0], full[0])  # qpos, qvel, act, time, ...
    np.testing.assert_array_equal(vel[1][:, ~acc_sensor], full[1][:, ~acc_sensor])
    for row in (3, 1):
        outputs = (vel[1][row, acc_sensor], vel[2][row])
        last_step = (before[0][:, acc_sensor], before[1])  # every row's, from the last VEL-stage run
        for output, stale in zip(outputs, last_step):  # each copied output on its own, as documented
            zero = (output == 0).all()
            left = any(np.array_equal(output, s) for s in stale)
            assert zero or (left and not persistent), (row, outputs)
    np.testing.assert_array_equal(vel[1][[0, 2, 4]], full[1][[0, 2, 4]])
    np.testing.assert_array_equal(vel_end, full_end)
    np.testing.assert_array_equal(vel_sensors, full_sensors)


def test_get_state_and_set_state_select_rows(model):
    batch = Batch(model, NWORLD, nthread=2)
    batch.reset()
    us = _controls(model, 6)
    for u in us[:3]:
        batch.step(u, NSTEP)
    # read rows 4 and 1 (in that order) as mj_getState would
    state = batch.get_state([4, 1], FULL)
    assert state.shape == (2, mujoco.mj_stateSize(model, FULL))
    ref = batch.get_data(4)
    expected = np.empty(mujoco.mj_stateSize(model, FULL))
    mujoco.mj_getState(model, ref, expected, FULL)
    np.testing.assert_array_equal(state[0], expected)
    # write world 4's full physics state into worlds 0 and 2: they then step identically to 4
    full = batch.get_state([4])
    batch.set_state([0, 2], state=np.repeat(full, 2, axis=0))
    for u in us[3:]:
        u = np.repeat(u[[4]], NWORLD, axis=0)
        batch.step(u, NSTEP)
    np.testing.assert_array_equal(batch.qpos[0], batch.qpos[4])
    np.testing.assert_array_equal(batch.qpos[2], batch.qpos[4])
    assert not np.array_equal(batch.qpos[1], batch.qpos[4])
    with pytest.raises(ValueError, match="within mjSTATE_INTEGRATION"):
        batch.get_state(None, 1 << 20)
    with pytest.raises(ValueError, match=r"state must have shape \(len\(ids\)=1, mj_stateSize"):
        batch.set_state([0], state=np.zeros((1, 3)), spec=FULL)


def test_reset_errors(model):
    batch = Batch(model, NWORLD, nthread=1)
    with pytest.raises(ValueError, match=r"dqpos must have shape \(len\(ids\)=2, nv=7\)"):
        batch.reset([0, 1], dqpos=np.zeros((2, model.nq)))
    with pytest.raises(ValueError, match="bad keyframe"):
        batch.reset([0], keyframe=5)
    with pytest.raises(ValueError, match="dqvel has non-finite values"):
        batch.reset([0], dqvel=np.full((1, model.nv), np.inf))
    with pytest.raises(ValueError, match="ids must be integers"):
        batch.reset(np.array([0.5]))
    with pytest.raises(ValueError, match="boolean ids mask must have shape"):
        batch.reset(np.array([True, False]))


# ---------------------------------------------------------------- per-world model parameters
def test_randomized_parameters_act_in_their_own_world_only(model):
    """Friction, body mass, CoM offset and actuator gains, each in one world: that world equals
    a plain loop on a model copy with the same change; all others equal the nominal model."""
    batch = Batch(model, NWORLD, nthread=2)
    batch.reset()
    box, pole = model.body("box").id, model.body("pole").id
    box_geom = model.geom("box").id
    changes = {  # world -> (field, index, value)
        1: ("geom_friction", (box_geom, 0), 2.0),  # contacts use the larger of two frictions
        2: ("body_mass", (pole,), 3.0),
        3: ("body_ipos", (pole, 0), 0.35),
        4: ("actuator_gainprm", (0, 0), 60.0),
    }
    models = [model] * NWORLD
    for world, (name, index, value) in changes.items():
        values = np.array(batch.model_values(name)[[world]])
        values[(0, *index)] = value
        if name == "actuator_gainprm":  # a position actuator's kp lives in both
            bias = np.array(batch.model_values("actuator_biasprm")[[world]])
            bias[0, 0, 1] = -value
            batch.set_model_field("actuator_biasprm", [world], bias)
        batch.set_model_field(name, [world], values)
        m = copy.copy(model)
        getattr(m, name)[index] = value
        if name == "actuator_gainprm":
            m.actuator_biasprm[0, 1] = -value
        mujoco.mj_setConst(m, mujoco.MjData(m))
        models[world] = m
    assert batch.model_values("body_mass")[2, pole] == 3.0
    assert batch.model_values("body_mass")[1, pole] == model.body_mass[pole]
    slide = np.zeros(model.nv)
    slide[0] = 2.0  # the box lands sliding, so that its friction matters
    batch.set_state(None, qvel=np.tile(slide, (NWORLD, 1)))
    datas = []
    for m in models:
        d = _keyframe_data(m)
        d.qvel[:] = slide
        mujoco.mj_forward(m, d)
        datas.append(d)
    us = _controls(model, 30)
    for u in us:
        batch.step(u, NSTEP)
        for m, d, ui in zip(models, datas, u):
            d.ctrl[:] = ui
            mujoco.mj_step(m, d, NSTEP)
    np.testing.assert_array_equal(batch.qpos, np.stack([d.qpos for d in datas]))
    # and each change mattered: the nominal model gives another trajectory in that world
    for world in changes:
        d = _keyframe_data(model)
        d.qvel[:] = slide
        for u in us:
            d.ctrl[:] = u[world]
            mujoco.mj_step(model, d, NSTEP)
        assert not np.array_equal(batch.qpos[world], d.qpos), changes[world]


def test_set_model_field_errors(model):
    batch = Batch(model, NWORLD, nthread=1)
    with pytest.raises(ValueError, match=r"did you mean 'body_mass'.*valid names: mjbatch_uni"):
        batch.set_model_field("body_mas", [0], np.ones((1, 3)))
    shape = r"values for body_mass must have shape \(len\(ids\)=1, 3\)"
    with pytest.raises(ValueError, match=shape):
        batch.set_model_field("body_mass", [0], np.ones((1, 4)))
    with pytest.raises(ValueError, match="floating-point"):
        batch.set_model_field("geom_contype", [0], np.ones((1, model.ngeom)))
    with pytest.raises(ValueError, match="must be finite"):
        batch.set_model_field("body_mass", [0], np.full((1, 3), np.nan))
    with pytest.raises(IndexError, match=r"\[0, nworld=5\)"):
        batch.set_model_field("body_mass", [9], np.ones((1, 3)))


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs Linux /proc")
def test_randomization_memory_scales_with_fields_not_model_copies():
    # a model made big (a 1000 x 1000 height field, 4 MB) so that one copy per world would show
    xml = XML.replace(
        "<worldbody>",
        '<asset><hfield name="h" nrow="1000" ncol="1000" size="1 1 .1 .1"/></asset><worldbody>',
    ).replace(
        '<geom name="floor"', '<geom type="hfield" hfield="h" pos="5 5 -1"/><geom name="floor"'
    )
    m = mujoco.MjModel.from_xml_string(xml)
    model_mb = m.hfield_data.nbytes / 2**20
    nworld = 256
    batch = Batch(m, nworld, nthread=2)
    batch.step(None, 2)
    base = _rss_mb()
    rng = np.random.default_rng(0)
    for name in ("geom_friction", "body_mass", "body_ipos", "actuator_gainprm"):
        values = np.asarray(batch.model_values(name))
        values = values * rng.uniform(0.8, 1.2, (nworld,) + (1,) * (values.ndim - 1))
        batch.set_model_field(name, None, values)
    for _ in range(3):
        batch.step(np.zeros((nworld, m.nu)), NSTEP)
    grown = _rss_mb() - base
    # a model copy per world would be >= nworld * model_mb = 1000 MB; the fields are ~ 1 MB
    assert grown < 0.1 * nworld * model_mb, (grown, model_mb)
    assert batch.model_values("body_mass").shape == (nworld, m.nbody)


# ---------------------------------------------------------------- divergence
def test_unstable_row_is_reported_and_the_others_run_on(model, tmp_path, monkeypatch):
    """World 2 gets a position gain far too stiff for its timestep: it blows up (MuJoCo's bad
    qacc warning, then its auto-reset). It is reported; the batch keeps stepping; every other
    row stays bit-identical to a plain loop; after a reset world 2 is clean again."""
    monkeypatch.chdir(tmp_path)  # MuJoCo's warning handler writes MUJOCO_LOG.TXT to the cwd
    batch = Batch(model, NWORLD, nthread=2)
    batch.reset()
    kp = 1e4
    gain = np.array(batch.model_values("actuator_gainprm")[[2]])
    bias = np.array(batch.model_values("actuator_biasprm")[[2]])
    gain[0, 0, 0], bias[0, 0, 1] = kp, -kp
    batch.set_model_field("actuator_gainprm", [2], gain)
    batch.set_model_field("actuator_biasprm", [2], bias)
    datas = [_keyframe_data(model) for _ in range(NWORLD)]
    for d in datas:
        mujoco.mj_forward(model, d)
    others = [0, 1, 3, 4]
    first = None
    us = _controls(model, 20)
    for k, u in enumerate(us):
        batch.step(u, NSTEP)
        for i in others:
            datas[i].ctrl[:] = u[i]
            mujoco.mj_step(model, datas[i], NSTEP)
        div = batch.diverged()
        if div[2] and first is None:
            first = k
        assert not div[others].any()
        np.testing.assert_array_equal(batch.qpos[others], np.stack([datas[i].qpos for i in others]))
    assert first is not None and first < len(us) - 1  # blew up, and the batch kept stepping
    assert batch.warning[2, mujoco.mjtWarning.mjWARN_BADQACC] >= 1
    batch.set_model_field("actuator_gainprm", [2], np.asarray(model.actuator_gainprm)[None])
    batch.set_model_field("actuator_biasprm", [2], np.asarray(model.actuator_biasprm)[None])
    batch.reset([2])
    batch.step(us[0], NSTEP)
    assert not batch.diverged().any()


def test_huge_velocity_is_reported(model, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    batch = Batch(model, 3, nthread=2)
    batch.reset()
    batch.set_state([1], qvel=np.full((1, model.nv), 1e12))  # beyond MuJoCo's mjMAXVAL
    q0 = batch.qpos[[0, 2]].copy()
    batch.step(np.zeros((3, model.nu)), NSTEP)
    np.testing.assert_array_equal(batch.diverged(), [False, True, False])
    assert batch.warning[1, mujoco.mjtWarning.mjWARN_BADQVEL] == 1
    assert not np.array_equal(batch.qpos[[0, 2]], q0)  # the others moved on


def test_unknown_names_list_where_the_valid_ones_are(model):
    batch = Batch(model, 2, nthread=1)
    with pytest.raises(ValueError, match="valid names: mjbatch_uni.DATA_FIELDS"):
        batch.bind("no_such_field")
    with pytest.raises(ValueError, match="valid names: mjbatch_uni.MODEL_FIELDS"):
        batch.expand("no_such_field")
    assert "qpos" in mjbatch_uni.DATA_FIELDS and "body_mass" in mjbatch_uni.MODEL_FIELDS
