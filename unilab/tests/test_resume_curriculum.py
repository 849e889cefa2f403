"""training.resume restores g1_walk_flat's penalty curriculum: every checkpoint records the last
``Curriculum/penalty_scale``, and a resumed run's envs (the async collectors' too) start at it
through ``env.penalty_curriculum.start``."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
import torch

from unilab import ddp, runs
from unilab.build import plan, prepare
from unilab.errors import UserError
from unilab.interrupts import Interrupts
from unilab.plots import read_scalars
from unilab.resume import curriculum_start
from unilab.run_hooks import RunDirHooks
from unilab.tasks.g1_walk_flat import G1WalkFlatConfig
from unilab_rl.runner import LearnSummary

SMALL = [
    "training.num_envs=4",
    "algo.batch_size=64",
    "algo.num_updates=1",
    "algo.learning_starts=2",
    "algo.buffer_size_per_env=64",
    "runtime.block_steps=2",
    "sim.nthread=1",
    "training.device=cpu",
    "training.log_interval=1",
    "training.no_play=true",
    # Episodes time out after 5 steps (0.1 s), longer than up_length_s: the scale rises by 0.1 at
    # every 5th iteration, 0.1 -> 0.2 -> 0.3 ...
    "env.episode_length_s=0.1",
    "env.penalty_curriculum.up_length_s=0.05",
    "env.penalty_curriculum.down_length_s=0",
    "env.penalty_curriculum.step=0.1",
]
SCALE = "Curriculum/penalty_scale"


def _train(unilab_in_process, tmp_path: Path, *extra: str):
    """`unilab train` with :data:`SMALL`, run in this process (an async run still starts its collector
    process), without evaluating the final policy (test_train checks that)."""
    return unilab_in_process("train", "--algo", "sac", "--task", "g1_walk_flat", "--sim", "mujoco", *SMALL,
                             "training.eval_interval=0", f"training.log_dir={tmp_path / 'logs'}", *extra, cwd=tmp_path)


def test_a_checkpoint_records_the_scale_and_a_resumed_async_run_starts_there(tmp_path, unilab_in_process):
    first = _train(unilab_in_process, tmp_path, "runtime.mode=sync", "training.max_iterations=11")
    assert first.returncode == 0, first.stderr
    (first_run,) = list((tmp_path / "logs" / "sac" / "g1_walk_flat").iterdir())
    logged = [value for _, _, value in read_scalars(first_run)[SCALE]]
    assert logged == pytest.approx([0.2, 0.3])  # two resets: at iterations 5 and 10
    saved = torch.load(first_run / "model_last.pt", weights_only=True)  # as play and resume read it
    assert saved["curriculum"] == {SCALE: pytest.approx(0.3)}

    second = _train(unilab_in_process, tmp_path, "runtime.mode=async", "training.max_iterations=22",
                    "training.resume=latest")
    assert second.returncode == 0, second.stderr
    assert ("penalty curriculum resumed at 0.3, the checkpoint's last Curriculum/penalty_scale "
            "(env.penalty_curriculum.start=0.3)") in second.stderr.splitlines()
    (second_run,) = [p for p in (tmp_path / "logs" / "sac" / "g1_walk_flat").iterdir() if p != first_run]
    config = json.loads((second_run / "run_config.json").read_text())["config"]["env"]["penalty_curriculum"]
    assert config["start"] == pytest.approx(0.3) and config["initial"] == 0.1
    # The collectors' envs went on from 0.3: their first reset logs 0.4 (from initial it would be 0.2).
    resumed = [value for _, _, value in read_scalars(second_run)[SCALE]]
    assert resumed[0] == pytest.approx(0.4) and resumed == sorted(resumed)
    assert torch.load(second_run / "model_last.pt", weights_only=True)["curriculum"] == {
        SCALE: pytest.approx(resumed[-1])}


class _Learner:
    cuda_graphs = False

    def state_dict(self) -> dict:
        return {"iteration": 0}


def _hooks(run_dir: Path, curriculum: dict[str, float] | None) -> RunDirHooks:
    return RunDirHooks(run_dir, _Learner(), {"algo": "sac", "task": "g1_walk_flat"}, 5,
                       runs.RunSummary(run_dir / "run_summary.json", {}), None, Interrupts(), ddp.DistContext(),
                       log_interval=1, max_iterations=10, curriculum=curriculum)


def test_checkpoints_record_the_last_logged_scale_and_nothing_without_a_curriculum(tmp_path):
    on = tmp_path / "on"
    on.mkdir()
    hooks = _hooks(on, curriculum_start(prepare("sac", "g1_walk_flat", "mujoco", [])[3], _curricula()))
    hooks.on_checkpoint(1, LearnSummary())  # before any episode ended: the scale the envs start at
    assert torch.load(on / "model_1.pt", weights_only=True)["curriculum"] == {SCALE: 0.1}
    hooks.on_iteration(2, {SCALE: 0.45, "Train/mean_reward": 1.0}, LearnSummary())
    hooks.on_iteration(3, {"Train/mean_reward": 1.0}, LearnSummary())  # no episode ended: no entry
    hooks.on_checkpoint(3, LearnSummary())
    assert torch.load(on / "model_3.pt", weights_only=True)["curriculum"] == {SCALE: 0.45}
    hooks.writer.close()

    off = tmp_path / "off"
    off.mkdir()
    cfg = prepare("sac", "g1_walk_flat", "mujoco", ["env.penalty_curriculum.enabled=false"])[3]
    assert curriculum_start(cfg, _curricula()) == {}
    hooks = _hooks(off, curriculum_start(cfg, _curricula()))
    hooks.on_checkpoint(1, LearnSummary())
    assert "curriculum" not in torch.load(off / "model_1.pt", weights_only=True)
    hooks.writer.close()


def _curricula():
    from unilab.plugins import TASKS, lookup

    return lookup(TASKS, "g1_walk_flat", "--task").item.curricula


def _plan(tmp_path: Path, curriculum: dict | None, *overrides: str):
    """The plan of a run resuming a checkpoint that recorded ``curriculum`` (None: no entry, as
    checkpoints written before they recorded it)."""
    ckpt = tmp_path / "resume.pt"
    payload = {"algo": "sac", "task": "g1_walk_flat", "iteration": 3, "agent": {"iteration": 3}}
    torch.save(payload if curriculum is None else {**payload, "curriculum": curriculum}, ckpt)
    algo_reg, task_reg, backend_reg, cfg = prepare(
        "sac", "g1_walk_flat", "mujoco",
        ["training.num_envs=2", "runtime.mode=sync", f"training.resume={ckpt}",
         f"training.log_dir={tmp_path / 'logs'}", *overrides])
    return plan("sac", "g1_walk_flat", "mujoco", algo_reg, task_reg, backend_reg, cfg, ddp.setup(None, "cpu", None))


def _factors(p):
    """(penalty_scale, factor of ang_vel_xy, factor of the other penalties) of an env the run's
    env factory builds, as every collector does, through a pickle as it reaches them."""
    env_fn = pickle.loads(pickle.dumps(p.env_fn))
    env = env_fn(num_envs=2, nthread=1)
    try:
        rm = env.reward_manager
        factor = rm._scale / rm._base_scale
        col = rm.names.index("ang_vel_xy")
        others = (rm._base_scale < 0).clone()
        others[col] = False
        assert others.any()
        return rm.penalty_scale, float(factor[col]), factor[others]
    finally:
        env.close()


def test_a_resumed_run_builds_envs_at_the_recorded_scale(tmp_path):
    p = _plan(tmp_path, {SCALE: 0.8})
    assert p.resume_lines == ["penalty curriculum resumed at 0.8, the checkpoint's last Curriculum/penalty_scale "
                              "(env.penalty_curriculum.start=0.8)"]
    c = p.cfg.env.penalty_curriculum
    assert (c.start, c.initial) == (0.8, 0.1)  # initial unchanged: the late factor counts from it
    scale, late, others = _factors(p)
    assert scale == 0.8
    assert late == pytest.approx((0.8 - 0.1) / 0.9, rel=1e-6)
    torch.testing.assert_close(others, torch.full_like(others, 0.8))


def test_an_old_checkpoint_resumes_at_initial_and_says_so(tmp_path):
    p = _plan(tmp_path, None)
    assert p.resume_lines == [
        "penalty curriculum starts at env.penalty_curriculum.initial=0.1: the checkpoint records no "
        "Curriculum/penalty_scale (an older checkpoint, or one trained without it)"]
    assert p.cfg.env.penalty_curriculum.start is None
    scale, late, _ = _factors(p)
    assert (scale, late) == (0.1, 0.0)


def test_a_start_given_on_the_command_line_wins_over_the_recorded_one(tmp_path):
    p = _plan(tmp_path, {SCALE: 0.8}, "env.penalty_curriculum.start=0.5")
    assert p.resume_lines == ["penalty curriculum starts at env.penalty_curriculum.start=0.5 as given (the "
                              "checkpoint's last Curriculum/penalty_scale: 0.8)"]
    assert _factors(p)[0] == 0.5


def test_a_disabled_curriculum_resumes_without_a_line(tmp_path):
    p = _plan(tmp_path, {SCALE: 0.8}, "env.penalty_curriculum.enabled=false")
    assert p.resume_lines == [] and p.cfg.env.penalty_curriculum.start is None


def test_a_recorded_scale_this_config_refuses_is_one_line_naming_the_key(tmp_path):
    with pytest.raises(UserError) as info:
        _plan(tmp_path, {SCALE: 0.8}, "env.penalty_curriculum.min_scale=0.9")
    assert str(info.value) == (
        "training.resume: the checkpoint's last Curriculum/penalty_scale=0.8 does not fit this run's config "
        "(invalid env.penalty_curriculum: env.penalty_curriculum.start=0.8 is below "
        "env.penalty_curriculum.min_scale=0.9; expected a scale in [min_scale, 1] = [0.9, 1]); give "
        "env.penalty_curriculum.start to start the penalty curriculum elsewhere")
    assert not (tmp_path / "logs").exists()  # refused before any run directory


@pytest.mark.parametrize("start, why", [(0.05, "start=0.05 is below env.penalty_curriculum.min_scale=0.1"),
                                        (1.5, "less than or equal to 1")])
def test_the_config_refuses_a_start_outside_the_scale_bounds(start, why):
    with pytest.raises(ValueError, match=why):
        G1WalkFlatConfig(penalty_curriculum={"start": start})
    assert G1WalkFlatConfig(penalty_curriculum={"start": 1.0}).penalty_curriculum.start == 1.0


LIN, ANG = "Curriculum/command_lin_level", "Curriculum/command_ang_level"


def _levels(p):
    """(lin_level, ang_level) of the velocity command of an env the run's env factory builds."""
    env = pickle.loads(pickle.dumps(p.env_fn))(num_envs=2, nthread=1)
    try:
        twist = env.commands["twist"]
        return twist.lin_level, twist.ang_level
    finally:
        env.close()


def test_a_resumed_run_builds_envs_at_the_recorded_command_levels(tmp_path):
    p = _plan(tmp_path, {SCALE: 0.8, LIN: 0.7, ANG: 0.9}, "env.commands.curriculum.enabled=true")
    assert p.resume_lines[1:] == [
        f"command curriculum (linear) resumed at 0.7, the checkpoint's last {LIN} "
        "(env.commands.curriculum.start_lin_level=0.7)",
        f"command curriculum (angular) resumed at 0.9, the checkpoint's last {ANG} "
        "(env.commands.curriculum.start_ang_level=0.9)"]
    assert _levels(p) == pytest.approx((0.7, 0.9))


def test_command_levels_start_at_initial_without_a_record_and_are_recorded_from_the_start(tmp_path):
    p = _plan(tmp_path, {SCALE: 0.8}, "env.commands.curriculum.enabled=true",
              "env.commands.curriculum.initial_fraction=0.4")
    assert p.resume_lines[1].startswith("command curriculum (linear) starts at "
                                        "env.commands.curriculum.initial_fraction=0.4: the checkpoint records no")
    assert _levels(p) == pytest.approx((0.4, 0.4))
    cfg = prepare("sac", "g1_walk_flat", "mujoco", ["env.commands.curriculum.enabled=true"])[3]
    assert curriculum_start(cfg, _curricula()) == {SCALE: 0.1, LIN: 0.5, ANG: 0.5}
    assert curriculum_start(prepare("sac", "g1_walk_flat", "mujoco", [])[3], _curricula()) == {SCALE: 0.1}
