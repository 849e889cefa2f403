"""Left/right mirror of g1_walk_flat (``env.mirror``): involutions, the term layout, the joint
signs checked against the G1's kinematics, errors for terms without a rule, and training with
``algo.symmetry=true`` in both runtimes."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import mujoco
import numpy as np
import pytest
import torch

from unilab.envs.manager_based_rl_env import ManagerBasedRlEnv
from unilab.envs.mirror import MirrorRule, joint_mirror, joint_sign, mirror_name
from unilab.robots import g1
from unilab.tasks.g1_walk_flat import G1WalkFlatConfig, make_env
from unilab.tasks.g1_walk_flat.env_cfg import make_env_cfg
from unilab_rl.algorithms.sac.networks import Actor
from unilab_rl.vecenv import apply_mirror
from unisim.backends.mujoco import MujocoBackend

UNILAB = str(Path(sys.executable).parent / "unilab")


@pytest.fixture(scope="module")
def env():
    e = make_env(G1WalkFlatConfig(), backend_cls=MujocoBackend, num_envs=2, nthread=1, seed=0)
    yield e
    e.close()


def test_names_and_signs():
    assert mirror_name("left_hip_roll_joint") == "right_hip_roll_joint"
    assert mirror_name("right_foot_pos") == "left_foot_pos"
    assert mirror_name("waist_yaw_joint") == "waist_yaw_joint"
    assert [joint_sign(n) for n in ("waist_roll_joint", "waist_yaw_joint", "left_wrist_yaw_joint")] == [-1, -1, -1]
    assert [joint_sign(n) for n in ("waist_pitch_joint", "left_knee_joint", "right_elbow_joint")] == [1, 1, 1]
    with pytest.raises(ValueError, match="'left_knee_joint' has no mirror image 'right_knee_joint'"):
        joint_mirror(("left_knee_joint", "waist_yaw_joint"))


def test_mirror_is_an_involution_for_every_group_and_the_actions(env):
    mirror = env.mirror
    assert set(mirror.obs) == set(env.obs_dims) == {"actor", "critic"}
    cases = [(mirror.obs[g], env.obs_dims[g]) for g in mirror.obs] + [(mirror.actions, env.num_actions)]
    for (perm, sign), width in cases:
        assert perm.shape == sign.shape == (width,) and perm.dtype == torch.long and sign.dtype == torch.float32
        x = torch.randn(5, width)
        assert not torch.equal(apply_mirror(x, (perm, sign)), x)
        assert torch.equal(apply_mirror(apply_mirror(x, (perm, sign)), (perm, sign)), x)


def test_term_layout_and_joint_signs(env):
    perm, sign = env.mirror.obs["critic"]
    layout = {name: (a, b) for name, a, b in env.observation_manager.layout["critic"]}

    def term(name):
        a, b = layout[name]
        return (perm[a:b] - a).tolist(), sign[a:b].tolist()

    assert term("base_lin_vel") == ([0, 1, 2], [1, -1, 1])
    assert term("base_ang_vel") == ([0, 1, 2], [-1, 1, -1])
    assert term("projected_gravity") == ([0, 1, 2], [1, -1, 1])
    assert term("command") == ([0, 1, 2], [1, -1, -1])
    assert term("foot_height") == ([1, 0], [1, 1]) and term("foot_contact") == ([1, 0], [1, 1])
    assert term("foot_contact_forces") == ([3, 4, 5, 0, 1, 2], [1, -1, 1, 1, -1, 1])
    names = list(env.meta.joint_names)
    jperm, jsign = term("joint_pos")
    assert (jperm, jsign) == term("joint_vel") == term("actions")
    assert (jperm, jsign) == (env.mirror.actions[0].tolist(), env.mirror.actions[1].tolist())
    for i, name in enumerate(names):
        assert names[jperm[i]] == mirror_name(name)
        kind = name.removesuffix("_joint").rsplit("_", 1)[-1]
        assert jsign[i] == (-1.0 if kind in ("roll", "yaw") else 1.0), name
    # the actor group is the critic's first 103 columns
    assert torch.equal(env.mirror.obs["actor"][0], perm[:103]) and torch.equal(env.mirror.obs["actor"][1], sign[:103])


def test_gait_phase_term_swaps_the_feet():
    e = make_env(G1WalkFlatConfig(gait={"enabled": True}), backend_cls=MujocoBackend, num_envs=1, nthread=1)
    try:
        for group in ("actor", "critic"):
            perm, sign = e.mirror.obs[group]
            (a, b), = [(a, b) for name, a, b in e.observation_manager.layout[group] if name == "gait_phase"]
            assert (perm[a:b] - a).tolist() == [1, 0, 3, 2] and sign[a:b].tolist() == [1, 1, 1, 1]
    finally:
        e.close()


def _feet_in_pelvis_frame(model, data, q: np.ndarray, names) -> np.ndarray:
    """(2, 3) left and right ankle-roll body positions in the pelvis frame for joint angles q."""
    data.qpos[:] = model.qpos0
    data.qpos[3:7] = (1.0, 0.0, 0.0, 0.0)
    for name, value in zip(names, q):
        data.qpos[model.joint(name).qposadr[0]] = value
    mujoco.mj_kinematics(model, data)
    pelvis = model.body(g1.PELVIS_BODY).id
    rot = data.xmat[pelvis].reshape(3, 3)
    return np.stack([rot.T @ (data.xpos[model.body(b).id] - data.xpos[pelvis]) for b in g1.FOOT_BODIES])


def test_joint_mirror_matches_the_g1_kinematics(env):
    """Mirrored joint angles put each foot where the other foot was, reflected (y -> -y)."""
    model = g1.g1_model()
    data = mujoco.MjData(model)
    names = env.meta.joint_names
    perm, sign = (t.numpy() for t in env.mirror.actions)
    rng = np.random.default_rng(0)
    limits = env.meta.joint_limits.numpy()
    reflect = np.array([1.0, -1.0, 1.0])
    for _ in range(20):
        q = rng.uniform(limits[:, 0], limits[:, 1]) * 0.5  # moderate poses; limits need not be symmetric
        feet = _feet_in_pelvis_frame(model, data, q, names)
        mirrored = _feet_in_pelvis_frame(model, data, q[perm] * sign, names)
        np.testing.assert_allclose(mirrored[0], feet[1] * reflect, atol=1e-6)
        np.testing.assert_allclose(mirrored[1], feet[0] * reflect, atol=1e-6)
    assert abs(feet[0, 1] - feet[1, 1]) > 0.05  # the feet are apart: the check is not vacuous


def test_every_joint_sign_matches_the_g1_kinematics(env):
    """All 29 joints: foot sites (offset from the ankle-roll axis) and palm sites (offset from the
    wrist-yaw axis) in the pelvis frame land on their reflected counterparts, and flipping any
    single joint's sign breaks that. Tolerance 1e-4 m: the model's shoulder mounts are themselves
    mirror images only to 1e-5 m (y = 0.10022 vs -0.10021)."""
    model = g1.g1_model()
    data = mujoco.MjData(model)
    names = list(env.meta.joint_names)
    perm, sign = (t.numpy() for t in env.mirror.actions)
    sites = ("left_foot", "right_foot", "left_palm", "right_palm")
    swap = [1, 0, 3, 2]
    reflect = np.array([1.0, -1.0, 1.0])

    def points(q):
        data.qpos[:] = model.qpos0
        for name, value in zip(names, q):
            data.qpos[model.joint(name).qposadr[0]] = value
        mujoco.mj_kinematics(model, data)
        pelvis = model.body(g1.PELVIS_BODY).id
        rot = data.xmat[pelvis].reshape(3, 3)
        return np.stack([rot.T @ (data.site_xpos[model.site(s).id] - data.xpos[pelvis]) for s in sites])

    rng = np.random.default_rng(1)
    limits = env.meta.joint_limits.numpy()
    poses = [rng.uniform(limits[:, 0], limits[:, 1]) * 0.5 for _ in range(5)]

    def error(signs):
        return max(np.abs(points(q[perm] * signs)[swap] - points(q) * reflect).max() for q in poses)

    assert error(sign) < 1e-4
    for j, name in enumerate(names):
        wrong = sign.copy()
        wrong[j] = -wrong[j]
        assert error(wrong) > 1e-3, f"{name}: its sign is not tested by these points"


def _mirror_row_into(env, src: int, dst: int) -> None:
    """Row ``dst`` becomes the mirror image of row ``src`` (reflection through the world xz
    plane): base position y, quaternion x and z, linear velocity y, body-frame angular velocity x
    and z negated; joints swapped and signed; last actions likewise; gait clock half a period on
    (the feet swap); foot timers swapped."""
    perm, sign = env.mirror.actions
    q, v = env.backend.qpos[src].clone(), env.backend.qvel[src].clone()
    q[[1, 4, 6]] *= -1.0
    v[[1, 3, 5]] *= -1.0
    q[7:], v[6:] = q[7:][perm] * sign, v[6:][perm] * sign
    env.backend.set_state(torch.tensor([dst]), q[None], v[None])
    am = env.action_manager
    am.action[dst], am.prev_action[dst] = am.action[src][perm] * sign, am.prev_action[src][perm] * sign
    gait = env.commands["gait"]
    gait.phase[dst], gait.frequency[dst] = torch.remainder(gait.phase[src] + 0.5, 1.0), gait.frequency[src]
    for sensor in env.contact_sensors.values():
        for name in ("current_air_time", "current_contact_time", "last_air_time"):
            if hasattr(sensor, name):
                getattr(sensor, name)[dst] = getattr(sensor, name)[src].flip(0)
    env.episode_length[dst] = env.episode_length[src]
    env.robot.refresh()
    gait._refresh()
    env.step_cache.clear()


def test_the_mirror_image_of_a_g1_state_observes_the_mirrored_observations_and_earns_the_same_reward():
    """The ground truth for every mirror rule: the G1 state of row 0 reflected into row 1, both
    stepped with mirrored actions; then row 1's observations are row 0's mirrored, column by
    column, and the rewards agree (the model is symmetric to 1e-5 m but for the knee inertia)."""
    cfg = G1WalkFlatConfig(observation_noise=False, domain_randomization={"enabled": False},
                           push={"enabled": False}, gait={"enabled": True})
    e = make_env(cfg, backend_cls=MujocoBackend, num_envs=2, nthread=1, seed=0)
    try:
        gen = torch.Generator().manual_seed(0)
        e.reset()
        e.commands["twist"].command[:] = torch.tensor([0.5, 0.2, 0.4])
        e.commands["twist"].time_left[:] = 100.0
        for _ in range(30):  # a state with velocities, contact forces and last actions
            e.step(0.3 * torch.randn(1, e.num_actions, generator=gen).expand(2, -1))
        cmd = e.commands["twist"].command
        cmd[1] = cmd[0] * torch.tensor([1.0, -1.0, -1.0])
        _mirror_row_into(e, 0, 1)
        mirror = e.mirror
        a = 0.3 * torch.randn(e.num_actions, generator=gen)
        obs, reward, terminated, _, _ = e.step(torch.stack([a, a[mirror.actions[0]] * mirror.actions[1]]))
        assert not terminated.any()
        # the physics is not bit-for-bit mirror symmetric at the contacts (the feet's joint
        # velocities differ by ~1 % after a step, also with the model's small asymmetries removed)
        for group, layout in e.observation_manager.layout.items():
            want = apply_mirror(obs[group][0], mirror.obs[group])
            for name, start, stop in layout:
                gap = (obs[group][1, start:stop] - want[start:stop]).abs().max()
                assert gap < 0.01 + 0.02 * want[start:stop].abs().max(), f"{group}/{name}: {gap:.3g}"
        (lo, hi), = [(start, stop) for name, start, stop in e.observation_manager.layout["actor"] if name == "base_ang_vel"]
        wrong = obs["actor"][0, lo:hi] * torch.tensor([1.0, -1.0, 1.0])  # the gyro mirrored as a polar vector
        assert (obs["actor"][1, lo:hi] - wrong).abs().max() > 0.05  # the check can fail
        torch.testing.assert_close(reward[1], reward[0], rtol=1e-3, atol=1e-5)
    finally:
        e.close()


def test_a_term_without_a_mirror_rule_is_named():
    cfg = make_env_cfg(G1WalkFlatConfig())
    cfg.observations["critic"]["foot_height"] = dataclasses.replace(cfg.observations["critic"]["foot_height"],
                                                                    mirror=None)
    env = ManagerBasedRlEnv(cfg, MujocoBackend, 1, nthread=1)
    try:
        with pytest.raises(ValueError, match="observation term 'foot_height' of group 'critic' has no mirror rule"):
            env.mirror
        cfg.observations["critic"]["foot_height"].mirror = MirrorRule.fixed(1.0)  # 1 sign for 2 columns
        env._mirror = None
        with pytest.raises(ValueError, match="'foot_height' of group 'critic': mirror rule has 1 signs for 2 columns"):
            env.mirror
    finally:
        env.close()


SMALL = ["training.num_envs=4", "algo.batch_size=64", "algo.num_updates=1", "algo.learning_starts=2",
         "algo.buffer_size_per_env=64", "algo.actor_hidden=[32,32]", "algo.critic_hidden=[32,32]", "sim.nthread=1",
         "training.log_interval=1", "training.no_play=true", "algo.symmetry=true"]  # fmt: skip


@pytest.fixture
def train_laptop(unilab_in_process):
    """``train_laptop(tmp_path, task, *extra) -> result``: `unilab train --preset laptop` with :data:`SMALL`,
    run in this process (an async run still starts its collector process)."""
    def train(tmp_path: Path, task: str, *extra: str):
        return unilab_in_process("train", "--algo", "sac", "--task", task, "--sim", "mujoco", "--preset", "laptop",
                                 *SMALL, f"training.log_dir={tmp_path / 'logs'}", *extra, cwd=tmp_path)

    return train


@pytest.mark.parametrize("runtime", ["sync", "async"])
def test_training_with_symmetry(train_laptop, tmp_path, runtime):
    result = train_laptop(tmp_path, "g1_walk_flat", f"runtime.mode={runtime}", "training.max_iterations=5",
                          "runtime.block_steps=2")
    assert result.returncode == 0, result.stderr[-3000:]
    (run,) = (tmp_path / "logs" / "sac" / "g1_walk_flat").iterdir()
    summary = json.loads((run / "run_summary.json").read_text())
    assert summary["status"] == "normal_completion" and summary["iterations"] == 5
    assert summary["runtime"] == runtime
    ckpt = torch.load(run / "model_last.pt", weights_only=False)
    assert ckpt["config"]["algo"]["symmetry"] is True and ckpt["agent"]["num_critic_updates"] > 0
    mean = ckpt["agent"]["obs_normalizers"]["critic.mean"]
    perm, sign = make_env_mirror_critic(G1WalkFlatConfig(**ckpt["config"]["env"]))
    torch.testing.assert_close(mean[perm] * sign, mean, rtol=0, atol=1e-5)  # symmetric statistics


def test_an_equivariant_actor_trains_to_a_policy_that_commutes_with_the_g1_mirror(train_laptop, tmp_path):
    """``algo.equivariant_actor=true`` (async runtime: the collectors act with a copy): the
    checkpoint's deterministic policy maps the mirror image of each observation the G1 env
    produced to the mirror image of the action; a symmetry-only actor does not."""
    from unilab.deploy.loading import load_run, make_policy

    # actor_ema=0 deploys the online actor: after these few updates a moving average would still
    # be near its zero-initialized heads (it is equivariant too: same architecture, averaged weights)
    result = train_laptop(tmp_path, "g1_walk_flat", "runtime.mode=async", "training.max_iterations=5",
                    "runtime.block_steps=2", "algo.equivariant_actor=true", "algo.actor_ema=0")
    assert result.returncode == 0, result.stderr[-3000:]
    (run,) = (tmp_path / "logs" / "sac" / "g1_walk_flat").iterdir()
    loaded = load_run(str(run))
    env = make_env(G1WalkFlatConfig(**loaded.cfg.env.model_dump()), backend_cls=MujocoBackend, num_envs=8, nthread=1)
    try:
        policy, group = make_policy(loaded, env)
        rows, obs = [], env.reset()
        for _ in range(8):
            rows.append(obs[group])
            obs, *_ = env.step(0.3 * torch.randn(8, env.num_actions, generator=torch.Generator().manual_seed(len(rows))))
        o = torch.cat(rows)
        mirror = env.mirror
        with torch.no_grad():
            action = policy(o)
            gap = (policy(apply_mirror(o, mirror.obs[group])) - apply_mirror(action, mirror.actions)).abs().max()
            # the same weights in a plain actor: off the mirror
            plain = Actor(o.shape[1], env.action_low, env.action_high, loaded.cfg.algo.actor_hidden)
            plain.load_state_dict({k: v for k, v in policy.actor.state_dict().items() if not k.startswith("mirror_")})
            x = policy.normalizer(o)
            plain_gap = (plain.deterministic_action(policy.normalizer(apply_mirror(o, mirror.obs[group])))
                         - apply_mirror(plain.deterministic_action(x), mirror.actions)).abs().max()
    finally:
        env.close()
    assert gap < 1e-5 and action.abs().max() > 1e-3
    assert plain_gap > 1e-4


def test_two_cpu_ranks_train_identically_with_symmetry(tmp_path):
    digests = tmp_path / "digests"
    digests.mkdir()
    cmd = [UNILAB, "train", "--algo", "sac", "--task", "g1_walk_flat", "--sim", "mujoco", "--preset", "laptop",
           *SMALL, "runtime.mode=sync", "training.max_iterations=4", "training.devices=cpu:2",
           f"training.log_dir={tmp_path / 'logs'}"]  # fmt: skip
    result = subprocess.run(cmd, cwd=tmp_path, env={**os.environ, "UNILAB_DDP_DIGEST_DIR": str(digests)},
                            capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (digests / "rank0.txt").read_text() == (digests / "rank1.txt").read_text()
    (run,) = (tmp_path / "logs" / "sac" / "g1_walk_flat").iterdir()
    summary = json.loads((run / "run_summary.json").read_text())
    assert summary["status"] == "normal_completion" and summary["ranks_identical"] is True


def make_env_mirror_critic(cfg: G1WalkFlatConfig):
    e = make_env(cfg, backend_cls=MujocoBackend, num_envs=1, nthread=1)
    try:
        return e.mirror.obs["critic"]
    finally:
        e.close()


def test_symmetry_on_a_task_without_a_mirror_is_a_one_line_error(train_laptop, tmp_path):
    result = train_laptop(tmp_path, "g1_motion_tracking", "training.max_iterations=2")
    assert result.returncode == 2, result.stderr[-3000:]
    message = result.stderr.strip().splitlines()[-1]
    assert "algo.symmetry=true: task 'g1_motion_tracking' does not support symmetry augmentation" in message
    assert "has no mirror rule" in message
    assert not list((tmp_path / "logs").rglob("*.pt"))
