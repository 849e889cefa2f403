"""`unilab eval`: the walking and tracking suites measure what they claim, from a checkpoint and
from policy.onnx alone; the run's summary records them; bad input gives one line.

Known-good policies replace physics where the physics cannot give an exact answer: on this G1
the default pose alone is not a stance (under the PD gains the ankles and waist sag and the
robot tips over within about 1.5 s), so the walking fakes freeze the physics and move the base
kinematically, and the tracking fake writes each next reference frame into the sim.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import mujoco
import pytest
import torch
from typer.testing import CliRunner

from unilab.cli import app
from unilab.eval.runner import EvalSession, evaluate
from unilab.plugins import TASKS
from unilab.robots import g1
from unilab.tasks import g1_motion_tracking
from unilab.utils.math import quat_from_yaw

THREADS = ("sim.nthread=1",)


def walking(**changes):
    """g1_walk_flat's registered walking suite with shorter cases."""
    return dataclasses.replace(TASKS.get("g1_walk_flat").item.eval_suites[0], **changes)


def config_only_run(tmp_path: Path, task: str) -> Path:
    """A run directory that holds only run_config.json with the task's code defaults."""
    run = tmp_path / task
    run.mkdir()
    (run / "run_config.json").write_text(json.dumps({"algo": "sac", "task": task, "sim": "mujoco", "config": {}}))
    return run


def freeze_physics(env) -> None:
    """The backend's step does nothing: the state is whatever was last written."""
    env.backend.step = lambda ctrl, nstep=None: None


class KinematicWalker:
    """Moves the base of every row at its held command (yaw rate times ``yaw_sign``) and holds
    the joints where they are, by writing qpos and qvel each step (physics frozen)."""

    def __init__(self, env, yaw_sign: float = 1.0) -> None:
        self.env, self.yaw_sign = env, yaw_sign
        freeze_physics(env)

    def __call__(self, obs: torch.Tensor) -> torch.Tensor:
        env = self.env
        cmd = env.commands["twist"].command
        qpos = env.backend.qpos.clone()
        qvel = torch.zeros_like(env.backend.qvel)
        w, z = qpos[:, 3], qpos[:, 6]
        wz = self.yaw_sign * cmd[:, 2]
        yaw = 2.0 * torch.atan2(z, w) + wz * env.step_dt  # the reset pose is a pure yaw rotation
        c, s = torch.cos(yaw), torch.sin(yaw)
        vx_w, vy_w = c * cmd[:, 0] - s * cmd[:, 1], s * cmd[:, 0] + c * cmd[:, 1]
        qpos[:, 0] += vx_w * env.step_dt
        qpos[:, 1] += vy_w * env.step_dt
        qpos[:, 3:7] = quat_from_yaw(yaw)
        qvel[:, 0], qvel[:, 1], qvel[:, 5] = vx_w, vy_w, wz
        env.backend.set_state(torch.arange(env.num_envs), qpos=qpos, qvel=qvel)
        return torch.zeros(env.num_envs, env.num_actions)


class ReferenceWriter:
    """A known-good tracker: before each step it writes the reference state of every row's next
    frame into the sim (physics frozen), so the robot is exactly where the clip is."""

    def __init__(self, env, lift_m: float = 0.0) -> None:
        self.env, self.cmd, self.lift_m = env, env.commands["motion"], lift_m
        freeze_physics(env)

    def __call__(self, obs: torch.Tensor) -> torch.Tensor:
        cmd, ids = self.cmd, torch.arange(self.env.num_envs)
        now = cmd.time_steps.clone()
        cmd.time_steps[:] = torch.minimum(now + 1, cmd.clip_frames[cmd.clip_index] - 1)
        cmd.write_reference_state(ids)
        cmd.time_steps[:] = now
        if self.lift_m:
            qpos = self.env.backend.qpos.clone()
            qpos[:, 2] += self.lift_m
            self.env.backend.set_state(ids, qpos=qpos)
        return torch.zeros(self.env.num_envs, self.env.num_actions)


def rows_by_name(result) -> dict[str, dict]:
    return {c["name"]: c for c in result.cases}


# ============================================================================ walking
def test_a_policy_that_stays_in_the_default_pose_passes_stand_and_fails_forward(tmp_path):
    run = config_only_run(tmp_path, "g1_walk_flat")
    session = EvalSession(run, walking(settle_s=0.1, measure_s=0.3), ["stand", "fwd0.5", "yaw+0.5"], 1,
                          overrides=THREADS)
    try:
        freeze_physics(session.env)
        result = session.run(lambda o: torch.zeros(o.shape[0], session.env.num_actions))
    finally:
        session.close()
    cases = rows_by_name(result)
    assert cases["stand"]["passed"] and cases["stand"]["vx"]["mean"] == 0.0 and cases["stand"]["falls"] == 0
    assert not cases["fwd0.5"]["passed"] and cases["fwd0.5"]["failed_checks"] == ["vx sign"]
    assert cases["fwd0.5"]["vx"]["error"] == pytest.approx(-0.5)
    assert not cases["yaw+0.5"]["passed"] and "yaw_rate sign" in cases["yaw+0.5"]["failed_checks"]
    assert (result.headline, result.headline_text, result.passed) == (pytest.approx(1 / 3), "1/3 cases passed", False)


def test_a_kinematic_walker_passes_every_command_case_and_a_mirrored_yaw_fails_the_turns(tmp_path):
    run = config_only_run(tmp_path, "g1_walk_flat")
    names = [n for n, _ in walking().nominal_cases(None)]
    for sign in (1.0, -1.0):
        session = EvalSession(run, walking(settle_s=0.06, measure_s=0.2), names, 1, overrides=THREADS)
        try:
            result = session.run(KinematicWalker(session.env, yaw_sign=sign))
        finally:
            session.close()
        cases = rows_by_name(result)
        for name, case in cases.items():
            cmd = case["command"]
            assert case["vx"]["mean"] == pytest.approx(cmd[0], abs=1e-5), name
            assert case["vy"]["mean"] == pytest.approx(cmd[1], abs=1e-5), name
            assert case["yaw_rate"]["mean"] == pytest.approx(sign * cmd[2], abs=1e-5), name
            turns = cmd[2] != 0
            assert case["passed"] == (sign > 0 or not turns), name
            if sign < 0 and turns:
                assert case["failed_checks"] == ["yaw_rate sign"], name
        assert result.passed == (sign > 0)


def test_a_slow_linear_command_inside_the_deadband_is_flagged_outside_training(tmp_path):
    """g1_walk_flat zeroes linear draws below env.commands.lin_vel_deadband (0.2 m/s): a case at
    0.1 m/s was never trained and says so; 0.5 m/s and a pure yaw command were."""
    run = config_only_run(tmp_path, "g1_walk_flat")
    session = EvalSession(run, walking(settle_s=0.06, measure_s=0.1), ["0.1:0:0", "0.5:0:0", "0:0:0.5"], 1,
                          overrides=THREADS)
    try:
        result = session.run(KinematicWalker(session.env))
    finally:
        session.close()
    flags = [c["in_training_range"] for c in result.cases]
    assert flags == [False, True, True]


def test_robustness_cases_switch_their_disturbance_on_for_their_rows_only(tmp_path):
    """Pushes fire on the push rows, noise reaches the obs_noise rows' observations, the dr rows
    get the task's randomized friction; the other rows see none of it."""
    run = config_only_run(tmp_path, "g1_walk_flat")
    session = EvalSession(run, walking(settle_s=0.0, measure_s=3.1, mirror_check=False),
                          ["fwd0.5", "push", "obs_noise", "dr"], 2,
                          # no gait clock: its phase would move every row's observation
                          overrides=(*THREADS, "env.gait.enabled=false", "env.rewards.feet_phase=0"))
    env, seen = session.env, []
    try:
        freeze_physics(env)
        pushed = torch.zeros(env.num_envs, dtype=torch.bool)

        def policy(obs):
            seen.append(obs.clone())
            return torch.zeros(obs.shape[0], env.num_actions)

        push = env.event_manager.terms["push_robot"]
        original = push.func

        def spy(env_, ids, **params):
            pushed[ids.cpu()] = True
            original(env_, ids, **params)

        push.func = spy
        session.run(policy)
        foot = env.meta.geom_ids(tuple(g1.FOOT_GEOM_NAMES))[0]
        friction = env.backend.model_field("geom_friction")[:, foot, 0]
    finally:
        session.close()
    rows = {name: slice(2 * i, 2 * i + 2) for i, name in enumerate(["fwd0.5", "push", "obs_noise", "dr"])}
    assert pushed[rows["push"]].all() and not pushed[rows["fwd0.5"]].any() and not pushed[rows["dr"]].any()
    obs = torch.stack(seen)  # (steps, rows, dim): frozen physics, so only noise moves an observation
    moves = (obs - obs[:1]).abs().amax(dim=(0, 2))
    assert (moves[rows["obs_noise"]] > 0).all()
    assert (moves[rows["fwd0.5"]] == 0).all() and (moves[rows["dr"]] == 0).all()
    assert (friction[rows["fwd0.5"]] == friction[0]).all() and (friction[rows["dr"]] != friction[0]).all()


def test_a_session_evaluates_again_with_the_same_draws_and_the_same_result(tmp_path):
    """The env is reused (as during training): every evaluation meets the same draws, and the dr
    rows' randomization is not drawn again on top of the first."""
    run = config_only_run(tmp_path, "g1_walk_flat")
    session = EvalSession(run, walking(settle_s=0.1, measure_s=0.5), ["fwd0.5", "dr"], 1, overrides=THREADS)
    zero = lambda o: torch.zeros(o.shape[0], session.env.num_actions)  # noqa: E731
    try:
        first, second = session.run(zero), session.run(zero)
    finally:
        session.close()
    assert first.cases == second.cases
    a, b = (c["vx"]["mean"] for c in first.cases)
    assert a != b  # the dr row's robot differs from the nominal one


# ============================================================================ checkpoints and ONNX
@pytest.fixture(scope="module")
def walk_run(tmp_path_factory, finished_walk_run) -> Path:
    """A real run directory (2 iterations of 2 envs): an untrained policy, and its policy.onnx."""
    from unilab.deploy.export import export

    run = finished_walk_run(tmp_path_factory.mktemp("eval"))
    export(str(run), num_envs=1, record_steps=5, num_random=64)
    return run


def short_eval(run, checkpoint, cases, suite=None, **kw):
    """evaluate() with a short walking suite (the registered suite's keys, other durations)."""
    from unilab.eval import runner

    original = runner.task_suites
    short = suite or walking(settle_s=0.2, measure_s=1.8)
    runner.task_suites = lambda reg: (short,)
    try:
        return evaluate(str(run), checkpoint=checkpoint, cases=cases, num_envs=2, print_table=False,
                        show_progress=False, **kw)
    finally:
        runner.task_suites = original


def test_an_untrained_policy_records_falls_and_the_summary_keeps_the_record(walk_run):
    report = short_eval(walk_run, None, None)
    names = [c["name"] for c in report.result.cases]
    assert len(names) == 15 and {"stand", "fwd0.5", "push"} <= set(names)
    for case in report.result.cases:
        if case["name"] != "push":
            assert case["falls"] == 2 and not case["passed"] and case["up_share"] == 0.0
    summary = json.loads((walk_run / "run_summary.json").read_text())
    entry = summary["eval"]["walking"]
    assert entry["policy"] == {"kind": "checkpoint", "file": "model_last.pt", "iteration": 2, "final": True,
                               "actor": "the actor's moving average, algo.actor_ema=0.005"}
    assert entry["robot"] == {"name": "g1", "mjcf": None, "actuators": "project", "feet": "project"}  # the built-in model
    assert entry["headline"] == 0.0 and [c["name"] for c in entry["cases"]] == names
    assert report.json_path == walk_run / "eval_walking.json"
    assert json.loads(report.json_path.read_text())["cases"] == entry["cases"]
    assert summary["status"] == "normal_completion"  # the rest of the summary is kept
    # A --case selection has its own file and leaves the whole-suite record and the summary alone.
    subset = short_eval(walk_run, None, ["stand"])
    assert subset.json_path == walk_run / "eval_walking_cases.json"
    assert [c["name"] for c in json.loads(subset.json_path.read_text())["cases"]] == ["stand"]
    assert json.loads((walk_run / "eval_walking.json").read_text())["cases"] == entry["cases"]
    assert json.loads((walk_run / "run_summary.json").read_text())["eval"]["walking"] == entry


def test_the_onnx_policy_gives_the_checkpoints_result(walk_run, tmp_path):
    suite = walking(settle_s=0.0, measure_s=0.5)  # short enough that the untrained rows are still up
    # policy_best.onnx: the evaluation of the final policy (iteration 2) during training wrote it
    files = ("model_last.pt", "policy.onnx", "policy_best.onnx")
    by_file = {f: short_eval(walk_run, f, ["stand", "yaw+0.5"], suite=suite, json_path=tmp_path / f"{f}.json")
               for f in files}
    a = by_file["model_last.pt"].result.cases
    for f in files:  # the SAC g1_walk_flat default deploys the actor's moving average; each file says so
        assert by_file[f].record["policy"]["actor"] == "the actor's moving average, algo.actor_ema=0.005"
    for f in files[1:]:
        assert by_file[f].record["policy"]["kind"] == "onnx" and by_file[f].record["policy"]["iteration"] == 2
        for x, y in zip(a, by_file[f].result.cases):
            assert (x["falls"], x["samples"], x["passed"]) == (y["falls"], y["samples"], y["passed"])
            assert x["samples"] > 0
            for axis in ("vx", "vy", "yaw_rate"):
                assert x[axis]["mean"] == pytest.approx(y[axis]["mean"], abs=1e-3)


def test_policy_onnx_alone_is_enough(walk_run, tmp_path):
    run = tmp_path / "onnx_only"
    shutil.copytree(walk_run, run)
    for f in run.glob("model_*.pt"):
        f.unlink()
    report = short_eval(run, None, ["stand"], suite=walking(settle_s=0.0, measure_s=0.2))
    assert report.record["policy"]["file"] == "policy.onnx" and report.json_path == run / "eval_walking_cases.json"


def _transfer_eval(run, overrides, look):
    """``unilab eval RUN --transfer OVERRIDES`` with a short walking suite; ``look(env)`` is called
    on the evaluation's env once it is built. Returns (the report, what ``look`` returned)."""
    from unilab.eval import runner

    original, session_cls = runner.task_suites, runner.EvalSession
    seen = {}

    class Looking(session_cls):
        def __post_init__(self) -> None:
            super().__post_init__()
            seen["env"] = look(self.env)

    runner.task_suites = lambda reg: (walking(settle_s=0.0, measure_s=0.2),)
    runner.EvalSession = Looking
    try:
        report = evaluate(str(run), num_envs=1, show_progress=False, overrides=overrides, transfer=True)
    finally:
        runner.task_suites, runner.EvalSession = original, session_cls
    return report, seen["env"]


def _colliding_foot_geoms(env) -> list[int]:
    """Geom ids of the left foot body that collide, in the evaluation env's model."""
    model = env.backend.model
    foot = model.body(g1.G1.feet[0]).id
    return [g for g in range(model.ngeom) if model.geom_bodyid[g] == foot and model.geom_contype[g]]


def test_a_transfer_evaluates_on_sphere_feet_and_leaves_the_runs_score_alone(walk_run, capsys):
    """--transfer robot.feet=spheres: the env has four sole spheres per foot, the record (its own
    file) and the table's header say which model it ran on against the one it trained on, and
    run_summary.json's eval entry is untouched."""
    before = json.loads((walk_run / "run_summary.json").read_text()).get("eval")
    sphere = mujoco.mjtGeom.mjGEOM_SPHERE
    report, spheres = _transfer_eval(walk_run, ["robot.feet=spheres"], lambda env: sum(
        int(env.backend.model.geom_type[g] == sphere) for g in _colliding_foot_geoms(env)))
    assert spheres == 4
    assert report.json_path == walk_run / "eval_walking_transfer.json"
    record = json.loads(report.json_path.read_text())
    assert record["robot"]["feet"] == "spheres"
    assert record["transfer"] == {
        "settings": ["robot.feet=spheres"],
        "trained_robot": {"name": "g1", "mjcf": None, "actuators": "project", "feet": "project"},
        "text": "robot.feet=spheres (trained with robot.feet=project)",
    }
    assert "transfer: robot.feet=spheres (trained with robot.feet=project)" in capsys.readouterr().out
    assert json.loads((walk_run / "run_summary.json").read_text()).get("eval") == before


def test_a_transfer_to_a_users_file_with_the_projects_soles(walk_run, tmp_path):
    """--transfer robot.mjcf=FILE robot.feet=project: the built-in run's policy is evaluated on a
    meshed G1 whose feet collide through the G1's seven sole capsules each, not the file's spheres,
    and friction randomization finds those capsules."""
    from unilab.robots.testing import write_meshed_g1

    mjcf = write_meshed_g1(tmp_path / "user_g1")

    def look(env):
        model = env.backend.model
        return ([(model.geom(g).name, int(model.geom_type[g])) for g in _colliding_foot_geoms(env)],
                {env.meta.geom_names[g] for g in env.meta.collision_geom_ids(g1.G1.feet)})

    report, (soles, randomized) = _transfer_eval(walk_run, [f"robot.mjcf={mjcf}", "robot.feet=project"], look)
    capsule = int(mujoco.mjtGeom.mjGEOM_CAPSULE)
    assert soles == [(f"{g1.G1.feet[0]}_sole{i}", capsule) for i in range(7)]
    assert randomized == {f"{body}_sole{i}" for body in g1.G1.feet for i in range(7)}
    record = json.loads(report.json_path.read_text())
    assert record["robot"] == {"name": "g1", "mjcf": str(mjcf), "actuators": "project", "feet": "project"}
    assert record["transfer"]["text"] == (f"robot.mjcf={mjcf}, robot.feet=project (trained with robot.mjcf=built-in, "
                                          "robot.feet=project)")


def test_robot_settings_other_than_the_model_file_need_transfer(walk_run):
    run = str(walk_run)
    one_error_line(["eval", run, "robot.feet=spheres"],
                   "unilab eval takes robot.mjcf=FILE only (the run's model file at a new path), got "
                   "'robot.feet=spheres'", "unilab eval --transfer evaluates on another robot model")
    one_error_line(["eval", run, "--transfer", "training.seed=3"],
                   "--transfer: 'training.seed=3' is not a robot model setting; expected robot.mjcf=FILE, "
                   "robot.feet=project|model|spheres or robot.actuators=project|file")
    one_error_line(["eval", run, "--transfer"], "--transfer: name the model to evaluate on")
    one_error_line(["eval", run, "--transfer", "robot.feet=cubes", "--case", "stand"], "robot.feet", "cubes")


def test_an_onnx_policy_for_another_action_width_is_one_error(walk_run):
    """The ONNX layout check covers the actions too (a transfer model with other actuators)."""
    from types import SimpleNamespace

    from unilab.errors import UserError
    from unilab.eval.policy import OnnxPolicy, check_onnx_layout, read_metadata

    path = walk_run / "policy.onnx"
    meta, policy = read_metadata(path), OnnxPolicy(path)
    group = meta["observation"].get("group", "actor")
    fits = SimpleNamespace(obs_dims={group: policy.dim}, num_actions=policy.num_actions)
    assert policy.num_actions and check_onnx_layout(meta, policy, fits, path) == group
    other = SimpleNamespace(obs_dims={group: policy.dim}, num_actions=policy.num_actions + 2)
    with pytest.raises(UserError, match=f"writes {policy.num_actions} actions; the env takes {policy.num_actions + 2}"):
        check_onnx_layout(meta, policy, other, path)


# ============================================================================ tracking
def test_a_reference_writing_tracker_completes_every_clip_with_zero_error(tmp_path):
    run = config_only_run(tmp_path, "g1_motion_tracking")
    session = EvalSession(run, None, None, 2, overrides=THREADS)
    try:
        result = session.run(ReferenceWriter(session.env))
    finally:
        session.close()
    assert result.passed and result.headline == 1.0
    (clip,) = result.cases
    assert clip["name"] == "default" and clip["frames"] == 301
    for start in (clip["from_start"], clip["random_starts"]):
        for key in ("body_pos_error_rel_m", "body_pos_error_world_m", "joint_pos_error_rad", "body_ori_error_rad"):
            assert start[key] < 1e-5, key
        assert all(k == pytest.approx(1.0, abs=1e-6) for k in start["kernels"].values())
        assert start["kernels"].keys() >= {"motion_body_pos", "motion_global_anchor_ori"}
    assert clip["from_start"]["completed"] and clip["random_starts"]["completed"] == 2
    assert clip["from_start"]["frames_played"] == 299  # every step but the one the clip ends on
    assert all(0 <= f <= 300 - 50 for f in clip["random_starts"]["start_frames"])


def test_each_clip_of_a_motion_set_is_played_and_reported_on_its_own(tmp_path):
    motions = Path(g1_motion_tracking.__file__).parent / "motions"
    clips = tmp_path / "clips"
    clips.mkdir()
    for name in ("default", "twist"):  # 301 and 401 frames
        shutil.copy(motions / f"{name}.npz", clips / f"{name}.npz")
    run = config_only_run(tmp_path, "g1_motion_tracking")
    (run / "run_config.json").write_text(json.dumps(
        {"algo": "sac", "task": "g1_motion_tracking", "sim": "mujoco", "config": {"env": {"motion": {"file": str(clips)}}}}
    ))  # fmt: skip
    session = EvalSession(run, None, None, 2, overrides=THREADS)
    try:
        result = session.run(ReferenceWriter(session.env))
    finally:
        session.close()
    assert [(c["name"], c["frames"]) for c in result.cases] == [("default", 301), ("twist", 401)]
    assert result.passed and result.headline == 1.0
    for clip in result.cases:
        assert clip["from_start"]["completed"] and clip["random_starts"]["completed"] == 2
        assert clip["from_start"]["frames_played"] == clip["frames"] - 2
        assert clip["from_start"]["body_pos_error_world_m"] < 1e-5
        assert all(0 <= f <= clip["frames"] - 1 - 50 for f in clip["random_starts"]["start_frames"])


def test_a_tracker_off_the_reference_fails_at_once_on_the_anchor_height(tmp_path):
    run = config_only_run(tmp_path, "g1_motion_tracking")
    session = EvalSession(run, None, None, 1, overrides=THREADS)
    try:
        result = session.run(ReferenceWriter(session.env, lift_m=0.3))
    finally:
        session.close()
    (clip,) = result.cases
    assert not result.passed and result.headline == 0.0
    assert clip["from_start"]["failure"] == "anchor_pos" and clip["from_start"]["frames_played"] == 0
    assert clip["random_starts"]["completed"] == 0


# ============================================================================ bad input
def one_error_line(args: list[str], *expected: str) -> None:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    for text in expected:
        assert text in lines[0], lines[0]


def test_bad_input_is_one_error_line(walk_run, tmp_path):
    run = str(walk_run)
    one_error_line(["eval", run, "--suite", "tracking"], "--suite tracking", "walking")
    one_error_line(["eval", run, "--case", "moonwalk"], "--case moonwalk", "fwd0.5")
    one_error_line(["eval", run, "--checkpoint", "model_999.pt"], "model_999.pt", "model_last.pt")
    one_error_line(["eval", run, "--checkpoint", "policy_7.onnx"], "no ONNX policy", "policy.onnx")
    one_error_line(["eval", run, "--num-envs", "0"], "--num-envs must be >= 1")
    # Eval puts the user's settings over its suite's, where a later item wins: refused before that.
    one_error_line(["eval", run, "--transfer", "robot.feet=spheres", "robot.feet=model"],
                   "overrides: robot.feet given twice (spheres, then model); expected each key once")
    one_error_line(["eval", str(tmp_path / "nowhere")], "not a run directory")

    import onnx

    model = onnx.load(str(walk_run / "policy.onnx"))
    meta = {p.key: p for p in model.metadata_props}
    source = json.loads(meta["source"].value)
    other = tmp_path / "other_task.onnx"
    meta["source"].value = json.dumps({**source, "task": "g1_motion_tracking"})
    onnx.save(model, str(other))
    one_error_line(["eval", run, "--checkpoint", str(other)], "'g1_motion_tracking' run", "'g1_walk_flat'")

    meta["source"].value = json.dumps(source)
    obs = json.loads(meta["observation"].value)
    obs["terms"] = [t for t in obs["terms"] if t["name"] != "command"]
    meta["observation"].value = json.dumps(obs)
    layout = tmp_path / "layout.onnx"
    onnx.save(model, str(layout))
    one_error_line(["eval", run, "--checkpoint", str(layout)], "does not fit the task's observation")

    empty = tmp_path / "empty_run"
    empty.mkdir()
    shutil.copy(walk_run / "run_config.json", empty)
    one_error_line(["eval", str(empty)], "no checkpoint or policy.onnx")


# ============================================================================ during training
class _Agent:
    """What the evaluator reads of a learner: its deterministic policy and observation group."""

    actor_group = "actor"

    def __init__(self, policy) -> None:
        self.policy = policy

    def inference_policy(self):
        return self.policy


class _Writer:
    def __init__(self) -> None:
        self.scalars: list[tuple[str, float, int]] = []

    def add_scalar(self, tag, value, step, walltime=None):
        self.scalars.append((tag, value, step))


def test_training_evaluator_runs_snapshots_in_the_background_and_ends_its_process(walk_run, checkpoint_policy):
    from unilab.eval.training import TrainingEvaluator

    policy, _ = checkpoint_policy(walk_run)
    agent, writer, recorded = _Agent(policy), _Writer(), {}
    ev = TrainingEvaluator(walk_run, 2, steps_per_iteration=2, writer=writer, record=recorded.update, cases=["stand"])
    assert not ev.maybe_start(1, agent)  # not a multiple of the interval
    assert ev.maybe_start(2, agent)
    assert not ev.maybe_start(4, agent) and ev.skipped == 1  # the previous snapshot is still running
    proc = ev._proc
    ev.poll(timeout=120)
    ev.close(agent, 5)  # a completed run: its final policy is evaluated too
    assert not proc.is_alive() and ev._proc is None
    history = recorded["eval_during_training"]["history"]
    assert [h["iteration"] for h in history] == [2, 5] and [h["env_steps"] for h in history] == [4, 10]
    assert all(h["headline"] == 0.0 and not h["passed"] for h in history)  # the untrained policy falls
    assert recorded["time_to_eval_pass"] is None and recorded["eval_during_training"]["error"] is None
    # both snapshots score 0: of equals the later is kept as the best policy, with its selection
    assert recorded["eval_during_training"]["best"] == {"file": "policy_best.onnx", "suite": "walking",
                                                        "iteration": 5, "headline": 0.0, "passed": False}
    from unilab.deploy.export import read_metadata

    meta = read_metadata(walk_run / "policy_best.onnx")
    assert meta["source"]["iteration"] == 5 and meta["source"]["task"] == "g1_walk_flat"
    assert meta["selection"]["iteration"] == 5 and meta["selection"]["suite"] == "walking"
    last = recorded["eval_during_training"]["last"]
    assert [c["name"] for c in last["cases"]] == ["stand"] and last["cases"][0]["falls"] == 1
    assert ("Eval/headline", 0.0, 2) in writer.scalars and ("Eval/stand/passed", 0.0, 5) in writer.scalars


def test_the_best_policy_is_a_pass_first_then_the_headline_and_of_equals_the_later(walk_run, tmp_path,
                                                                                   checkpoint_policy):
    """Each snapshot that evaluates at least as well as every one before it replaces
    policy_best.onnx (the later of equals); a worse one leaves the file as it is."""
    import shutil

    from unilab.deploy.export import read_metadata
    from unilab.eval.training import BEST_POLICY, BestPolicy

    run = tmp_path / "run"
    shutil.copytree(walk_run, run)
    (run / BEST_POLICY).unlink()
    policy, group = checkpoint_policy(run)
    best, kept = BestPolicy(run, group), []
    for iteration, passed, headline in ((10, False, 0.4), (20, False, 0.8), (30, False, 0.6), (40, True, 0.9),
                                        (50, False, 1.0), (60, True, 0.9), (70, True, 0.8)):
        entry = best.offer(policy, iteration, {"suite": "walking", "headline": headline, "passed": passed})
        if entry is not None:
            assert entry == {"file": BEST_POLICY, "suite": "walking", "iteration": iteration, "headline": headline,
                             "passed": passed}
            kept.append(iteration)
        meta = read_metadata(run / BEST_POLICY)
        assert meta["selection"]["iteration"] == kept[-1] and meta["source"]["iteration"] == kept[-1]
    assert kept == [10, 20, 40, 60]  # 30 scores below 20, 50 does not pass, 70 scores below 60
    # the metadata is the export's (play settings), not the suite's
    exported = read_metadata(run / "policy.onnx")
    assert meta["commands"] == exported["commands"] and meta["observation"] == exported["observation"]


def test_time_to_eval_pass_is_the_first_passing_snapshot(tmp_path):
    from unilab.eval.training import TrainingEvaluator

    recorded = {}
    ev = TrainingEvaluator(tmp_path, 10, steps_per_iteration=100, record=recorded.update)
    for iteration, passed in ((10, False), (20, True), (30, False), (40, True)):
        record = {"suite": "walking", "headline": 1.0 if passed else 0.5, "passed": passed, "wall_time_s": 1.0,
                  "cases": [], "policy": {}}
        ev._take({"iteration": iteration, "env_steps": iteration * 100, "wall_time_s": iteration / 10}, {"record": record})
    assert recorded["time_to_eval_pass"] == {"suite": "walking", "iteration": 20, "env_steps": 2000, "wall_time_s": 2.0,
                                             "headline": 1.0}
    assert [h["passed"] for h in recorded["eval_during_training"]["history"]] == [False, True, False, True]
