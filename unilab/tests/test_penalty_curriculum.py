"""The penalty curriculum (holosoma's scheme) and the alive bonus of g1_walk_flat."""

from __future__ import annotations

import pytest
import torch

from unilab.envs.managers import PenaltyCurriculum, RewardManager
from unilab.tasks.g1_walk_flat import G1WalkFlatConfig, make_env
from unisim.backends.mujoco import MujocoBackend


def test_scale_moves_up_and_down_with_episode_length_and_stays_in_bounds():
    c = PenaltyCurriculum(initial=0.1, min_scale=0.1, max_scale=1.0, up_length_s=15.0,
                          down_length_s=3.0, step=0.25)
    assert c.next_scale(0.5, 16.0) == 0.75  # long episodes: up
    assert c.next_scale(0.5, 2.0) == 0.25  # short episodes: down
    assert c.next_scale(0.5, 10.0) == 0.5  # in between: unchanged
    assert c.next_scale(0.9, 20.0) == 1.0  # clamped above
    assert c.next_scale(0.2, 0.0) == 0.1  # clamped below


def _env(**overrides):
    cfg = G1WalkFlatConfig(**overrides)
    return make_env(cfg, backend_cls=MujocoBackend, num_envs=4, nthread=1, seed=0)


def test_curriculum_scales_only_the_penalties_and_rises_after_long_episodes():
    plain = _env(penalty_curriculum={"enabled": False})
    env = _env(penalty_curriculum={"enabled": True, "initial": 0.1, "step": 0.05, "late": []})
    try:
        rm, base = env.reward_manager, plain.reward_manager
        assert rm.names == base.names
        negative = base._scale < 0
        assert negative.any() and (~negative).any()
        start = rm.penalty_scale
        torch.testing.assert_close(rm._scale[negative], base._scale[negative] * start)
        torch.testing.assert_close(rm._scale[~negative], base._scale[~negative])

        # Rows ending after 16 s (longer than up_length_s = 15 s) raise the scale by one step.
        env.episode_length[:] = 800
        log = rm.reset(torch.arange(4))
        assert log["Curriculum/penalty_scale"] == pytest.approx(start + 0.05)
        torch.testing.assert_close(rm._scale[negative], base._scale[negative] * (start + 0.05))
    finally:
        env.close()
        plain.close()


def test_last_values_divide_out_the_penalty_scale_and_mark_a_zero_scale_unknown():
    half = _env(penalty_curriculum={"enabled": True, "initial": 0.5, "late": []})
    zero = _env(penalty_curriculum={"enabled": True, "initial": 0.0, "min_scale": 0.0, "late": []})
    late = _env(penalty_curriculum={"enabled": True, "initial": 0.5})  # ang_vel_xy late: factor 0 at the start
    try:
        for env in (half, zero, late):
            env.reset()
            env.reward_manager.compute()
        negative = half.reward_manager._scale < 0
        # At scale 0.5 the penalties' own values come back whole: the same as calling the terms.
        values = half.reward_manager.last_values()
        for i, t in enumerate(half.reward_manager.terms.values()):
            torch.testing.assert_close(values[:, i], t.func(half, **t.params), rtol=1e-5, atol=1e-6)
        # At scale 0 the step kept nothing of the penalties: NaN there, the rest as computed.
        values = zero.reward_manager.last_values()
        assert values[:, negative].isnan().all() and not values[:, ~negative].isnan().any()
        # A late penalty at factor 0 is unknown the same way; the other penalties come back whole.
        values, col = late.reward_manager.last_values(), late.reward_manager.names.index("ang_vel_xy")
        assert values[:, col].isnan().all()
        torch.testing.assert_close(torch.cat([values[:, :col], values[:, col + 1:]], 1),
                                   torch.cat([half.reward_manager.last_values()[:, :col],
                                              half.reward_manager.last_values()[:, col + 1:]], 1))
    finally:
        half.close()
        zero.close()
        late.close()


def test_alive_bonus_pays_surviving_rows_and_switches_off_at_weight_zero():
    assert G1WalkFlatConfig().rewards.alive == 1.0  # on by default (holosoma)
    off = _env(rewards={"alive": 0.0})
    assert "alive" not in off.reward_manager.names  # weight 0: not evaluated
    off.close()
    env = _env(rewards={"alive": 1.0})
    try:
        env.reset()
        a = torch.zeros(4, env.num_actions)
        env.step(a)
        col = env.reward_manager.names.index("alive")
        sums = env.reward_manager.episode_sums[:, col]
        alive = ~env.termination_manager.terminated
        # weight 1 x step dt (0.02 s) for every row that did not terminate this step
        torch.testing.assert_close(sums[alive], torch.full_like(sums[alive], env.step_dt))
    finally:
        env.close()


def test_exempt_penalty_keeps_full_weight_while_the_others_are_scaled():
    plain = _env(penalty_curriculum={"enabled": False})
    env = _env(penalty_curriculum={"enabled": True, "initial": 0.1, "exempt": ["ang_vel_xy"], "late": []})
    try:
        rm, base = env.reward_manager, plain.reward_manager
        col = rm.names.index("ang_vel_xy")
        assert base._scale[col] < 0
        torch.testing.assert_close(rm._scale[col], base._scale[col])  # full weight at scale 0.1
        others = (base._scale < 0).clone()
        others[col] = False
        torch.testing.assert_close(rm._scale[others], base._scale[others] * 0.1)
        env.episode_length[:] = 800  # long episodes raise the scale; the exempt term stays put
        rm.reset(torch.arange(4))
        torch.testing.assert_close(rm._scale[col], base._scale[col])
    finally:
        env.close()
        plain.close()


@pytest.mark.parametrize("name, why", [("alive", "weight 1"), ("no_such", "no such reward")])
def test_exempt_refuses_what_is_not_a_penalty(name, why):
    with pytest.raises(ValueError, match=f"'{name}' \\({why}\\) is not a penalty"):
        G1WalkFlatConfig(penalty_curriculum={"exempt": [name], "late": []})


def test_late_factor_is_zero_at_the_start_and_one_at_full_scale():
    c = PenaltyCurriculum(initial=0.1, min_scale=0.1, max_scale=1.0, late=("ang_vel_xy",))
    assert c.late_factor(0.1) == 0.0
    assert c.late_factor(0.55) == pytest.approx(0.5)
    assert c.late_factor(1.0) == 1.0
    assert c.late_factor(0.0) == 0.0  # below the start: still off
    assert PenaltyCurriculum(initial=1.0, max_scale=1.0).late_factor(1.0) == 1.0  # no span: on at full scale


def test_start_sets_the_first_scale_and_the_late_factor_still_counts_from_initial():
    plain = _env(penalty_curriculum={"enabled": False})
    env = _env(penalty_curriculum={"enabled": True, "initial": 0.1, "start": 0.8, "step": 0.05})
    try:
        rm, base = env.reward_manager, plain.reward_manager
        assert rm.penalty_scale == 0.8 and rm.curriculum.initial == 0.1
        col = rm.names.index("ang_vel_xy")  # late by default
        others = (base._scale < 0).clone()
        others[col] = False
        torch.testing.assert_close(rm._scale[others], base._scale[others] * 0.8)
        torch.testing.assert_close(rm._scale[col], base._scale[col] * (0.8 - 0.1) / 0.9)
        env.episode_length[:] = 800  # long episodes: on from 0.8
        assert rm.reset(torch.arange(4))["Curriculum/penalty_scale"] == pytest.approx(0.85)
    finally:
        env.close()
        plain.close()
    for start in (0.05, 1.5):
        with pytest.raises(ValueError, match=r"start=.*: expected a scale in \[min_scale, max_scale\] = \[0.1, 1\]"):
            PenaltyCurriculum(initial=0.1, min_scale=0.1, max_scale=1.0, start=start)


def test_late_penalty_starts_at_zero_and_reaches_full_weight_with_the_others():
    plain = _env(penalty_curriculum={"enabled": False})
    env = _env(penalty_curriculum={"enabled": True, "initial": 0.1, "step": 0.45, "late": ["ang_vel_xy"]})
    try:
        rm, base = env.reward_manager, plain.reward_manager
        col = rm.names.index("ang_vel_xy")
        others = (base._scale < 0).clone()
        others[col] = False
        assert others.any()
        assert rm._scale[col] == 0.0  # off at the start, while the other penalties count at 0.1
        torch.testing.assert_close(rm._scale[others], base._scale[others] * 0.1)
        env.reset()
        env.step(torch.zeros(4, env.num_actions))
        assert (rm.episode_sums[:, col] == 0).all()  # nothing charged while off
        env.episode_length[:] = 800  # long episodes: scale 0.1 -> 0.55 -> 1.0
        rm.reset(torch.arange(4))
        torch.testing.assert_close(rm._scale[col], base._scale[col] * 0.5)
        torch.testing.assert_close(rm._scale[others], base._scale[others] * 0.55)
        env.episode_length[:] = 800
        rm.reset(torch.arange(4))
        torch.testing.assert_close(rm._scale[col], base._scale[col])  # full weight with the others
        torch.testing.assert_close(rm._scale[others], base._scale[others])
    finally:
        env.close()
        plain.close()


def test_the_roll_pitch_rate_penalty_is_late_by_default_and_may_be_switched_off():
    """By default ``ang_vel_xy`` is late: at the curriculum's start it counts 0 while the other
    penalties count at the initial scale. Its weight set to 0 with the default list builds an env
    without the term (listing a switched-off penalty changes nothing); a positive weight is refused."""
    assert G1WalkFlatConfig().penalty_curriculum.late == ["ang_vel_xy"]
    default, plain = _env(), _env(penalty_curriculum={"enabled": False})
    try:
        col = default.reward_manager.names.index("ang_vel_xy")
        assert plain.reward_manager._scale[col] < 0 and default.reward_manager._scale[col] == 0.0
        assert default.reward_manager.curriculum.late == ("ang_vel_xy",)
    finally:
        default.close()
        plain.close()
    off = _env(rewards={"ang_vel_xy": 0.0})
    try:
        assert "ang_vel_xy" not in off.reward_manager.names and off.reward_manager.curriculum.late == ()
    finally:
        off.close()
    with pytest.raises(ValueError, match=r"late: 'ang_vel_xy' \(weight 0.5\) is not a penalty"):
        G1WalkFlatConfig(rewards={"ang_vel_xy": 0.5})


@pytest.mark.parametrize("name, why", [("alive", "weight 1"), ("no_such", "no such reward")])
def test_late_refuses_what_is_not_a_penalty(name, why):
    with pytest.raises(ValueError, match=f"late: '{name}' \\({why}\\) is not a penalty"):
        G1WalkFlatConfig(penalty_curriculum={"late": [name]})


def test_a_penalty_both_exempt_and_late_is_refused():
    with pytest.raises(ValueError, match="late: 'ang_vel_xy' is also in env.penalty_curriculum.exempt"):
        G1WalkFlatConfig(penalty_curriculum={"late": ["ang_vel_xy"], "exempt": ["ang_vel_xy"]})
    # the manager refuses the same for a curriculum built without the config
    env = _env()
    try:
        c = PenaltyCurriculum(exempt=("ang_vel_xy",), late=("ang_vel_xy",))
        with pytest.raises(ValueError, match="both exempt and late"):
            RewardManager(env, env.reward_manager.terms, curriculum=c)
        with pytest.raises(ValueError, match=r"late=\['alive'\]: \['alive'\] not among the penalties"):
            RewardManager(env, env.reward_manager.terms, curriculum=PenaltyCurriculum(late=("alive",)))
    finally:
        env.close()
