"""The packed host bridge (Batch.pack) against a plain per-world mj_step loop, in both derived
modes, persistent or not: every packed item is exactly the float32 cast of MuJoCo's float64."""

import copy

import mujoco
import numpy as np
import pytest

from mjbatch_uni import Batch

from test_batch import NSTEP, NWORLD, XML, _controls

ITEMS = ["qpos", "qvel", "sensordata", "cfrc_ext"]


@pytest.fixture(scope="module")
def model():
    return mujoco.MjModel.from_xml_string(XML)


def _plain(model, n=NWORLD):
    datas = []
    for _ in range(n):
        d = mujoco.MjData(model)
        mujoco.mj_resetDataKeyframe(model, d, 0)
        mujoco.mj_forward(model, d)
        datas.append(d)
    return datas


def _expected(model, datas, derived):
    """What the packed row holds: qpos|qvel now, sensordata and cfrc_ext per the derived mode."""
    rows = []
    for d in datas:
        f = copy.copy(d)
        mujoco.mj_forward(model, f)
        sensors = d.sensordata.copy()
        if derived == "current":  # pos/vel sensors at the new state, acc ones of the last substep
            for s in range(model.nsensor):
                if model.sensor_needstage[s] < int(mujoco.mjtStage.mjSTAGE_ACC):
                    a, k = model.sensor_adr[s], model.sensor_dim[s]
                    sensors[a : a + k] = f.sensordata[a : a + k]
        rows.append(np.concatenate([d.qpos, d.qvel, sensors, d.cfrc_ext.ravel()]))
    return np.stack(rows).astype(np.float32)


@pytest.mark.parametrize("derived", ["current", "last_substep"])
@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("nthread", [1, 2])
def test_packed_rows_are_the_float32_cast_of_a_plain_loop(model, derived, persistent, nthread):
    batch = Batch(model, NWORLD, nthread=nthread, persistent=persistent, derived=derived)
    batch.reset()
    packed = batch.pack(ITEMS)
    assert packed.buffer.dtype == np.float32 and packed.buffer.flags.c_contiguous
    assert packed.nblocks == 3  # qpos|qvel merged, sensordata, cfrc_ext
    datas = _plain(model)
    np.testing.assert_array_equal(packed.buffer, _expected(model, datas, "current"))
    for u in _controls(model, 20).astype(np.float32):
        batch.step(u, NSTEP)
        packed.pull()
        for d, ui in zip(datas, u):
            d.ctrl[:] = ui
            mujoco.mj_step(model, d, NSTEP)
        np.testing.assert_array_equal(packed.buffer, _expected(model, datas, derived))
    # the box has landed: the packed contact force is its weight's reaction, not a zero
    assert packed.view("cfrc_ext")[0, model.body("box").id, 5] > 0


def test_views_are_views_and_counters_count(model):
    batch = Batch(model, NWORLD, nthread=1)
    packed = batch.pack(["qpos", "qvel", "sensordata", ("cfrc_ext", [2, 1])])
    layout = packed.layout
    assert layout.width == model.nq + model.nv + model.nsensordata + 12
    assert layout.shapes["cfrc_ext"] == (2, 6)
    for name in layout.slices:
        assert np.shares_memory(packed.view(name), packed.buffer)
    # body rows [2, 1] are not one run: qpos|qvel, sensordata, body 2, body 1
    assert packed.nblocks == 4
    before = dict(batch.transfer_stats)
    batch.step(np.zeros((NWORLD, model.nu)), NSTEP)
    packed.pull()
    stats = batch.transfer_stats
    assert stats["ctrl_copies"] - before["ctrl_copies"] == 1
    assert stats["pack_copies"] - before["pack_copies"] == 4
    assert stats["pack_bytes"] - before["pack_bytes"] == packed.buffer.nbytes
    np.testing.assert_array_equal(packed.view("cfrc_ext")[:, 0], batch.cfrc_ext[:, 2])
    np.testing.assert_array_equal(packed.view("cfrc_ext")[:, 1], batch.cfrc_ext[:, 1])


def test_pull_selected_rows_only(model):
    batch = Batch(model, NWORLD, nthread=2)
    packed = batch.pack(["qpos", "qvel"])
    batch.reset()
    packed.pull()
    old = packed.buffer.copy()
    batch.step(_controls(model, 1)[0], NSTEP)
    packed.pull(np.array([1, 3]))
    np.testing.assert_array_equal(packed.buffer[[0, 2, 4]], old[[0, 2, 4]])
    np.testing.assert_array_equal(
        packed.view("qpos")[[1, 3]], batch.qpos[[1, 3]].astype(np.float32)
    )


def test_select_narrows_the_copies_not_the_layout(model):
    batch = Batch(model, NWORLD, nthread=1)
    packed = batch.pack(["qpos", ("cfrc_ext", [0, 1, 2])])
    assert packed.nblocks == 2  # bodies 0-2 are one run
    packed.select("cfrc_ext", [])
    assert packed.nblocks == 1
    packed.buffer[:] = 0
    for u in _controls(model, 20):
        batch.step(u, NSTEP)
    packed.pull()
    assert not packed.view("cfrc_ext").any()
    packed.select("cfrc_ext", [0, 2])
    assert packed.nblocks == 3
    packed.pull()
    np.testing.assert_array_equal(
        packed.view("cfrc_ext")[:, 2], batch.cfrc_ext[:, 2].astype(np.float32)
    )
    assert not packed.view("cfrc_ext")[:, 1].any()
    with pytest.raises(ValueError, match=r"rows \[5\] of cfrc_ext are not in its packed index"):
        packed.select("cfrc_ext", [5])
    with pytest.raises(ValueError, match="packed whole"):
        packed.select("qpos", [0])


def test_pack_into_a_callers_buffer(model):
    batch = Batch(model, NWORLD, nthread=1)
    layout = batch.pack_layout(["qvel", "qpos"])  # not adjacent in this order: two blocks
    out = np.full((NWORLD, layout.width), np.nan, np.float32)
    packed = batch.pack(layout.items, out=out)
    assert packed.buffer is out and packed.nblocks == 2
    np.testing.assert_array_equal(out[:, layout.slices["qpos"]], batch.qpos.astype(np.float32))
    for bad in (np.zeros((NWORLD, layout.width)), np.zeros((NWORLD, 3), np.float32),
                np.zeros((layout.width, NWORLD), np.float32).T):
        with pytest.raises(ValueError, match="writable C-contiguous float32 array of shape"):
            batch.pack(layout.items, out=bad)


def test_pack_errors(model):
    batch = Batch(model, 2, nthread=1)
    with pytest.raises(ValueError, match=r"did you mean 'qpos'.*valid names: mjbatch_uni"):
        batch.pack(["qpso"])
    with pytest.raises(ValueError, match="packed twice"):
        batch.pack(["qpos", "qpos"])
    with pytest.raises(IndexError, match=r"index for cfrc_ext must be in \[0, 3\), got 4"):
        batch.pack([("cfrc_ext", [4])])
    with pytest.raises(ValueError, match="only floating-point"):
        batch.pack(["ncon"])
    packed = batch.pack(["qpos"])
    with pytest.raises(KeyError, match="packed items: qpos"):
        packed.view("qvel")


def test_last_substep_is_mj_step_semantics(model):
    """derived='last_substep': every derived field is MjData's right after mj_step."""
    batch = Batch(model, NWORLD, nthread=2, derived="last_substep", outputs=("xpos", "sensordata"))
    batch.reset()
    datas = _plain(model)
    for u in _controls(model, 5):
        batch.step(u, NSTEP)
        for d, ui in zip(datas, u):
            d.ctrl[:] = ui
            mujoco.mj_step(model, d, NSTEP)
    np.testing.assert_array_equal(batch.xpos, np.stack([d.xpos for d in datas]))
    np.testing.assert_array_equal(batch.sensordata, np.stack([d.sensordata for d in datas]))
    np.testing.assert_array_equal(batch.qpos, np.stack([d.qpos for d in datas]))


def test_derived_mode_is_checked(model):
    with pytest.raises(ValueError, match="derived must be one of 'current', 'last_substep'"):
        Batch(model, 2, derived="now")
