"""The reference drawn as a translucent ghost in play videos of tracking tasks: the scene holds the
ghost's geoms (checked without OpenGL), the rollout records the reference, and a video renders
with it where offscreen GL exists."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
import torch

from unilab.deploy.loading import rollout
from unilab.deploy.video import GHOST_RGBA, RenderUnavailableError, VideoError, add_ghost_geoms, render_video
from unilab.robots import g1
from unilab.tasks.g1_motion_tracking import G1MotionTrackingConfig, make_env
from unisim.backends.mujoco import MujocoBackend

EXACT = {"observation_noise": False, "reset_noise": {"enabled": False}, "push": {"enabled": False},
         "domain_randomization": {"enabled": False}, "motion": {"sampling": "start"}}  # fmt: skip


def test_the_scene_holds_a_translucent_ghost_at_the_reference_pose():
    model = g1.g1_model(with_floor=True)
    robot, ghost = mujoco.MjData(model), mujoco.MjData(model)
    robot.qpos[:] = model.key_qpos[0]
    mujoco.mj_forward(model, robot)
    ghost.qpos[:] = model.key_qpos[0]
    ghost.qpos[1] += 0.4  # the reference 0.4 m to the left, left arm raised
    ghost.qpos[7 + g1.G1_JOINT_NAMES.index("left_shoulder_pitch_joint")] = -1.5
    mujoco.mj_kinematics(model, ghost)
    scene = mujoco.MjvScene(model, maxgeom=500)
    mujoco.mjv_updateScene(model, robot, mujoco.MjvOption(), mujoco.MjvPerturb(), mujoco.MjvCamera(),
                           mujoco.mjtCatBit.mjCAT_ALL, scene)  # fmt: skip
    before = scene.ngeom
    robot_geoms = [g for g in range(model.ngeom) if model.geom_bodyid[g] != 0]
    added = add_ghost_geoms(scene, model, ghost)
    assert added == len(robot_geoms) and scene.ngeom == before + added  # the robot again, not the floor
    for k, g in enumerate(robot_geoms):
        geom = scene.geoms[before + k]
        assert geom.objid == g
        np.testing.assert_allclose(geom.pos, ghost.geom_xpos[g], atol=1e-6)
        np.testing.assert_allclose(geom.rgba, GHOST_RGBA, atol=1e-6)
        assert geom.transparent
    for i in range(before):  # the robot's own geoms keep their colours
        assert scene.geoms[i].rgba[3] == 1.0
    hand = model.geom("left_hand_collision").id
    assert np.linalg.norm(ghost.geom_xpos[hand] - robot.geom_xpos[hand]) > 0.4


class ZeroPolicy(torch.nn.Module):
    def __init__(self, num_actions: int) -> None:
        super().__init__()
        self.num_actions = num_actions

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.zeros(obs.shape[0], self.num_actions)


def test_the_rollout_records_the_reference_beside_the_robot():
    env = make_env(G1MotionTrackingConfig(**EXACT), backend_cls=MujocoBackend, num_envs=2, nthread=1, seed=0)
    cmd = env.commands["motion"]
    rec = rollout(env, ZeroPolicy(env.num_actions), 4, frame_stride=2)
    env.close()
    assert rec.reference_qpos is not None and rec.reference_qpos.shape == rec.qpos.shape == (2, env.backend.nq)
    pelvis = cmd.body_names.index("pelvis")
    for k, frame in enumerate((2, 4)):  # world 0 plays clip 0 from frame 0: frames 2 and 4 are drawn
        ref = rec.reference_qpos[k]
        torch.testing.assert_close(ref[:3].float(), cmd.body_pos_ref[frame, pelvis])
        torch.testing.assert_close(ref[env.robot.meta.qpos_adr].float(), cmd.joint_pos_ref[frame])
    # the robot started on the reference, then moved under zero actions: not the same qpos
    assert (rec.qpos - rec.reference_qpos).abs().max() > 1e-4


def test_a_video_renders_with_the_ghost(tmp_path):
    pytest.importorskip("av")
    model_xml = g1.g1_scene_xml()
    qpos = np.tile(g1.KNEES_BENT_QPOS, (3, 1))
    ghost = qpos.copy()
    ghost[:, 1] += 0.3
    with pytest.raises(VideoError, match="ghost_qpos must have the shape of qpos"):
        render_video(model_xml, qpos, tmp_path / "x.mp4", fps=25.0, ghost_qpos=ghost[:2])
    try:
        result = render_video(model_xml, qpos, tmp_path / "ghost.mp4", fps=25.0, width=64, height=48, ghost_qpos=ghost)
    except RenderUnavailableError as exc:
        pytest.skip(str(exc))
    assert result.frames == 3 and (tmp_path / "ghost.mp4").stat().st_size > 0
