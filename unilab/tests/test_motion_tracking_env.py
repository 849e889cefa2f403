"""g1_motion_tracking on the MuJoCo backend: observation sizes, rewards at their maximum on the
reference, terminations, reference-state initialization and adaptive sampling."""

from __future__ import annotations

import pytest
import torch

from unilab.tasks.g1_motion_tracking import G1MotionTrackingConfig, make_env
from unilab.tasks.g1_motion_tracking.env_cfg import TRACKED_BODIES
from unilab.tasks.g1_motion_tracking.mdp import AdaptiveSampler
from unilab_rl.vecenv import VecEnv
from unisim.backends.mujoco import MujocoBackend

EXACT = {
    "observation_noise": False,
    "reset_noise": {"enabled": False},
    "push": {"enabled": False},
    "domain_randomization": {"enabled": False},
}
TRACKING_TERMS = ("motion_global_anchor_pos", "motion_global_anchor_ori", "motion_body_pos",
                  "motion_body_ori", "motion_body_lin_vel", "motion_body_ang_vel")  # fmt: skip


def build(num_envs: int = 3, **overrides):
    cfg = G1MotionTrackingConfig(**overrides)
    return make_env(cfg, backend_cls=MujocoBackend, num_envs=num_envs, nthread=1, seed=0)


@pytest.fixture(scope="module")
def env():
    e = build(**EXACT)
    yield e
    e.close()


def test_env_sizes_match_beyondmimic(env):
    assert isinstance(env, VecEnv)
    assert env.backend.spec.reset_kinematics_only  # its resets skip the constraint solver
    assert env.obs_dims == {"actor": 160, "critic": 286}
    assert env.num_actions == 29
    assert env.max_episode_length == 500  # 10 s at 50 Hz
    assert env.backend.body_names == list(TRACKED_BODIES) and len(TRACKED_BODIES) == 14


def test_without_state_estimation_actor_has_154():
    e = build(num_envs=1, state_estimation=False, **EXACT)
    assert e.obs_dims == {"actor": 154, "critic": 286}
    e.close()


def test_rewards_are_at_their_maximum_on_the_reference(env):
    env.reset()
    cmd = env.commands["motion"]
    ids = torch.arange(env.num_envs)
    cmd.time_steps[:] = torch.tensor([0, 120, 250])  # rest, mid-squat, late
    cmd.write_reference_state(ids)
    cmd._refresh()
    for name in TRACKING_TERMS:
        term = env.reward_manager.terms[name]
        value = term.func(env, **term.params)
        assert torch.all(value > 0.999), (name, value)
    for name in ("action_rate_l2", "joint_limit", "self_collisions"):
        term = env.reward_manager.terms[name]
        assert torch.all(term.func(env, **term.params) == 0.0), name
    terminated, truncated = env.termination_manager.compute()
    assert not terminated.any() and not truncated.any()


def test_tracking_failure_terminates_and_logs(env):
    env.reset()
    cmd = env.commands["motion"]
    qpos = env.backend.qpos.clone()
    qpos[:, 2] -= 0.5  # drop the whole robot 0.5 m below the reference
    env.backend.set_state(torch.arange(env.num_envs), qpos=qpos)
    env.robot.refresh()
    cmd._refresh()
    env.termination_manager.compute()
    fired = dict(zip(env.termination_manager.names, env.termination_manager.last.all(dim=0).tolist()))
    assert fired["anchor_pos"] and fired["ee_body_pos"] and not fired["time_out"]
    obs, reward, terminated, truncated, extras = env.step(torch.zeros(env.num_envs, 29))
    log = extras["log"]
    assert terminated.all()
    assert log["Episode_Termination/anchor_pos"] == 1.0
    for name in TRACKING_TERMS + ("action_rate_l2", "joint_limit"):
        assert f"Episode_Reward/{name}" in log
    assert 0.0 < log["Metrics/motion/sampling_entropy"] <= 1.0


def test_clip_end_truncates():
    e = build(num_envs=2, **EXACT)
    e.reset()
    cmd = e.commands["motion"]
    cmd.time_steps[:] = cmd.num_frames - 3
    cmd.write_reference_state(torch.arange(2))
    cmd._refresh()
    for _ in range(2):
        _, _, terminated, truncated, extras = e.step(torch.zeros(2, 29))
    assert truncated.all() and not terminated.any()
    assert extras["log"]["Episode_Termination/motion_end"] == 1.0
    e.close()


def test_reset_noise_perturbs_the_reference_within_soft_limits():
    e = build(num_envs=8, push={"enabled": False}, domain_randomization={"enabled": False})
    e.reset()
    cmd = e.commands["motion"]
    ref = cmd.joint_pos_ref[cmd.time_steps]
    diff = (e.robot.joint_pos - ref).abs()
    assert diff.max() > 0.01 and diff.max() <= 0.1 + 1e-5
    from unilab.tasks.g1_motion_tracking.env_cfg import soft_joint_limits

    lim = soft_joint_limits(e.meta.joint_names)
    assert torch.all(e.robot.joint_pos >= lim[:, 0] - 1e-5) and torch.all(e.robot.joint_pos <= lim[:, 1] + 1e-5)
    e.close()


def test_adaptive_sampling_shifts_probability_to_failing_bins():
    sampler = AdaptiveSampler(num_frames=301, num_bins=7, alpha=0.001, uniform_ratio=0.1)
    torch.testing.assert_close(sampler.probabilities, torch.full((7,), 1 / 7))
    for _ in range(200):  # episodes keep failing around frame 200 (bin 4)
        sampler.record_failures(torch.tensor([200, 210, 190]))
        sampler.step()
    p = sampler.probabilities
    assert int(p.argmax()) == sampler.bin_of(torch.tensor([200])).item() == 4
    assert p[4] > 0.5 and torch.all(p > 0)  # every bin keeps the uniform share
    gen = torch.Generator().manual_seed(0)
    clips, starts = sampler.sample(4000, gen)
    assert torch.all(clips == 0)
    share = (sampler.bin_of(starts) == 4).float().mean()
    assert abs(share - p[4]) < 0.03
    # the kernel also raises the bins before the failing one (start earlier, reach the hard part),
    # with weights lambda^k by distance (BeyondMimic: the failing bin keeps the most)
    smooth = AdaptiveSampler(num_frames=301, num_bins=7, kernel_size=3, lam=0.8)
    smooth.record_failures(torch.tensor([200] * 50))
    smooth.step()
    q = smooth.probabilities
    assert q[4] > q[3] > q[2] > q[1] and q[3] > q[5] and q[2] > q[6]
    torch.testing.assert_close((q[3] - q[1]) / (q[4] - q[1]), torch.tensor(0.8))


def test_adaptive_sampling_over_clips_keeps_failures_in_their_clip():
    # clip 0: 301 frames in 7 bins, clip 1: 101 frames in 3 bins, twice the weight
    sampler = AdaptiveSampler([301, 101], [7, 3], weights=[1.0, 2.0], kernel_size=3, lam=0.8)
    q = sampler.probabilities
    torch.testing.assert_close(q[:7], torch.full((7,), 1 / 13))  # uniform share x weight
    torch.testing.assert_close(q[7:], torch.full((3,), 2 / 13))
    torch.testing.assert_close(sampler.clip_probabilities(), torch.tensor([7 / 13, 6 / 13]))
    for _ in range(300):  # failures at the start of clip 1 only
        sampler.record_failures(torch.tensor([5, 5]), torch.tensor([1, 1]))
        sampler.step()
    p = sampler.probabilities
    assert int(p.argmax()) == 7  # clip 1, bin 0
    torch.testing.assert_close(p[:7], torch.full((7,), float(p[0])))  # no leak into clip 0's last bins
    gen = torch.Generator().manual_seed(0)
    clips, frames = sampler.sample(4000, gen)
    assert torch.all(frames < torch.tensor([301, 101])[clips])
    share = ((clips == 1) & (frames < 34)).float().mean()
    assert abs(share - p[7]) < 0.03


def test_failures_in_the_env_feed_the_sampler(env):
    env.reset()
    cmd = env.commands["motion"]
    before = cmd.sampler.failed_count.clone()
    qpos = env.backend.qpos.clone()
    qpos[:, 2] -= 0.5
    env.backend.set_state(torch.arange(env.num_envs), qpos=qpos)
    env.robot.refresh()
    env.step(torch.zeros(env.num_envs, 29))  # all terminate: failures recorded at reset
    env.step(torch.zeros(env.num_envs, 29))  # folded into the EMA
    assert cmd.sampler.failed_count.sum() > before.sum()


def test_reset_rows_go_through_the_backend_once_into_the_reference_state():
    """The motion command's reference-state initialization writes the reset rows' whole state, so
    the env does not first reset them to the keyframe: one ``backend.reset`` per reset, covering
    exactly the reset rows, leaving them in the reference state (reset noise off)."""
    e = build(num_envs=4, **EXACT)
    calls = []
    inner = e.backend.reset

    def counted(env_ids, *args, **kwargs):
        calls.append(env_ids.clone())
        return inner(env_ids, *args, **kwargs)

    e.backend.reset = counted
    e.reset()
    assert len(calls) == 1 and sorted(calls[0].tolist()) == [0, 1, 2, 3]
    cmd = e.commands["motion"]
    torch.testing.assert_close(e.robot.joint_pos, cmd.joint_pos_ref[cmd.time_steps], rtol=0, atol=1e-5)
    calls.clear()
    e._reset_rows(torch.tensor([2]))
    assert [c.tolist() for c in calls] == [[2]]
    e.close()


def test_reset_rows_fresh_observations_compute_those_rows_alone():
    """compute(env_ids) equals compute()'s rows bit for bit, and the per-body frame terms
    (row_subset) run on the k requested rows only."""
    e = build(num_envs=6, **EXACT)
    e.reset()
    for _ in range(3):
        e.step(0.1 * torch.ones(6, e.num_actions))
    om = e.observation_manager
    seen = []
    for terms in om._terms.values():
        for term, _ in terms:
            if term.func.__name__ == "robot_body_ori_b" and not hasattr(term.func, "__wrapped__"):
                inner = term.func

                def spy(env, env_ids=None, _inner=inner, **params):
                    out = _inner(env, env_ids=env_ids, **params)
                    seen.append(out.shape[0])
                    return out

                spy.row_subset, spy.__wrapped__ = getattr(inner, "row_subset", False), inner
                term.func = spy
    ids = torch.tensor([4, 1])
    full, part = om.compute(), om.compute(ids)
    for group in full:
        assert torch.equal(part[group], full[group][ids]), group
    assert seen == [6, 2]
    e.close()


def test_body_orientation_terms_equal_their_plain_formulas_and_follow_the_state(env):
    """The body-orientation reward and observation (computed on quaternion components, the robot's
    copied once per refresh) equal the (..., 4) formulas, and the copy is renewed when the state
    changes."""
    from unilab.tasks.g1_motion_tracking.mdp import robot_body_ori_b
    from unilab.utils.math import quat_conjugate, quat_error_magnitude, quat_mul, quat_parts, rot6d_from_quat

    env.reset()
    cmd, robot = env.commands["motion"], env.robot
    gen = torch.Generator().manual_seed(3)
    for _ in range(3):
        cached = robot.body_quat_parts  # copied now, must not outlive the state it copied
        env.step(0.3 * torch.rand(env.num_envs, env.num_actions, generator=gen))
        parts = robot.body_quat_parts
        assert all(torch.equal(p, q) for p, q in zip(parts, quat_parts(robot.body_quat_w)))
        assert not all(torch.equal(p, q) for p, q in zip(parts, cached))
        anchor = robot.body_quat_w[:, cmd.anchor_index]
        body = quat_mul(quat_conjugate(anchor)[:, None].expand(-1, 14, -1), robot.body_quat_w)
        assert torch.equal(robot_body_ori_b(env), rot6d_from_quat(body).reshape(env.num_envs, -1))
        assert torch.equal(robot_body_ori_b(env, env_ids=torch.tensor([2, 0])), robot_body_ori_b(env)[[2, 0]])
        delta = cmd.body_quat_relative_w
        assert torch.equal(torch.stack(cmd.body_quat_relative_parts, dim=-1), delta)
        err = quat_error_magnitude(delta, robot.body_quat_w) ** 2
        term = env.reward_manager.terms["motion_body_ori"]
        std = term.params["std"]
        assert torch.equal(term.func(env, **term.params), torch.exp(-err.mean(dim=-1) / std**2))
    cached = robot.body_quat_parts
    cmd.write_reference_state(torch.arange(env.num_envs))  # a state written outside the step
    assert not all(torch.equal(p, q) for p, q in zip(robot.body_quat_parts, cached))
    assert all(torch.equal(p, q) for p, q in zip(robot.body_quat_parts, quat_parts(robot.body_quat_w)))


def test_reference_arrays_are_contiguous(env):
    # a row gather from a strided (F, B, .) array costs several times one from a contiguous one
    cmd = env.commands["motion"]
    for name in ("body_pos_ref", "body_quat_ref", "body_lin_vel_ref", "body_ang_vel_ref", "joint_pos_ref"):
        assert getattr(cmd, name).is_contiguous(), name


def test_changed_terms_equal_their_plain_formulas(env):
    """The anchor orientation observation, the body velocity rewards, the anchor position reward
    and the end-effector height termination equal their (..., 4) / ``torch.sum`` / list-index
    formulas bit for bit, on every row and (the observation) on a subset of rows."""
    from unilab.tasks.g1_motion_tracking import mdp as tmdp
    from unilab.utils.math import quat_conjugate, quat_mul, rot6d_from_quat

    env.reset()
    cmd, robot = env.commands["motion"], env.robot
    gen = torch.Generator().manual_seed(4)
    for _ in range(3):
        env.step(0.3 * torch.rand(env.num_envs, env.num_actions, generator=gen))
        anchor = robot.body_quat_w[:, cmd.anchor_index]
        ori = rot6d_from_quat(quat_mul(quat_conjugate(anchor), cmd.anchor_quat_w))
        assert torch.equal(tmdp.motion_anchor_ori_b(env), ori)
        assert torch.equal(tmdp.motion_anchor_ori_b(env, env_ids=torch.tensor([2, 0])), ori[[2, 0]])
        terms = env.reward_manager.terms
        for name, ref, state in (("motion_body_lin_vel", cmd.body_lin_vel_w, robot.body_lin_vel_w),
                                 ("motion_body_ang_vel", cmd.body_ang_vel_w, robot.body_ang_vel_w)):
            std = terms[name].params["std"]
            plain = torch.exp(-torch.sum((ref - state) ** 2, dim=-1).mean(dim=-1) / std**2)
            assert torch.equal(terms[name].func(env, **terms[name].params), plain), name
        std = terms["motion_global_anchor_pos"].params["std"]
        error = torch.sum((cmd.anchor_pos_w - robot.body_pos_w[:, cmd.anchor_index]) ** 2, dim=-1)
        got = terms["motion_global_anchor_pos"].func(env, **terms["motion_global_anchor_pos"].params)
        assert torch.equal(got, torch.exp(-error / std**2))
        term = env.termination_manager.terms["ee_body_pos"]
        idx, threshold = list(term.params["body_indices"]), term.params["threshold"]
        error = (cmd.body_pos_relative_w[:, idx, 2] - robot.body_pos_w[:, idx, 2]).abs()
        plain = (error > threshold).any(dim=-1)
        assert torch.equal(term.func(env, **term.params), plain)


def test_final_obs_holds_the_observation_before_the_reset_and_obs_the_one_after():
    """Rows that end in a step: ``final_obs`` is the observation of the state they ended in and
    ``obs`` that of their new episode; the other rows' two are equal. Neither changes later."""
    e = build(num_envs=4, **EXACT)
    e.reset()
    compute_terms = e.termination_manager.compute
    before = {}

    def end_row_1():  # row 1 times out now
        terminated, truncated = compute_terms()
        truncated = truncated.clone()
        truncated[1] = ~terminated[1]
        return terminated, truncated

    reset_rows = e._reset_rows

    def spy(env_ids):  # the observation just before the reset (noise is off: deterministic)
        before.update(e.observation_manager.compute())
        return reset_rows(env_ids)

    e.step(torch.zeros(4, e.num_actions))
    e.termination_manager.compute, e._reset_rows = end_row_1, spy
    obs, _, terminated, truncated, extras = e.step(torch.zeros(4, e.num_actions))
    e.termination_manager.compute, e._reset_rows = compute_terms, reset_rows
    assert (terminated | truncated).tolist() == [False, True, False, False]
    after = e.observation_manager.compute()
    kept = {g: (obs[g].clone(), extras["final_obs"][g].clone()) for g in obs}
    for g in obs:
        assert torch.equal(extras["final_obs"][g], before[g])
        assert torch.equal(obs[g][1], after[g][1])
        assert not torch.equal(obs[g][1], extras["final_obs"][g][1])
        assert torch.equal(obs[g][[0, 2, 3]], extras["final_obs"][g][[0, 2, 3]])
    for _ in range(2):
        e.step(0.3 * torch.ones(4, e.num_actions))
    for g in obs:
        assert torch.equal(obs[g], kept[g][0]) and torch.equal(extras["final_obs"][g], kept[g][1])
    e.close()


def test_end_effector_termination_takes_body_indices_as_a_list_or_a_tuple() -> None:
    # A config may give the rows as a list (YAML) or a tuple (the task's own config).
    from types import SimpleNamespace

    from unilab.tasks.g1_motion_tracking.mdp import terminations

    gen = torch.Generator().manual_seed(0)
    n, b = 6, 5
    cmd = SimpleNamespace(body_pos_relative_parts=tuple(torch.rand(n, b, generator=gen) for _ in range(3)))
    env = SimpleNamespace(commands={"motion": cmd}, robot=SimpleNamespace(body_pos_w=torch.rand(n, b, 3, generator=gen)),
                          device=torch.device("cpu"))
    expected = ((cmd.body_pos_relative_parts[2][:, [1, 3]] - env.robot.body_pos_w[:, [1, 3], 2]).abs() > 0.6).any(-1)
    assert expected.any() and not expected.all()  # the threshold splits the rows
    for rows in ([1, 3], (1, 3)):
        assert torch.equal(terminations.bad_motion_body_pos_z_only(env, 0.6, rows), expected)


def _bits(x: torch.Tensor) -> torch.Tensor:
    """The float32 bit patterns (so that -0.0 and 0.0 differ)."""
    return x.float().contiguous().view(torch.int32)


def test_reset_of_some_rows_writes_the_reference_plus_one_noise_draw_and_leaves_the_others():
    """The RSI state of reset rows equals, bit for bit, the plain formulas (the root and joint
    references gathered one by one, the noise of one draw, the root rotation as a quaternion
    product, qpos and qvel written into the keyframe), and the other rows keep their state."""
    from unilab.utils.math import quat_from_euler_xyz, quat_mul, quat_rotate_inverse

    e = build(num_envs=8, push={"enabled": False})
    try:
        e.reset()
        for _ in range(3):
            e.step(torch.zeros(8, 29))
        cmd, gen = e.commands["motion"], e.generator
        ids = torch.tensor([6, 1, 4])
        rest = torch.tensor([0, 2, 3, 5, 7])
        before = e.backend.packed[rest].clone()
        state = gen.get_state()
        cmd.reset(ids)
        got_qpos, got_qvel = e.backend.qpos[ids].clone(), e.backend.qvel[ids].clone()
        assert torch.equal(e.backend.packed[rest], before)

        # the same starts drawn again, then the state from the plain formulas
        gen.set_state(state)
        clips, start = cmd.sampler.sample(len(ids), gen)
        assert torch.equal(cmd.clip_index[ids], clips) and torch.equal(cmd.time_steps[ids], start)
        t = cmd.clip_offset[clips] + start
        n, j, nz = len(ids), 29, cmd.noise
        u = 2.0 * torch.rand(n * (12 + j), generator=gen) - 1.0
        scale = torch.tensor([nz.pos_xy, nz.pos_xy, nz.pos_z, nz.roll_pitch, nz.roll_pitch, nz.yaw, nz.lin_vel_xy,
                              nz.lin_vel_xy, nz.lin_vel_z, nz.ang_vel_roll_pitch, nz.ang_vel_roll_pitch, nz.ang_vel_yaw])
        root_noise = (u[: 12 * n].view(12, n) * scale[:, None]).T
        joint_noise = u[12 * n :].view(n, j) * nz.joint_pos
        pos = cmd.body_pos_ref[t, 0] + root_noise[:, 0:3]
        quat = quat_mul(quat_from_euler_xyz(root_noise[:, 3], root_noise[:, 4], root_noise[:, 5]),
                        cmd.body_quat_ref[t, 0])
        lin = cmd.body_lin_vel_ref[t, 0] + root_noise[:, 6:9]
        ang = cmd.body_ang_vel_ref[t, 0] + root_noise[:, 9:12]
        lim = cmd.soft_joint_limits
        joint_pos = torch.clamp(cmd.joint_pos_ref[t] + joint_noise, lim[:, 0], lim[:, 1])
        qpos = e.meta.default_qpos.repeat(n, 1)
        qvel = torch.zeros(n, e.backend.nv)
        qpos[:, 0:3], qpos[:, 3:7], qpos[:, e.meta.qpos_adr] = pos, quat, joint_pos
        qvel[:, 0:3], qvel[:, 3:6] = lin, quat_rotate_inverse(quat, ang)
        qvel[:, e.meta.qvel_adr] = cmd.joint_vel_ref[t]
        # the backend stores float64 and hands out float32: the float32 values written come back
        assert torch.equal(_bits(got_qpos), _bits(qpos)) and torch.equal(_bits(got_qvel), _bits(qvel))
    finally:
        e.close()


def test_adaptive_draws_equal_the_plain_formula():
    """Start frames drawn from per-bin tables equal the formula over the clips' arrays, bit for
    bit, over several clips with their own bin counts."""
    sampler = AdaptiveSampler([301, 101, 57], [7, 3, 2], weights=[1.0, 2.0, 0.5], kernel_size=3, lam=0.8)
    for _ in range(20):
        sampler.record_failures(torch.tensor([5, 40, 90]), torch.tensor([1, 0, 0]))
        sampler.step()
    gen = torch.Generator().manual_seed(4)
    state = gen.get_state()
    clips, frames = sampler.sample(2000, gen)
    gen.set_state(state)
    bins = torch.multinomial(sampler.probabilities, 2000, replacement=True, generator=gen)
    ref_clips = sampler.clip_of_bin[bins]
    u = torch.rand(2000, generator=gen)
    local = (bins - sampler.bin_offset[ref_clips]).float()
    ref = ((local + u) / sampler.bins[ref_clips].float() * (sampler.frames[ref_clips] - 1).float()).long()
    ref = torch.minimum(ref.clamp(min=0), sampler.frames[ref_clips] - 1)
    assert torch.equal(clips, ref_clips) and torch.equal(frames, ref)
