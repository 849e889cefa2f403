"""The env's cheaper per-step paths compute what the plain formulas compute: on a seeded rollout
with falls, resets, pushes and command resamples, every reward term the env evaluated equals
its textbook formula on the same state, and the observations of reset rows equal the full
observation's rows."""

from __future__ import annotations

import math

import torch

from unilab.envs import mdp
from unilab.envs.mdp.rewards import stack_sensors
from unilab.tasks.g1_walk_flat import G1WalkFlatConfig, make_env
from unilab.tasks.g1_walk_flat.env_cfg import FOOT_POS_SENSORS
from unilab.utils.math import (
    cross_parts,
    matrix_from_quat,
    projected_gravity,
    projected_gravity_z,
    quat_conjugate,
    quat_conjugate_parts,
    quat_error_magnitude,
    quat_error_magnitude_parts,
    quat_from_yaw,
    quat_mul,
    quat_mul_parts,
    quat_parts,
    quat_rotate,
    quat_rotate_inverse,
    quat_rotate_parts,
    rot6d_from_parts,
    rot6d_from_quat,
)
from unisim.backends.mujoco import MujocoBackend

N = 16


def reference_terms(env) -> dict[str, torch.Tensor]:
    """The optimized terms of g1_walk_flat, each written plainly from its docstring formula."""
    robot, cmd = env.robot, env.commands["twist"].command
    q = robot.base_quat_w
    lin_b = quat_rotate_inverse(q, env.backend.qvel[:, 0:3])
    ang_b = env.backend.qvel[:, 3:6]
    g_ref = torch.zeros(N, 3)
    g_ref[:, 2] = -1.0
    g_base = quat_rotate_inverse(q, g_ref)
    g_torso = quat_rotate_inverse(robot.body_quat_w[:, robot.body_index("torso_link")], g_ref)
    err = robot.joint_pos - robot.default_joint_pos
    terms = env.reward_manager.terms
    pose = terms["pose"].params
    speed = torch.linalg.vector_norm(cmd[:, :2], dim=1) + cmd[:, 2].abs()
    std = torch.where(
        (speed < 0.05)[:, None], pose["std_standing"],
        torch.where((speed < 1.5)[:, None], pose["std_walking"], pose["std_running"]),
    )  # fmt: skip
    gait = env.commands["gait"]
    fp = terms["feet_phase"].params
    z = torch.stack([env.backend.sensor(s)[:, 2] for s in fp["pos_sensors"]], dim=1)
    target = mdp.expected_foot_height(gait.foot_phase, fp["swing_height"])
    fc = terms["foot_clearance"].params
    v_xy = torch.stack([env.backend.sensor(s)[:, :2] for s in fc["vel_sensors"]], dim=1)  # (N, F, 2)
    moving = (speed > fc["command_threshold"]).float()
    in_contact = env.backend.sensor("feet_ground_contact/left_ankle_roll_link")[:, 0] > 0
    contact = torch.stack((in_contact, env.backend.sensor("feet_ground_contact/right_ankle_roll_link")[:, 0] > 0), 1)
    limits = robot.meta.joint_limits
    mid, half = limits.mean(1), 0.5 * (limits[:, 1] - limits[:, 0]) * terms["joint_pos_limits"].params["soft_factor"]
    q = robot.joint_pos
    return {
        "track_linear_velocity": torch.exp(
            -(((cmd[:, :2] - lin_b[:, :2]) ** 2).sum(1) + lin_b[:, 2] ** 2) / 0.25
        ),
        "track_angular_velocity": torch.exp(-((cmd[:, 2] - ang_b[:, 2]) ** 2) / 0.25),
        "track_angular_velocity_fine": torch.exp(-((cmd[:, 2] - ang_b[:, 2]) ** 2) / 0.25**2),
        "ang_vel_xy": (ang_b[:, :2] ** 2).sum(1),
        "upright": torch.exp(-(g_torso[:, :2] ** 2).sum(1) / 0.2),
        "pose": torch.exp(-(err**2 / std**2).mean(1)),
        "orientation_l2": (g_base[:, :2] ** 2).sum(1),
        "pose_l2": (terms["pose_l2"].params["weights"] * err**2).sum(1),
        "feet_phase": torch.exp(-((z - target) ** 2).sum(1) / fp["sigma"]),
        "foot_clearance": ((z - fc["target_height"]).abs() * v_xy.norm(dim=2)).sum(1) * moving,
        "foot_slip": ((v_xy**2).sum(2) * contact).sum(1) * moving,
        "joint_pos_limits": (torch.relu((mid - half) - q) + torch.relu(q - mid - half)).sum(1),
    }


def test_reward_terms_equal_their_plain_formulas_over_a_rollout():
    cfg = G1WalkFlatConfig(
        commands={"resampling_time_s": (0.1, 0.3)}, push={"interval_s": (0.1, 0.3)},
        episode_length_s=0.6, observation_noise=False,
        penalty_curriculum={"late": []},  # a late penalty counts 0 at the start: its value would be unknown
    )  # fmt: skip
    env = make_env(cfg, backend_cls=MujocoBackend, num_envs=N, nthread=1, seed=0)
    rm, checked, resets = env.reward_manager, [0], [0]
    compute = rm.compute

    def compute_and_check():
        reward = compute()
        got, names = rm.last_values(), rm.names
        for name, value in reference_terms(env).items():
            torch.testing.assert_close(got[:, names.index(name)], value, rtol=2e-6, atol=1e-6, msg=name)
        checked[0] += 1
        return reward

    rm.compute = compute_and_check
    obs_compute = env.observation_manager.compute

    def obs_and_check(env_ids=None):
        out = obs_compute(env_ids)
        if env_ids is None:  # values shared from the rewards' evaluation equal fresh ones
            env.step_cache.clear()
            fresh = obs_compute()
            for g in out:
                assert torch.equal(out[g], fresh[g]), g
        if env_ids is not None:  # the reset rows' observation: rows of the full one (no noise)
            resets[0] += len(env_ids)
            full = obs_compute()
            for g in out:
                assert torch.equal(out[g], full[g][env_ids])
        return out

    env.observation_manager.compute = obs_and_check
    try:
        env.reset()
        gen = torch.Generator().manual_seed(1)
        lo, hi = env.action_low, env.action_high
        tm, gait = env.termination_manager, env.commands["gait"]
        time_out = torch.tensor([t.time_out for t in tm.terms.values()])
        for t in range(60):
            a = lo + (hi - lo) * torch.rand(N, env.num_actions, generator=gen) if t < 30 else torch.zeros(N, 29)
            _, _, _, truncated, _ = env.step(a)
            # terminated / truncated are the OR of the fired terms' columns
            assert torch.equal(tm.terminated, tm.last[:, ~time_out].any(1))
            assert torch.equal(truncated, tm.last[:, time_out].any(1) & ~tm.terminated)
            # the gait features are sin and cos of the feet's phase angles
            assert torch.equal(gait.command, torch.cat((gait.foot_phase.sin(), gait.foot_phase.cos()), 1))
        assert checked[0] == 60 and resets[0] >= N  # every step checked, time-outs and falls reset rows
    finally:
        env.close()


def test_stacked_foot_sensors_are_one_view_of_the_backend_kept_across_steps():
    env = make_env(G1WalkFlatConfig(observation_noise=False), backend_cls=MujocoBackend, num_envs=4,
                   nthread=1, seed=0)
    names = FOOT_POS_SENSORS
    env.reset()
    stacked = stack_sensors(env, names)  # (N, F, 3)
    assert env.sensor_stack_views[names] is stacked
    assert stacked.data_ptr() == env.backend.sensor(names[0]).data_ptr()  # a view, no copy
    assert torch.equal(stacked, torch.stack([env.backend.sensor(n) for n in names], dim=1))
    before = stacked.clone()
    env.step(torch.zeros(4, env.num_actions))
    again = stack_sensors(env, names)
    assert again is stacked and not torch.equal(again, before)  # the same view, reading this step
    assert torch.equal(again, torch.stack([env.backend.sensor(n) for n in names], dim=1))


def test_projected_gravity_is_the_rotated_down_vector():
    torch.manual_seed(0)
    q = torch.nn.functional.normalize(torch.randn(1000, 4), dim=1)
    down = torch.tensor([0.0, 0.0, -1.0]).expand(1000, 3)
    g = projected_gravity(q)
    torch.testing.assert_close(g, quat_rotate_inverse(q, down), rtol=0, atol=2.4e-7)
    torch.testing.assert_close(g.norm(dim=1), torch.ones(1000), rtol=0, atol=1e-6)
    yaw = torch.tensor([[math.cos(0.4), 0.0, 0.0, math.sin(0.4)]])  # yaw alone: gravity stays down
    torch.testing.assert_close(projected_gravity(yaw), torch.tensor([[0.0, 0.0, -1.0]]), rtol=0, atol=1e-7)


def test_partial_rotation_helpers_equal_the_full_ones_bit_for_bit():
    # The tracking terms use these partial forms; rollouts stay identical only if each equals
    # its full counterpart exactly, not approximately.
    torch.manual_seed(1)
    q = torch.nn.functional.normalize(torch.randn(512, 14, 4), dim=-1)
    assert torch.equal(projected_gravity_z(q), projected_gravity(q)[..., 2])
    assert torch.equal(rot6d_from_quat(q), matrix_from_quat(q)[..., :2].reshape(512, 14, 6))


def _draws(gen: torch.Generator, n: int, ranges) -> list[torch.Tensor]:
    """One ``lo + (hi - lo) * U(0, 1)`` draw of n per (lo, hi), in order, from ``gen``."""
    return [lo + (hi - lo) * torch.rand(n, generator=gen) for lo, hi in ranges]


def _bits(x: torch.Tensor) -> torch.Tensor:
    """The float32 bit patterns (so that -0.0 and 0.0 differ)."""
    return x.float().contiguous().view(torch.int32)


def _quat_mul_formula(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The Hamilton product written on (..., 4) tensors, as quat_mul was before its parts form."""
    aw, ax, ay, az = a.unbind(-1)
    bw, bx, by, bz = b.unbind(-1)
    return torch.stack((aw * bw - ax * bx - ay * by - az * bz, aw * bx + ax * bw + ay * bz - az * by,
                        aw * by - ax * bz + ay * bw + az * bx, aw * bz + ax * by - ay * bx + az * bw), dim=-1)


def test_quaternion_parts_helpers_equal_the_stacked_forms_bit_for_bit():
    # The tracking terms multiply contiguous (w, x, y, z) components instead of (..., 4) tensors;
    # rollouts stay identical only if every result equals the stacked form's bit for bit.
    torch.manual_seed(2)
    a = torch.nn.functional.normalize(torch.randn(512, 14, 4), dim=-1)
    b = torch.nn.functional.normalize(torch.randn(512, 14, 4), dim=-1)
    anchor = a[:, 3:4]  # (N, 1, 4), broadcast over the bodies
    strided = torch.randn(512, 80)[:, 10:66].view(512, 14, 4)  # a view, as the backend's bodies
    strided.copy_(b)
    for x, y in ((a, b), (anchor, b), (a, strided)):
        ref = _quat_mul_formula(x, y)
        parts = quat_mul_parts(quat_parts(x), quat_parts(y))
        assert all(p.is_contiguous() for p in quat_parts(y))
        assert torch.equal(_bits(torch.stack(parts, dim=-1)), _bits(ref))
        assert torch.equal(_bits(quat_mul(x, y)), _bits(ref))
        conj = torch.cat((x[..., :1], -x[..., 1:]), dim=-1)
        d = _quat_mul_formula(conj, y)
        err = 2.0 * torch.atan2(torch.linalg.vector_norm(d[..., 1:], dim=-1), d[..., 0].abs())
        assert torch.equal(_bits(quat_error_magnitude_parts(quat_parts(x), quat_parts(y))), _bits(err))
        assert torch.equal(_bits(quat_error_magnitude(x, y)), _bits(err))
        assert torch.equal(_bits(torch.stack(quat_conjugate_parts(quat_parts(x)), -1)), _bits(quat_conjugate(x)))
    assert torch.equal(_bits(rot6d_from_parts(quat_parts(b))), _bits(rot6d_from_quat(b)))



def test_rotation_parts_helpers_equal_the_stacked_forms_bit_for_bit():
    # The tracking terms rotate contiguous (x, y, z) components instead of (..., 3) tensors, in
    # the (N, B) layout with (N, 1) quaternion components and in the (B, N) layout with (N,) ones.
    torch.manual_seed(3)
    q = torch.nn.functional.normalize(torch.randn(512, 4), dim=-1)
    q[:64, 1:3] = 0.0  # yaw-only quaternions (the tracking command's): exact zeros in products
    v = torch.randn(512, 14, 3)
    v[:, 5] = 0.0  # a body at the anchor: zero vectors
    strided = torch.randn(512, 60)[:, 9:51].view(512, 14, 3)  # a view, as the backend's bodies
    strided.copy_(v)
    for vec in (v, strided):
        q_b = q[:, None].expand(-1, 14, -1)
        nb = vec.permute(2, 0, 1).contiguous().unbind(0)  # (N, B) components
        bn = vec.permute(2, 1, 0).contiguous().unbind(0)  # (B, N) components
        for inverse, ref_fn in ((False, quat_rotate), (True, quat_rotate_inverse)):
            ref = _bits(ref_fn(q_b, vec))
            got = quat_rotate_parts(q[:, None].unbind(-1), nb, inverse=inverse)
            assert torch.equal(_bits(torch.stack(got, dim=-1)), ref)
            got = quat_rotate_parts(q.T.contiguous().unbind(0), bn, inverse=inverse)
            assert torch.equal(_bits(torch.stack([c.T for c in got], dim=-1)), ref)
        ref = _bits(torch.cross(q_b[..., 1:], vec, dim=-1))
        assert torch.equal(_bits(torch.stack(cross_parts(q[:, None, 1:].unbind(-1), nb), dim=-1)), ref)
        assert torch.equal(_bits(torch.stack(cross_parts(nb, nb[::-1]), dim=-1)),
                           _bits(torch.cross(vec, vec.flip(-1), dim=-1)))

def test_reset_and_command_draws_equal_one_draw_per_quantity():
    """The reset pose, the velocity command and the gait clock drawn for reset rows equal, bit for
    bit, the plain formulas with one generator draw per quantity in the documented order."""
    env = make_env(G1WalkFlatConfig(reset_z_m=(0.0, 0.02)), backend_cls=MujocoBackend, num_envs=N,
                   nthread=1, seed=3)
    try:
        ids = torch.tensor([1, 4, 5, 11])
        k, gen = len(ids), env.generator
        state = gen.get_state()
        p = env.cfg.events["reset_base"].params
        mdp.reset_root_state_uniform(env, ids, **p)
        got = env.backend.qpos[ids].clone()
        gen.set_state(state)
        x, y, z, yaw = _draws(gen, k, [(-p["xy"], p["xy"])] * 2 + [p["z"], (-p["yaw"], p["yaw"])])
        ref = env.meta.default_qpos.repeat(k, 1)
        ref[:, 0] += x
        ref[:, 1] += y
        ref[:, 2] += z
        ref[:, 3:7] = quat_mul(quat_from_yaw(yaw), ref[:, 3:7])
        assert torch.equal(_bits(got), _bits(ref))

        twist, gait = env.commands["twist"], env.commands["gait"]
        state = gen.get_state()
        twist.reset(ids)
        gait.reset(ids)
        gen.set_state(state)
        r = twist.ranges
        vx, vy, wz, stand, t = _draws(gen, k, [r.lin_vel_x, r.lin_vel_y, r.ang_vel_z, (0.0, 1.0), r.resampling_time_s])
        standing = stand < r.standing_fraction
        cmd = torch.stack((vx, vy, wz), dim=1)
        cmd[standing] = 0.0
        assert torch.equal(_bits(twist.command[ids]), _bits(cmd))
        assert torch.equal(twist.is_standing[ids], standing) and torch.equal(twist.time_left[ids], t)
        f0, w = 1.0 / gait.settings.period_s, gait.settings.frequency_width_hz
        phase, freq = _draws(gen, k, [(0.0, 1.0), (f0 - w, f0 + w)])
        assert torch.equal(gait.phase[ids], phase) and torch.equal(gait.frequency[ids], freq)
    finally:
        env.close()


def test_robot_view_reads_the_current_state_and_divergence_after_steps_and_resets():
    """The robot view's quantities (views kept across refreshes) and its divergence flags equal the
    backend's current values after env steps with falls, time-outs and a diverging row (no pushes:
    a push changes the state between steps, and the next step's refresh is what reads it)."""
    env = make_env(G1WalkFlatConfig(episode_length_s=0.2, push={"enabled": False}),
                   backend_cls=MujocoBackend, num_envs=N, nthread=1, seed=0)
    try:
        env.reset()
        gen = torch.Generator().manual_seed(2)
        lo, hi = env.action_low, env.action_high
        robot, qpos, qvel = env.robot, env.backend.qpos, env.backend.qvel
        for t in range(24):
            if t == 12:  # a row that diverges in this step: the termination and the containment see it
                bad = qvel.clone()
                bad[3, 0] = 1e12
                env.backend.set_state(torch.arange(N), qvel=bad)
            _, _, terminated, _, extras = env.step(lo + (hi - lo) * torch.rand(N, env.num_actions, generator=gen))
            assert torch.equal(robot.joint_pos, qpos[:, 7:36]) and torch.equal(robot.joint_vel, qvel[:, 6:35])
            assert torch.equal(robot.base_quat_w, qpos[:, 3:7]) and torch.equal(robot.base_ang_vel_b, qvel[:, 3:6])
            assert torch.equal(robot.base_pos_w, qpos[:, 0:3])
            assert torch.equal(robot.projected_gravity_b, projected_gravity(qpos[:, 3:7]))
            assert torch.equal(robot.base_lin_vel_b, quat_rotate_inverse(qpos[:, 3:7], qvel[:, 0:3]))
            assert torch.equal(robot.diverged, env.backend.diverged())
            if t == 12:
                assert env.termination_manager.last[3, env.termination_manager.names.index("nan_state")]
                assert terminated[3] and extras["log"]["Env/diverged_fraction"] == 1 / N
    finally:
        env.close()


def test_expected_foot_height_equals_its_formula_bit_for_bit():
    """x = (phi + pi) / (2 pi); t = 2x on the way up (x <= 0.5), 2x - 1 after; h = swing * b(t)
    or swing * (1 - b(t)) with b(t) = t^2 (3 - 2t), over a dense grid and the boundary angles."""
    phi = torch.cat((torch.linspace(-math.pi, math.pi, 200_001), torch.tensor([-math.pi, 0.0, math.pi])))
    phi = torch.cat((phi, torch.nextafter(phi, torch.tensor(4.0)), torch.nextafter(phi, torch.tensor(-4.0))))
    x = (phi + math.pi) / (2.0 * math.pi)
    rising = x <= 0.5
    t = torch.where(rising, 2.0 * x, 2.0 * x - 1.0)
    ease = t * t * (3.0 - 2.0 * t)
    ref = 0.09 * torch.where(rising, ease, 1.0 - ease)
    assert torch.equal(_bits(mdp.expected_foot_height(phi, 0.09)), _bits(ref))


def test_termination_flags_are_the_or_of_their_terms_for_one_two_and_three_terms():
    """terminated = OR of the non-time-out terms, truncated = OR of the time-out terms and not
    terminated, as new tensors (a shared term output is never handed out to be modified)."""
    from types import SimpleNamespace

    from unilab.envs.managers import TerminationManager, TerminationTerm

    gen = torch.Generator().manual_seed(5)
    flags = [torch.rand(64, generator=gen) < 0.3 for _ in range(5)]
    env = SimpleNamespace(num_envs=64, device=torch.device("cpu"))
    for kinds in ((False,), (True,), (False, True), (False, False, True), (False, False, False, True, True)):
        terms = {f"t{i}": TerminationTerm(lambda env, i=i: flags[i], time_out=k) for i, k in enumerate(kinds)}
        tm = TerminationManager(env, terms)
        terminated, truncated = tm.compute()
        cols = torch.stack(flags[: len(kinds)], dim=1)
        k = torch.tensor(kinds)
        assert torch.equal(tm.last, cols)
        assert torch.equal(terminated, cols[:, ~k].any(1))
        assert torch.equal(truncated, cols[:, k].any(1) & ~terminated)
        assert all(x is not f for x in (terminated, truncated) for f in flags)


def test_helpers_with_tensor_constants_equal_the_python_number_formulas_and_keep_the_dtype():
    # The helpers multiply by 0-dim float32 tensors instead of Python numbers (a cast op fewer per
    # call); results must be those of the Python numbers, bit for bit, in the input's dtype.
    from unilab.utils.math import yaw_quat

    torch.manual_seed(5)
    for dtype in (torch.float32, torch.float64, torch.float16):
        q = torch.nn.functional.normalize(torch.randn(256, 4, dtype=torch.float64), dim=-1).to(dtype)
        v = torch.randn(256, 3, dtype=dtype)
        w, x, y, z = q.unbind(-1)
        xyz = q[:, 1:]
        t = 2.0 * torch.cross(xyz, v, dim=-1)
        plain = {
            "rotate": v + q[:, :1] * t + torch.cross(xyz, t, dim=-1),
            "rotate_inverse": v - q[:, :1] * t + torch.cross(xyz, t, dim=-1),
            "gravity_z": torch.addcmul(y * (2.0 * y), x, 2.0 * x) - 1.0,
            "yaw": torch.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z)),
            "rot6d": torch.stack((1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * y + w * z),
                                  1 - 2 * (x * x + z * z), 2 * (x * z - w * y), 2 * (y * z + w * x)), -1),
        }  # fmt: skip
        half = 0.5 * plain["yaw"]
        got = {
            "rotate": quat_rotate(q, v),
            "rotate_inverse": quat_rotate_inverse(q, v),
            "gravity_z": projected_gravity_z(q),
            "yaw": yaw_quat(q)[:, 3],
            "rot6d": rot6d_from_parts(q.unbind(-1)),
        }
        plain["yaw"] = torch.sin(half)
        for key, value in got.items():
            assert value.dtype == dtype, (key, dtype)
            assert torch.equal(value, plain[key]), (key, dtype)
        if dtype != torch.float16:  # the components' cross product rounds as torch.cross in float32/64 only
            parts = quat_rotate_parts(q.unbind(-1), v.unbind(-1), inverse=True)
            assert torch.equal(torch.stack(parts, -1), plain["rotate_inverse"])


def test_euler_quaternion_equals_its_textbook_formula_bit_for_bit():
    # quat_from_euler_xyz computes each product of the yaw and roll factors once and halves by a
    # 0-dim tensor; its results must be those of the term-by-term formula, in the input's dtype,
    # below and above the length where torch's elementwise kernels switch to vector code.
    from unilab.utils.math import quat_from_euler_xyz, quat_from_euler_xyz_parts

    torch.manual_seed(6)
    for dtype in (torch.float32, torch.float64, torch.float16):
        for n in (3, 40):
            r, p, y = (0.4 * torch.randn(3, n, dtype=torch.float64)).to(dtype).unbind(0)  # rad
            cr, sr = torch.cos(0.5 * r), torch.sin(0.5 * r)
            cp, sp = torch.cos(0.5 * p), torch.sin(0.5 * p)
            cy, sy = torch.cos(0.5 * y), torch.sin(0.5 * y)
            ref = torch.stack((cy * cr * cp + sy * sr * sp, cy * sr * cp - sy * cr * sp,
                               cy * cr * sp + sy * sr * cp, sy * cr * cp - cy * sr * sp), dim=-1)
            got = quat_from_euler_xyz(r, p, y)
            assert got.dtype == dtype and torch.equal(got, ref), (dtype, n)
            assert torch.equal(torch.stack(quat_from_euler_xyz_parts(r, p, y), -1), ref)


def test_stacked_quaternion_helpers_equal_the_components_forms_bit_for_bit():
    # The tracking terms multiply quaternions stacked as (4, ...) tensors, all 16 component
    # products in one op; every result must equal the components' form bit for bit (signed zeros
    # included), with either operand conjugated, broadcast (N, 1) against (N, B), strided inputs,
    # in float16/32/64, below and above the length where elementwise kernels vectorize.
    from unilab.utils.math import quat_error_magnitude_stacked, quat_mul_stacked, rot6d_from_stacked

    torch.manual_seed(7)
    for dtype in (torch.float32, torch.float64, torch.float16):
        for shape in ((5,), (40,), (64, 14)):
            a, b = (torch.nn.functional.normalize(torch.randn(*shape, 4, dtype=torch.float64), dim=-1).to(dtype)
                    for _ in range(2))  # fmt: skip
            a[..., :2, 1] = 0.0
            b[..., :1, 2] = -0.0
            sa, sb = a.movedim(-1, 0), b.movedim(-1, 0)  # strided (4, ...) views
            pa, pb = a.unbind(-1), b.unbind(-1)
            cases = {
                "mul": (quat_mul_stacked(sa, sb), quat_mul_parts(pa, pb)),
                "conj_a": (quat_mul_stacked(sa.contiguous(), sb, conjugate_a=True),
                           quat_mul_parts(quat_conjugate_parts(pa), pb)),
                "conj_b": (quat_mul_stacked(sa, sb, conjugate_b=True), quat_mul_parts(pa, quat_conjugate_parts(pb))),
            }  # fmt: skip
            if len(shape) == 2:  # the anchor's (N, 1) against the bodies
                pn = a[:, 3:4].unbind(-1)
                cases["broadcast"] = (quat_mul_stacked(sa[:, :, 3:4], sb, conjugate_a=True),
                                      quat_mul_parts(quat_conjugate_parts(pn), pb))  # fmt: skip
            for key, (got, ref) in cases.items():
                assert got.dtype == dtype, key
                assert torch.equal(_bits(got), _bits(torch.stack(ref))), (key, dtype, shape)
            assert torch.equal(_bits(rot6d_from_stacked(sa)), _bits(rot6d_from_parts(pa))), (dtype, shape)
            assert torch.equal(_bits(quat_error_magnitude_stacked(sa, sb)), _bits(quat_error_magnitude_parts(pa, pb)))
    try:
        quat_mul_stacked(sa, sb, conjugate_a=True, conjugate_b=True)
    except ValueError:
        pass
    else:
        raise AssertionError("conjugating both operands must raise")
