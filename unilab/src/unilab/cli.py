"""The ``unilab`` command.

    unilab train --algo sac --task g1_walk_flat --sim mujoco training.max_iterations=100
    unilab play latest            # roll out the last checkpoint, print returns, write an mp4
    unilab export latest          # policy.onnx with metadata, verified against torch
    unilab eval latest            # the task's evaluation suite: table, JSON, run_summary.json
    unilab plugins
    unilab config --algo sac --task g1_walk_flat --preset laptop   # every key, resolved, as YAML
    unilab motion import clip.csv --out clip.npz     # CSV or npz of any known layout -> npz (50 fps)
    unilab motion inspect clip.npz

Bad input (unknown name, key or value) prints one ``error:`` line and exits with code 2.
"""

from __future__ import annotations

import faulthandler
import logging
import sys
from typing import List, Optional

import typer

from unilab.cli_help import HelpCommand, HelpGroup
from unilab.deploy import DEFAULT_ATOL, DEFAULT_NUM_ENVS, DEFAULT_STEPS

app = typer.Typer(
    cls=HelpGroup,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="UniLab: off-policy RL for humanoids on CPU MuJoCo physics.",
)


class _OverridesCommand(HelpCommand):
    """A command that takes ``key=value`` overrides: an unknown ``--option`` (e.g. ``--num_envs 8``,
    as other frameworks spell settings) gets a hint to write it as an override."""

    def parse_args(self, ctx, args: list[str]) -> list[str]:  # noqa: ANN001 (click's Context)
        try:
            return super().parse_args(ctx, args)
        except Exception as exc:  # click's NoSuchOption (typer >= 0.20 vendors click as typer._click)
            if type(exc).__name__ != "NoSuchOption":
                raise
            if exc.option_name.startswith("--") and not exc.possibilities:  # not a misspelt option
                name = exc.option_name[2:].replace("-", "_")
                exc.message = (
                    f"No such option: {exc.option_name}. Settings are key=value overrides after the "
                    f"options: write {name}=VALUE and unilab names its full key (as in "
                    f"training.max_iterations=100), or list every key with `unilab config --algo A --task T`"
                )
            raise


def _fail(message: str, code: int = 2) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


@app.callback()
def main(
    verbose: bool = typer.Option(False, "--verbose", "-v", help="log at INFO level"),
) -> None:
    """UniLab command line."""
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )


@app.command(cls=_OverridesCommand, context_settings={"allow_extra_args": False})
def train(
    algo: str = typer.Option(..., "--algo", help="learning algorithm (see `unilab plugins`)"),
    task: str = typer.Option(..., "--task", help="task (see `unilab plugins`)"),
    sim: str = typer.Option("mujoco", "--sim", help="simulator backend (see `unilab plugins`)"),
    preset: Optional[str] = typer.Option(
        None, "--preset", help="owner preset of this algo x task x sim, e.g. 'laptop'"
    ),
    overrides: Optional[List[str]] = typer.Argument(
        None, help="key.sub=value overrides, e.g. training.max_iterations=100 training.seed=3"
    ),
) -> None:
    """Train a policy and write a run directory under training.log_dir."""
    from unilab.errors import RunFailed
    from unilab.runs import os_error_line
    from unilab.train import TrainingInterrupted, UserError
    from unilab.train import train as run_train
    from unilab_rl.async_runtime import CollectorDied

    # A fatal signal (a crash in native code) prints the Python stacks to stderr instead of
    # ending the run without a word.
    faulthandler.enable()
    try:
        code = _launch_ranks(algo, task, sim, overrides or [], preset)
        if code is not None:  # several ranks ran (and printed) as child processes
            raise typer.Exit(code)
        run_dir = run_train(algo, task, sim, overrides or [], preset, argv=sys.argv)
    except UserError as exc:
        _fail(str(exc))
    except CollectorDied as exc:
        typer.echo(str(exc), err=True)  # first line: what happened; then the collector's traceback
        _fail(f"training failed: {str(exc).splitlines()[0]}; checkpoint and run_summary.json saved", code=1)
    except TrainingInterrupted as exc:
        typer.echo(f"training stopped by {exc}: checkpoint and run_summary.json saved in the run directory", err=True)
        raise typer.Exit(130 if exc.signum == 2 else 143)
    except RunFailed as exc:
        _fail(f"training failed: {exc}; status and last checkpoint in {exc.run_dir}", code=1)
    except OSError as exc:  # before the run could record anything (e.g. a full disk at the start)
        _fail(f"training failed: {os_error_line(exc)}", code=1)
    if run_dir is None:  # a rank other than 0: rank 0 reports
        return
    typer.echo(f"run directory: {run_dir}")
    _echo_play_and_export(run_dir)


def _launch_ranks(algo: str, task: str, sim: str, overrides: list[str], preset: Optional[str]) -> Optional[int]:
    """``training.devices`` with several entries, outside torchrun: check the whole config here (a
    bad value is one line, before any process starts), then run the ranks through torch's elastic
    launcher and return their exit code. None: train in this process."""
    from unilab import ddp
    from unilab.train import UserError, prepare

    if ddp.under_torchrun():
        return None
    _, _, _, cfg = prepare(algo, task, sim, overrides, preset)
    try:
        devices = ddp.parse_devices(cfg.training.devices)
    except ddp.DevicesError as exc:
        raise UserError(str(exc)) from None
    if devices is None or len(devices) == 1:
        return None
    if cfg.training.device != "auto":
        raise UserError(f"training.device={cfg.training.device} and training.devices are both set: set training.devices alone")
    if cfg.sim.cpu_ids:
        raise UserError("sim.cpu_ids is set: leave it unset with several ranks (each rank takes its share of the cores)")
    typer.echo(f"training on {len(devices)} ranks: {', '.join(devices)}", err=True)
    return ddp.launch(devices, sys.argv)


def _echo_play_and_export(run_dir) -> None:
    """One line each for the play and export that ended training (from run_summary.json)."""
    import json

    try:
        summary = json.loads((run_dir / "run_summary.json").read_text())
    except (OSError, ValueError):
        return
    play, onnx = summary.get("play"), summary.get("onnx")
    if summary.get("video"):
        typer.echo(f"video: {run_dir / summary['video']}")
    if play and play.get("error"):
        typer.echo(f"warning: play: {play['error']}", err=True)
    if onnx and onnx.get("path"):
        typer.echo(f"onnx: {run_dir / onnx['path']} (max |onnx - torch| {onnx['max_abs_diff']:.3g})")
    if onnx and onnx.get("error"):
        typer.echo(f"warning: export: {onnx['error']}", err=True)


_RUN_HELP = "run directory, or 'latest' (the newest run under --log-dir)"
_MODEL_FILE_HELP = "robot.mjcf=FILE: the model file the run trained on, at its new path (the only setting taken)"
_EVAL_OVERRIDES_HELP = (
    "robot.mjcf=FILE: the model file the run trained on, at its new path (the only setting taken); with "
    "--transfer: robot.mjcf=FILE, robot.feet=project|model|spheres, robot.actuators=project|file, the model to "
    "evaluate on"
)


@app.command(cls=HelpCommand, context_settings={"allow_extra_args": False})
def play(
    run: str = typer.Argument(..., help=_RUN_HELP),
    checkpoint: Optional[str] = typer.Option(
        None, "--checkpoint", help="checkpoint in the run, e.g. model_100.pt (default: model_last.pt)"
    ),
    num_envs: int = typer.Option(DEFAULT_NUM_ENVS, "--num-envs", help="worlds rolled out; the video shows world 0"),
    steps: int = typer.Option(DEFAULT_STEPS, "--steps", help="env steps (250 = 5 s at 50 Hz)"),
    video: Optional[str] = typer.Option(
        None, "--video", help="mp4 to write (default: <run>/videos/play_<iteration>.mp4, or _2, _3, ... if taken)"
    ),
    no_video: bool = typer.Option(False, "--no-video", help="roll out and report, no rendering"),
    width: int = typer.Option(640, "--width", help="frame width, pixels (even)"),
    height: int = typer.Option(480, "--height", help="frame height, pixels (even)"),
    fps: Optional[float] = typer.Option(
        None, "--fps", help="control rate / a whole number (default: the highest such <= 30)"
    ),
    log_dir: str = typer.Option("logs", "--log-dir", help="where 'latest' looks"),
    overrides: Optional[List[str]] = typer.Argument(
        None, help="key.sub=value over the run's config and the play settings, e.g. env.commands.lin_vel_x=[1,1]"
    ),
) -> None:
    """Roll a checkpoint's policy out: episode return and length, and an mp4.

    The deterministic policy runs with the task's play settings (no noise, no pushes, a fixed
    command); the video shows world 0, rendered offscreen by MuJoCo (EGL or OSMesa). Exit 2 on bad
    input, 1 when the video could not be written.
    """
    from unilab.deploy.play import play as run_play
    from unilab.train import UserError

    try:
        result = run_play(
            run, checkpoint=checkpoint, num_envs=num_envs, steps=steps, video=video,
            record_video=not no_video, width=width, height=height, fps=fps, log_dir=log_dir,
            overrides=overrides or [],
        )
    except UserError as exc:
        _fail(str(exc))
    for line in result.lines():
        typer.echo(line)
    if result.video_error:
        _fail(result.video_error, 1)


@app.command(cls=HelpCommand, context_settings={"allow_extra_args": False})
def export(
    run: str = typer.Argument(..., help=_RUN_HELP),
    checkpoint: Optional[str] = typer.Option(
        None, "--checkpoint", help="checkpoint in the run, e.g. model_100.pt (default: model_last.pt)"
    ),
    output: Optional[str] = typer.Option(None, "--output", "-o", help="ONNX file (default: <run>/policy.onnx)"),
    atol: float = typer.Option(DEFAULT_ATOL, "--atol", help="largest |onnx - torch| accepted, in action units"),
    log_dir: str = typer.Option("logs", "--log-dir", help="where 'latest' looks"),
    overrides: Optional[List[str]] = typer.Argument(None, help=_MODEL_FILE_HELP),
) -> None:
    """Write policy.onnx and check it against the torch policy.

    The normalizer is in the graph; the observation layout, joint names, action scale and offsets,
    default pose and control rate are metadata. Checked with onnx.checker, then compared with torch
    in onnxruntime on random and recorded observations. robot.mjcf=FILE names the run's model file
    at a new path. Exit 2 on bad input, 1 when the export fails or the difference exceeds --atol.
    """
    from unilab.deploy.export import ExportError
    from unilab.deploy.export import export as run_export
    from unilab.train import UserError

    try:
        result = run_export(run, checkpoint=checkpoint, output=output, atol=atol, log_dir=log_dir,
                            overrides=overrides or [])
    except UserError as exc:
        _fail(str(exc))
    except ExportError as exc:
        _fail(str(exc), 1)
    for line in result.lines():
        typer.echo(line)
    if not result.verified:
        raise typer.Exit(1)


@app.command("eval", cls=HelpCommand, context_settings={"allow_extra_args": False})
def eval_command(
    run: str = typer.Argument(..., help=_RUN_HELP),
    checkpoint: Optional[str] = typer.Option(
        None, "--checkpoint",
        help="model_N.pt, model_last.pt or an .onnx file (default: model_last.pt, else the newest checkpoint, "
        "else policy.onnx)",
    ),
    suite: Optional[str] = typer.Option(None, "--suite", help="the task's suite (default: its first)"),
    case: Optional[List[str]] = typer.Option(
        None, "--case", help="cases (walking) or clips (tracking), comma-separated or repeated; default: all"
    ),
    num_envs: Optional[int] = typer.Option(
        None, "--num-envs", help="rows per case (walking) or random starts per clip (tracking)"
    ),
    json_out: Optional[str] = typer.Option(
        None, "--json", help="JSON record to write (default: <run>/eval_<suite>.json)"
    ),
    seed: int = typer.Option(0, "--seed", help="seed of the env's draws"),
    log_dir: str = typer.Option("logs", "--log-dir", help="where 'latest' looks"),
    transfer: bool = typer.Option(
        False, "--transfer",
        help="evaluate on another robot model than the run trained on (robot.mjcf, robot.feet, robot.actuators "
        "after the run); the record goes to <run>/eval_<suite>_transfer.json, not run_summary.json",
    ),
    overrides: Optional[List[str]] = typer.Argument(None, help=_EVAL_OVERRIDES_HELP),
) -> None:
    """Evaluate the deterministic policy with the task's suite: a table, a JSON record and an
    'eval' entry in run_summary.json (docs/eval.md).

    Works from a checkpoint or from policy.onnx alone. robot.mjcf=FILE names the run's model file
    at a new path. --transfer robot.feet=spheres (or robot.mjcf=FILE, robot.actuators=file)
    evaluates the policy on another robot model, a sim-to-sim transfer check whose record never
    replaces the run's own. Exit 0 whether or not the suite passes (the verdict is in the output),
    2 on bad input.
    """
    from unilab.eval.runner import evaluate
    from unilab.train import UserError

    cases = [c.strip() for item in case or [] for c in item.split(",") if c.strip()] or None
    try:
        evaluate(run, checkpoint=checkpoint, suite=suite, cases=cases, num_envs=num_envs, json_path=json_out,
                 log_dir=log_dir, seed=seed, overrides=overrides or [], transfer=transfer)
    except UserError as exc:
        _fail(str(exc))


@app.command("config", cls=_OverridesCommand, context_settings={"allow_extra_args": False})
def show_config(
    algo: str = typer.Option(..., "--algo", help="learning algorithm (see `unilab plugins`)"),
    task: str = typer.Option(..., "--task", help="task (see `unilab plugins`)"),
    sim: str = typer.Option("mujoco", "--sim", help="simulator backend (see `unilab plugins`)"),
    preset: Optional[str] = typer.Option(None, "--preset", help="owner preset, e.g. 'laptop'"),
    overrides: Optional[List[str]] = typer.Argument(None, help="key.sub=value overrides, as for train"),
) -> None:
    """Print the resolved config of a train command (YAML, every key) and the task's presets.

    Takes the arguments of 'unilab train', builds nothing, writes nothing: code defaults, the
    owner YAML, the preset and the overrides, every key and value checked as train checks them
    before it builds (files such as robot.mjcf and env.motion.file are opened by train).
    """
    import yaml

    from unilab.build import algo_settings
    from unilab.train import UserError, prepare

    try:
        algo_reg, task_reg, _, cfg = prepare(algo, task, sim, overrides or [], preset)
        algo_settings(algo_reg, cfg)
    except UserError as exc:
        _fail(str(exc))
    typer.echo(yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False).rstrip())
    folder = task_reg.item.owner_configs
    presets = sorted(p.name.split(".")[1] for p in folder.glob(f"{algo}_{sim}.*.yaml")) if folder else []
    typer.echo(f"# presets of --algo {algo} --task {task} --sim {sim}: {', '.join(presets) or '(none)'}")


@app.command(cls=HelpCommand)
def plugins() -> None:
    """List every simulator backend, algorithm, task and robot with its distribution and version."""
    from rich.console import Console
    from rich.table import Table

    from unilab.plugins import all_registries, report_failures

    table = Table("kind", "name", "distribution", "version", "description")
    for registry in all_registries():
        try:
            registrations = registry.registrations()
        except Exception as exc:  # noqa: BLE001 - strict mode: report and exit non-zero
            _fail(str(exc), 1)
        for reg in registrations:
            desc = reg.meta.get("description") or getattr(reg.item, "description", "")
            table.add_row(registry.kind, reg.name, reg.distribution, reg.version, desc)
    # Off a terminal (pipes, CI) rich assumes 80 columns; use a wide line so no name wraps.
    Console(width=None if sys.stdout.isatty() else 200).print(table)
    report_failures()


from unilab.motion.cli import motion_app  # noqa: E402 - the `unilab motion` subcommands

app.add_typer(motion_app, name="motion")


if __name__ == "__main__":  # pragma: no cover
    app()
