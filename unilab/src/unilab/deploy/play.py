"""``unilab play``: roll a checkpoint's deterministic policy out with the task's play settings,
report episode return and length, and write an mp4 of world 0.

    unilab play logs/sac/g1_walk_flat/2026-01-01_12-00-00_mujoco
    unilab play latest --checkpoint model_100.pt --num-envs 8 --steps 500 --video walk.mp4
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from unilab.deploy import DEFAULT_NUM_ENVS, DEFAULT_STEPS
from unilab.deploy.loading import (
    deployed_actor, load_run, make_env, make_policy, record_result, relative_to_run, rollout,
)
from unilab.deploy.video import VideoError, VideoResult, check_frame_size, frame_stride, render_video
from unilab.errors import UserError

# Keys play keeps (the env's seed); every other training.* and runtime.* key sets how a run trains.
PLAY_USES = ("training.seed",)


def ignored_by_play(overrides: list[str] | tuple[str, ...]) -> list[str]:
    """The overrides that cannot change a rollout: ``training.*`` (but ``training.seed``, the
    env's seed) and ``runtime.*`` set how a run trains (its worlds, iterations, processes), and
    play builds neither; ``--num-envs`` and ``--steps`` size a rollout.

    Args:
        overrides: ``key.sub=value`` strings, as given to :func:`play`.

    Returns:
        Those of ``overrides`` that play ignores, in their order.
    """
    out = []
    for item in overrides:
        key = item.split("=", 1)[0].strip()
        if key.startswith(("training.", "runtime.")) and key not in PLAY_USES:
            out.append(item)
    return out


@dataclass
class PlayResult:
    """What :func:`play` did.

    Attributes:
        run_dir: the run directory.
        checkpoint: checkpoint file name (in ``run_dir``) or path.
        iteration: the checkpoint's training iteration.
        num_envs, steps: worlds and env steps rolled out.
        step_dt: env step, s.
        episode_returns: (E,) float64 returns of the episodes, ended or cut by the end of play.
        episode_lengths: (E,) int64 their lengths, env steps.
        episodes_terminated: how many of them a termination term ended (a fall).
        overrides: the config overrides of the play settings and the user.
        observations: (steps * num_envs, obs_dim) float32 observations the policy saw (for
            :func:`unilab.deploy.export.export`'s check; not written to the summary).
        video: the written video, or None.
        video_error: why no video was written (None if it was, or if none was asked for).
        final: the checkpoint is the run's last (its record is the summary's ``play``; others go
            under ``play_checkpoints``).
        actor: which actor the policy is, in words
            (:attr:`unilab.deploy.loading.LoadedRun.deployed_actor`).
        reward_terms: term -> ``{"weight", "value", "reward"}``: the mean of each reward term and
            of its contribution per env step over the rollout
            (:attr:`unilab.deploy.loading.Rollout.reward_terms`): what the deterministic policy
            earns, unlike the training log's ``Episode_Reward/*`` (the exploring policy).
        terminations: term -> times it fired during the rollout.
        penalty_curriculum: the env scales its penalties by a penalty curriculum (g1_walk_flat's
            ``env.penalty_curriculum``); the reward legend names it only then.
        penalty_exempt: the penalties the env's penalty curriculum leaves at full weight
            (``env.penalty_curriculum.exempt``); empty without a curriculum.
        penalty_late: the penalties the curriculum starts at zero (``env.penalty_curriculum.late``).
    """

    run_dir: Path
    checkpoint: str
    iteration: int
    num_envs: int
    steps: int
    step_dt: float
    episode_returns: torch.Tensor
    episode_lengths: torch.Tensor
    episodes_terminated: int
    overrides: list[str]
    observations: torch.Tensor = field(repr=False)
    video: VideoResult | None = None
    video_error: str | None = None
    final: bool = True
    actor: str = deployed_actor(0.0)
    reward_terms: dict[str, dict[str, float | None]] = field(default_factory=dict)
    terminations: dict[str, int] = field(default_factory=dict)
    penalty_curriculum: bool = False
    penalty_exempt: tuple[str, ...] = ()
    penalty_late: tuple[str, ...] = ()

    def summary(self) -> dict[str, Any]:
        """The JSON-able ``play`` entry of ``run_summary.json`` (docs/play_export.md)."""
        r, n = self.episode_returns, self.episode_lengths.double()
        return {
            "checkpoint": self.checkpoint,
            "iteration": self.iteration,
            "num_envs": self.num_envs,
            "steps": self.steps,
            "duration_s": round(self.steps * self.step_dt, 6),
            "episodes": int(r.numel()),
            "episodes_terminated": self.episodes_terminated,
            "episode_return_mean": _round(r.mean()),
            "episode_return_std": _round(r.std(unbiased=False)),
            "episode_length_mean": _round(n.mean()),
            "reward_terms": {
                name: {k: None if v is None else round(v, 6) for k, v in term.items()}
                for name, term in self.reward_terms.items()
            },
            "terminations": dict(self.terminations),
            "overrides": self.overrides,
            "video": None if self.video is None else {
                **self.video.to_dict(), "path": relative_to_run(Path(self.video.path), self.run_dir)
            },
            "error": self.video_error,
        }

    def lines(self) -> list[str]:
        """Human-readable report, one item per line."""
        s = self.summary()
        n, ended = self.episodes_terminated, s["episodes"]
        how = ("none terminated: they timed out or were cut by the end of play" if n == 0
               else "all terminated" if n == ended
               else f"{n} terminated, the others timed out or were cut by the end of play")
        out = [
            f"play: {self.checkpoint} (iteration {self.iteration}; {self.actor}), {self.num_envs} envs x "
            f"{self.steps} steps ({s['duration_s']:g} s at {1.0 / self.step_dt:g} Hz)",
            f"episode return {s['episode_return_mean']:.3f} +- {s['episode_return_std']:.3f}, length "
            f"{s['episode_length_mean']:.1f} steps ({ended} episodes, {how})",
        ]
        if self.overrides:  # the play settings, then the user's: what the policy was asked to do
            out.append(f"settings: {' '.join(self.overrides)}")
        if self.reward_terms:
            exempt = f", except the exempt {', '.join(self.penalty_exempt)}" if self.penalty_exempt else ""
            if self.penalty_late:
                exempt += f"{',' if exempt else ', except'} the late {', '.join(self.penalty_late)} x (scale - initial) / (1 - initial)"
            scaled = f", penalties also x the penalty curriculum's scale{exempt}" if self.penalty_curriculum else ""
            out.append(f"reward terms, mean per env step (value of the term; reward = weight x value x step_dt{scaled}):")
            width = max(len(name) for name in self.reward_terms)
            for name, term in self.reward_terms.items():
                value = "-" if term["value"] is None else f"{term['value']:.3f}"
                out.append(f"  {name:<{width}} {value:>8}  weight {term['weight']:g}, reward {term['reward']:+.4f}")
        if self.terminations:
            fired = ", ".join(f"{name} {count}" for name, count in self.terminations.items() if count)
            out.append(f"terminations (times each term fired; one step can fire several): {fired or 'none'}")
        if self.video is not None:
            v = self.video
            out.append(f"video: {v.path} ({v.frames} frames, {v.width}x{v.height}, {v.fps:g} fps, "
                       f"{v.encoder}, {v.gl})")
        return out


def default_video_path(run_dir: Path, iteration: int) -> Path:
    """The first free one of ``<run>/videos/play_<iteration>.mp4``, ``play_<iteration>_2.mp4``,
    ``play_<iteration>_3.mp4``, ...: a second play of a checkpoint (other commands, other
    overrides) keeps the earlier video."""
    folder = Path(run_dir) / "videos"
    path, n = folder / f"play_{iteration}.mp4", 1
    while path.exists():
        n += 1
        path = folder / f"play_{iteration}_{n}.mp4"
    return path


def _round(x: torch.Tensor) -> float | None:
    value = float(x)
    return None if math.isnan(value) else round(value, 6)


def play(
    run: str,
    *,
    checkpoint: str | None = None,
    num_envs: int = DEFAULT_NUM_ENVS,
    steps: int = DEFAULT_STEPS,
    video: str | Path | None = None,
    record_video: bool = True,
    width: int = 640,
    height: int = 480,
    fps: float | None = None,
    log_dir: str | Path = "logs",
    overrides: list[str] | tuple[str, ...] = (),
) -> PlayResult:
    """Roll the deterministic policy out and write a video; record both in ``run_summary.json``.

    Args:
        run: run directory or ``latest``.
        checkpoint: checkpoint in the run (default ``model_last.pt``).
        num_envs: worlds rolled out (the video shows world 0).
        steps: env steps.
        video: mp4 path, overwritten if it exists (default: :func:`default_video_path`, which
            never overwrites).
        record_video: False skips rendering.
        width, height: frame size, pixels (even, >= 16).
        fps: frames per second; the control rate divided by a whole number (default: the highest
            such rate <= 30, 25 fps for 50 Hz).
        log_dir: where ``latest`` looks.
        overrides: ``key.sub=value`` over the run's config and the play settings.

    Returns:
        The :class:`PlayResult`. A video that could not be written (no OpenGL, no encoder) is
        reported in ``video_error``, not raised: the rollout's numbers stand. The run's final
        checkpoint is recorded as the summary's ``play`` and ``video``; any other checkpoint under
        ``play_checkpoints[<iteration>]``, leaving those alone.

    Raises:
        UserError: no such run or checkpoint, bad options or overrides.
    """
    for name, value in (("--num-envs", num_envs), ("--steps", steps)):
        if value < 1:
            raise UserError(f"{name} must be an integer >= 1, got {value}")
    for item in ignored_by_play(overrides):
        print(f"warning: {item} does not change unilab play: training.* and runtime.* set how a run trains "
              f"(--num-envs and --steps size the rollout)", file=sys.stderr, flush=True)
    loaded = load_run(run, checkpoint, log_dir=log_dir, overrides=overrides)
    env = make_env(loaded, num_envs)
    try:
        if getattr(env, "step_dt", None) is None:
            raise UserError(f"the {loaded.task!r} env has no step_dt (control period); it cannot be played")
        step_dt = float(env.step_dt)
        stride = 0
        if record_video:
            try:
                check_frame_size(width, height)
                stride = frame_stride(1.0 / step_dt, fps)
            except VideoError as exc:
                raise UserError(str(exc)) from None
            if steps < stride:
                raise UserError(f"--steps {steps} is shorter than one video frame ({stride} steps)")
        policy, group = make_policy(loaded, env)
        rec = rollout(env, policy, steps, group=group, frame_stride=stride)
        mjcf = getattr(getattr(env, "cfg", None), "mjcf", None)
        curriculum = getattr(getattr(env, "reward_manager", None), "curriculum", None)
    finally:
        env.close()

    result = PlayResult(
        run_dir=loaded.run_dir,
        checkpoint=relative_to_run(loaded.checkpoint, loaded.run_dir),
        iteration=loaded.iteration,
        actor=loaded.deployed_actor,
        num_envs=num_envs,
        steps=steps,
        step_dt=step_dt,
        episode_returns=rec.returns,
        episode_lengths=rec.lengths,
        episodes_terminated=int(rec.terminated.sum()),
        overrides=loaded.overrides,
        observations=rec.observations,
        final=loaded.final,
        reward_terms=rec.reward_terms,
        terminations=rec.terminations,
        penalty_curriculum=curriculum is not None,
        penalty_exempt=tuple(getattr(curriculum, "exempt", ())),
        penalty_late=tuple(getattr(curriculum, "late", ())),
    )
    if record_video:
        path = Path(video) if video else default_video_path(loaded.run_dir, loaded.iteration)
        try:
            if mjcf is None:
                raise VideoError(f"the {loaded.task!r} env has no cfg.mjcf to render")
            ghost = None if rec.reference_qpos is None else rec.reference_qpos.numpy()  # tracking: the reference
            result.video = render_video(
                mjcf, rec.qpos.numpy(), path, fps=1.0 / (step_dt * stride), width=width, height=height,
                ghost_qpos=ghost,
            )
        except VideoError as exc:
            result.video_error = str(exc)
    entry = result.summary()
    # The summary's `video` is the run's video: a play without one (--no-video) leaves it alone.
    final_fields = {"video": entry["video"]["path"] if entry["video"] else None} if record_video else {}
    record_result(loaded.run_dir, loaded, "play", entry, **final_fields)
    return result


__all__ = ["PlayResult", "default_video_path", "play"]
