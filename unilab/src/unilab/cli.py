"""The ``unilab`` command.

    unilab train --algo sac --task g1_walk_flat --sim mujoco algo.max_iterations=100
    unilab plugins

Bad input (unknown name, key or value) prints one ``error:`` line and exits with code 2.
"""

from __future__ import annotations

import logging
import sys
from typing import List, Optional

import typer

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="UniLab: off-policy RL for humanoids on CPU MuJoCo physics.",
)


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


@app.command(context_settings={"allow_extra_args": False})
def train(
    algo: str = typer.Option(..., "--algo", help="learning algorithm (see `unilab plugins`)"),
    task: str = typer.Option(..., "--task", help="task (see `unilab plugins`)"),
    sim: str = typer.Option("mujoco", "--sim", help="simulator backend (see `unilab plugins`)"),
    preset: Optional[str] = typer.Option(
        None, "--preset", help="owner preset of this algo x task x sim, e.g. 'laptop'"
    ),
    overrides: Optional[List[str]] = typer.Argument(
        None, help="key.sub=value overrides, e.g. algo.max_iterations=100 training.seed=3"
    ),
) -> None:
    """Train a policy and write a run directory under training.log_dir."""
    from unilab.train import TrainingInterrupted, UserError
    from unilab.train import train as run_train

    try:
        run_dir = run_train(algo, task, sim, overrides or [], preset, argv=sys.argv)
    except UserError as exc:
        _fail(str(exc))
    except TrainingInterrupted as exc:
        typer.echo(f"training {exc}: checkpoint and run_summary.json saved", err=True)
        raise typer.Exit(130 if exc.signum == 2 else 143)
    typer.echo(f"run directory: {run_dir}")


@app.command()
def plugins() -> None:
    """List every simulator backend, algorithm and task with its distribution and version."""
    from rich.console import Console
    from rich.table import Table

    from unilab.plugins import all_registries

    table = Table("kind", "name", "distribution", "version", "description")
    failures = []
    for registry in all_registries():
        try:
            registrations = registry.registrations()
        except Exception as exc:  # noqa: BLE001 - strict mode: report and exit non-zero
            _fail(str(exc), 1)
        for reg in registrations:
            desc = reg.meta.get("description") or getattr(reg.item, "description", "")
            table.add_row(registry.kind, reg.name, reg.distribution, reg.version, desc)
        failures += registry.failures
    # Off a terminal (pipes, CI) rich assumes 80 columns; use a wide line so no name wraps.
    Console(width=None if sys.stdout.isatty() else 200).print(table)
    for failure in failures:
        typer.echo(f"warning: {failure}", err=True)


if __name__ == "__main__":  # pragma: no cover
    app()
