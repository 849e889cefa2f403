"""`unilab play`: rollout numbers, the mp4 (decoded: frame count and size), the run summary, a
machine without offscreen OpenGL, and one-line errors for a missing run or checkpoint."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from unilab.deploy import after_training, video
from unilab.config import parse_overrides
from unilab.deploy.loading import run_config
from unilab.deploy.play import play
from unilab.train import UserError, train

TINY = [
    "training.num_envs=2", "training.max_iterations=2", "algo.batch_size=16", "algo.num_updates=1",
    "algo.learning_starts=1", "algo.buffer_size_per_env=8", "sim.nthread=1", "training.device=cpu",
    "training.progress=false",
]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, finished_walk_run) -> Path:
    """A real run directory: 2 iterations of 2 envs, without the play + export at its end."""
    return finished_walk_run(tmp_path_factory.mktemp("play"))


def summary(run: Path) -> dict:
    return json.loads((run / "run_summary.json").read_text())


@pytest.fixture
def no_gl(monkeypatch):
    """A machine with neither OSMesa nor EGL."""
    monkeypatch.setattr(video, "gl_candidates", lambda environ=None: ["osmesa", "egl"])
    monkeypatch.setattr(video, "_missing_library", lambda gl: f"lib{gl} not found")


def test_play_writes_an_mp4_of_the_configured_size_and_frame_count(run_dir, tmp_path):
    av = pytest.importorskip("av")
    out = tmp_path / "clip.mp4"
    result = play(str(run_dir), num_envs=2, steps=20, video=out, width=320, height=240)
    if result.video_error and "no offscreen OpenGL" in result.video_error:
        pytest.skip(result.video_error)
    assert result.video_error is None
    # 50 Hz control, default fps 25: one frame per 2 env steps.
    assert (result.video.frames, result.video.fps) == (10, 25.0)
    with av.open(str(out)) as container:
        stream = container.streams.video[0]
        assert float(stream.average_rate) == 25.0
        frames = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    assert len(frames) == 10
    assert all(f.shape == (240, 320, 3) for f in frames)
    assert max(float(f.std()) for f in frames) > 5.0, "frames are blank"

    # Every env step belongs to exactly one reported episode (ended, or cut by the end of play).
    assert int(result.episode_lengths.sum()) == 2 * 20
    assert torch.isfinite(result.episode_returns).all()
    assert result.observations.shape == (2 * 20, 103)  # 99 + 4 gait-clock columns (owner default)
    s = summary(run_dir)
    assert s["video"] == str(out.resolve())
    assert s["play"]["video"]["frames"] == 10 and s["play"]["error"] is None
    assert s["play"]["episodes"] == result.episode_returns.numel()
    assert "env.observation_noise=false" in s["play"]["overrides"]


def test_play_reports_each_reward_term_and_termination_of_the_deterministic_policy(run_dir):
    steps, n = 60, 3
    result = play(str(run_dir), num_envs=n, steps=steps, record_video=False)
    terms = result.reward_terms
    assert {"track_linear_velocity", "alive", "pose_l2", "feet_phase"} <= set(terms)
    # The terms' contributions add up to the reward the episodes collected.
    total = sum(t["reward"] for t in terms.values()) * steps * n
    assert total == pytest.approx(float(result.episode_returns.sum()), rel=1e-4, abs=1e-6)
    step_dt = result.step_dt
    for name, t in terms.items():
        if t["weight"] > 0:  # not scaled by the penalty curriculum: reward = weight * value * dt
            assert t["reward"] == pytest.approx(t["weight"] * t["value"] * step_dt, rel=1e-5), name
    assert 0.0 <= terms["track_linear_velocity"]["value"] <= 1.0  # an exp kernel
    # is_alive is 0 exactly on the step that terminated an episode.
    assert terms["alive"]["value"] == pytest.approx(1.0 - result.episodes_terminated / (steps * n))
    assert terms["pose_l2"]["value"] > 0 and terms["pose_l2"]["reward"] < 0
    # Every episode a termination term ended counts at least once under that term.
    assert set(result.terminations) >= {"time_out", "fell_over"}
    ended = sum(c for name, c in result.terminations.items() if name != "time_out")
    assert ended >= result.episodes_terminated
    lines = "\n".join(result.lines())
    assert "reward terms, mean per env step" in lines and "track_linear_velocity" in lines
    # the command played is on screen: play's fixed 0.5 m/s, the deadband off
    settings = next(ln for ln in result.lines() if ln.startswith("settings: "))
    assert "env.commands.lin_vel_x=[0.5,0.5]" in settings and "env.commands.lin_vel_deadband=0.0" in settings
    s = summary(run_dir)["play"]
    assert s["reward_terms"]["alive"]["weight"] == 1.0 and s["terminations"] == result.terminations


def test_the_reward_legend_names_the_penalties_the_curriculum_leaves_alone(run_dir):
    def legend(overrides):
        result = play(str(run_dir), num_envs=1, steps=2, record_video=False, overrides=overrides)
        return next(ln for ln in result.lines() if ln.startswith("reward terms, mean per env step"))

    assert legend(["env.penalty_curriculum.late=[]"]).endswith("penalties also x the penalty curriculum's scale):")
    assert legend(["env.penalty_curriculum.exempt=[ang_vel_xy,foot_slip]", "env.penalty_curriculum.late=[]"]).endswith(
        "penalties also x the penalty curriculum's scale, except the exempt ang_vel_xy, foot_slip):")
    assert legend([]).endswith(  # ang_vel_xy is late by default
        "penalties also x the penalty curriculum's scale, except the late ang_vel_xy x (scale - initial) "
        "/ (1 - initial)):")


def test_play_starts_the_penalty_curriculum_at_the_checkpoints_scale(run_dir, tmp_path):
    """A checkpoint that recorded its penalty scale plays at it: the late penalty ang_vel_xy is
    charged ((0.8 - 0.1) / 0.9 of its weight), not unknown at factor 0; the user's start wins."""
    saved = torch.load(run_dir / "model_last.pt", weights_only=True)
    assert saved["curriculum"] == {"Curriculum/penalty_scale": 0.1}  # 2 iterations: no episode ended yet
    late = tmp_path / "late.pt"
    torch.save({**saved, "curriculum": {"Curriculum/penalty_scale": 0.8}}, late)
    result = play(str(run_dir), checkpoint=str(late), num_envs=1, steps=2, record_video=False)
    assert "env.penalty_curriculum.start=0.8" in result.overrides
    assert result.reward_terms["ang_vel_xy"]["value"] is not None
    given = play(str(run_dir), checkpoint=str(late), num_envs=1, steps=2, record_video=False,
                 overrides=["env.penalty_curriculum.start=0.1"])
    assert given.overrides[-1] == "env.penalty_curriculum.start=0.1"
    assert given.reward_terms["ang_vel_xy"]["value"] is None  # factor 0 at initial


def test_fps_must_divide_the_control_rate(run_dir):
    with pytest.raises(UserError, match="--fps 30 is not the control rate"):
        play(str(run_dir), num_envs=1, steps=4, fps=30)
    with pytest.raises(UserError, match="even number"):
        play(str(run_dir), num_envs=1, steps=4, width=321)


def test_no_offscreen_gl_is_one_clear_message_and_the_numbers_stand(run_dir, no_gl):
    result = play(str(run_dir), num_envs=1, steps=4)
    assert result.video is None
    assert result.video_error.startswith("no offscreen OpenGL for MuJoCo (osmesa: libosmesa not found")
    assert "apt-get install libosmesa6" in result.video_error
    assert int(result.episode_lengths.sum()) == 4
    s = summary(run_dir)
    assert s["video"] is None and s["play"]["error"] == result.video_error


def test_training_without_gl_completes_and_records_the_play_error(tmp_path, no_gl):
    # the evaluation that also ends a completed run is test_train's (eval_interval=0: not here)
    run = train("sac", "g1_walk_flat", "mujoco", [*TINY, "training.eval_interval=0", f"training.log_dir={tmp_path}"],
                argv=[])
    s = summary(run)
    assert s["status"] == "normal_completion"
    assert "no offscreen OpenGL" in s["play"]["error"] and s["video"] is None
    assert s["play"]["steps"] > 0 and math.isfinite(s["play"]["episode_return_mean"])
    assert s["onnx"]["verified"] and s["onnx_max_abs_diff"] < 1e-5
    assert (run / "policy.onnx").exists() and (run / "model_last.pt").exists()


def test_after_training_records_failures_instead_of_raising(tmp_path):
    fake = tmp_path / "not_a_run"
    fake.mkdir()
    (fake / "model_last.pt").write_bytes(b"kept")
    out = after_training(fake)
    assert "not a run directory" in out["play"]["error"]
    assert "not a run directory" in out["onnx"]["error"]
    s = summary(fake)
    assert s["video"] is None and s["onnx_max_abs_diff"] is None
    assert (fake / "model_last.pt").read_bytes() == b"kept"


def add_checkpoint(run: Path, iteration: int) -> str:
    """A numbered checkpoint older than the run's last (a copy of it, relabelled)."""
    payload = torch.load(run / "model_last.pt", weights_only=True)
    payload["iteration"] = iteration
    name = f"model_{iteration}.pt"
    torch.save(payload, run / name)
    return name


def test_an_earlier_checkpoint_is_recorded_beside_the_final_play(run_dir, no_gl):
    from unilab.deploy.loading import update_summary

    update_summary(run_dir, video="videos/play_2.mp4")
    final = play(str(run_dir), num_envs=1, steps=4, record_video=False)
    assert final.final and summary(run_dir)["play"]["checkpoint"] == "model_last.pt"
    before = summary(run_dir)
    assert before["video"] == "videos/play_2.mp4", "a play without a video must leave the run's video"
    name = add_checkpoint(run_dir, 1)
    try:
        result = play(str(run_dir), checkpoint=name, num_envs=1, steps=6)
    finally:
        (run_dir / name).unlink()
    assert not result.final and result.iteration == 1
    s = summary(run_dir)
    assert s["play"] == before["play"] and s["video"] == before["video"], "the final play was clobbered"
    entry = s["play_checkpoints"]["1"]
    assert entry["checkpoint"] == name and entry["iteration"] == 1 and entry["steps"] == 6
    assert "no offscreen OpenGL" in entry["error"]
    # The numbered checkpoint the finished run recorded as its last counts as final.
    from unilab.deploy.loading import is_final_checkpoint

    assert is_final_checkpoint(run_dir, run_dir / s["checkpoint"])
    assert not is_final_checkpoint(run_dir, run_dir / "model_1.pt")


@pytest.mark.parametrize(
    "args, expected",
    [
        (["play", "{missing}"], "is not a run directory (no run_config.json)"),
        (["play", "{run}", "--checkpoint", "model_999.pt"], "--checkpoint model_999.pt: no checkpoint 'model_999.pt' in"),
        (["export", "latest", "--log-dir", "{missing}"], "no runs under"),
        (["export", "{run}", "--checkpoint", "model_999.pt"], "(it has: model_last.pt, model_2.pt)"),
        (["play", "{run}", "--num-envs", "0"], "--num-envs must be an integer >= 1, got 0"),
        (["play", "{run}", "--width", "321"], "video width must be an even number >= 16 (H.264), got 321"),
        (["play", "{run}", "env.commands.lin_vel_x=[1.0,-0.5]"],
         "invalid value for env.commands.lin_vel_x: [1.0, -0.5]"),
        (["play", "{run}", "env.comands.lin_vel_x=[1,1]"], "did you mean 'env.commands.lin_vel_x'"),
        (["export", "{run}", "--atol", "-1"], "--atol must be a number >= 0, got -1"),
    ],
    ids=["play-run", "play-checkpoint", "export-latest", "export-checkpoint", "play-num-envs",
         "play-width", "play-override-value", "play-override-key", "export-atol"],
)
def test_missing_run_or_checkpoint_is_one_line_exit_2(run_dir, tmp_path, args, expected, unilab_in_process):
    subst = {"missing": str(tmp_path / "nope"), "run": str(run_dir)}
    result = unilab_in_process(*(a.format(**subst) for a in args), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert expected in lines[0]
    assert "Traceback" not in result.stderr + result.stdout


def test_a_second_play_of_a_checkpoint_keeps_the_first_video(run_dir, monkeypatch):
    """The default video path is never overwritten: play_<it>.mp4, then play_<it>_2.mp4, ..."""
    import unilab.deploy.play as play_module

    def fake_render(mjcf, qpos, path, *, fps, width, height, ghost_qpos=None):
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(f"video {len(list(path.parent.iterdir()))}".encode())
        return video.VideoResult(str(path), len(qpos), width, height, fps, "fake", "", "fake")

    monkeypatch.setattr(play_module, "render_video", fake_render)
    videos = run_dir / "videos"
    for old in videos.glob("play_*.mp4") if videos.exists() else []:
        old.unlink()
    it = play(str(run_dir), num_envs=1, steps=4, fps=25.0).iteration
    first = videos / f"play_{it}.mp4"
    content = first.read_bytes()
    second = play(str(run_dir), num_envs=1, steps=4, fps=25.0)
    third = play(str(run_dir), num_envs=1, steps=4, fps=25.0)
    assert first.read_bytes() == content, "the first video was overwritten"
    assert Path(second.video.path) == videos / f"play_{it}_2.mp4"
    assert Path(third.video.path) == videos / f"play_{it}_3.mp4"
    assert any(line.startswith(f"video: {videos / f'play_{it}_2.mp4'}") for line in second.lines())
    assert summary(run_dir)["video"] == f"videos/play_{it}_3.mp4"


@pytest.mark.parametrize("terminated, words", [
    (0, "(3 episodes, none terminated: they timed out or were cut by the end of play)"),
    (1, "(3 episodes, 1 terminated, the others timed out or were cut by the end of play)"),
    (3, "(3 episodes, all terminated)"),
])
def test_the_episode_line_says_how_the_episodes_ended(terminated, words):
    from unilab.deploy.play import PlayResult

    result = PlayResult(run_dir=Path("."), checkpoint="model_1.pt", iteration=1, num_envs=3, steps=10,
                        step_dt=0.02, episode_returns=torch.ones(3), episode_lengths=torch.full((3,), 10.0),
                        episodes_terminated=terminated, overrides=[], observations=torch.zeros(1))
    line = next(ln for ln in result.lines() if ln.startswith("episode return"))
    assert line.endswith(words), line


@pytest.mark.parametrize("curriculum", [False, True])
def test_the_reward_legend_names_a_penalty_curriculum_only_where_the_env_has_one(curriculum):
    """g1_motion_tracking has no penalty curriculum: its legend does not mention one."""
    from unilab.deploy.play import PlayResult

    result = PlayResult(run_dir=Path("."), checkpoint="model_1.pt", iteration=1, num_envs=1, steps=10,
                        step_dt=0.02, episode_returns=torch.ones(1), episode_lengths=torch.full((1,), 10.0),
                        episodes_terminated=0, overrides=[], observations=torch.zeros(1),
                        reward_terms={"action_rate_l2": {"weight": -0.1, "value": 0.5, "reward": -0.001}},
                        penalty_curriculum=curriculum)
    legend = next(ln for ln in result.lines() if ln.startswith("reward terms, mean per env step"))
    assert ("penalty curriculum" in legend) is curriculum, legend
    assert legend.endswith("x step_dt):") is not curriculum, legend


def test_the_recorded_settings_give_each_key_once_with_the_value_that_won(run_dir):
    """The user's value for a key the play settings also set replaces it in the record, so the
    record (play's summary, the ONNX ``source.overrides``) can be given back as overrides."""
    loaded = run_config(run_dir, ["env.push.enabled=true"], checkpoint=run_dir / "model_last.pt", payload={})
    push = [o for o in loaded.overrides if o.startswith("env.push.enabled=")]
    assert push == ["env.push.enabled=true"]
    assert loaded.cfg.env.push.enabled is True
    parse_overrides(loaded.overrides)  # no key twice
    again = run_config(run_dir, loaded.overrides, checkpoint=run_dir / "model_last.pt", payload={})
    assert again.cfg.model_dump() == loaded.cfg.model_dump()


def test_settings_that_only_shape_training_are_named_as_ignored(run_dir, capsys):
    """training.* (but the env's seed) and runtime.* keys cannot change a rollout: play says so,
    one warning line each, and plays the worlds --num-envs asks for."""
    result = play(str(run_dir), num_envs=2, steps=4, record_video=False,
                  overrides=["training.num_envs=8", "runtime.num_collectors=2", "training.seed=3"])
    warnings = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("warning:")]
    assert len(warnings) == 2, warnings
    assert warnings[0].startswith("warning: training.num_envs=8 does not change unilab play")
    assert warnings[1].startswith("warning: runtime.num_collectors=2 does not change unilab play")
    assert result.num_envs == 2 and int(result.episode_lengths.sum()) == 2 * 4
