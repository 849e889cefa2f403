"""Run configuration: code defaults, owner YAML, presets and ``key.sub=value`` overrides, validated
by pydantic before anything runs.

Layers, later wins: the pydantic defaults of each section, the task's owner YAML for this
algo × sim (``<algo>_<sim>.yaml``), an optional preset (``<algo>_<sim>.<preset>.yaml``), then the
command line's overrides. Every key of every layer is checked: an unknown key is an error that names
the closest valid key, and a value of the wrong type names the key, the value and what was expected.

Sections: ``algo`` (the algorithm's config dataclass), ``env`` (the task's settings), ``sim``
(physics threads), ``robot`` (robot, model file, drives), ``training`` (seed, log_dir, device, ...).
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import typing
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator


class ConfigError(ValueError):
    """A configuration problem, worded as one line for the user."""


# ============================================================================ shared sections
class SimConfig(BaseModel):
    """Physics settings shared by every backend."""

    model_config = ConfigDict(extra="forbid")
    nthread: int = Field(0, ge=0, description="physics threads; 0 = one per available core")
    cpu_ids: list[int] | None = Field(None, description="cores to pin physics threads to (Linux)")


class RobotConfig(BaseModel):
    """Robot model settings (docs/robots.md)."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field("g1", description="robot description (see `unilab plugins`): joints, drives, pose, feet")
    mjcf: str | None = Field(
        None, description="MJCF of that robot, e.g. a Menagerie checkout's g1.xml or scene.xml; joints and "
        "bodies matched by name; a relative path is taken from the current directory"
    )
    actuators: Literal["project", "file"] = Field(
        "project", description="project: the robot's tuned drives replace the file's (a table shows what "
        "differs); file: keep the file's actuators and derive the action scale from them"
    )

    @field_validator("mjcf")
    @classmethod
    def _absolute_mjcf(cls, value: str | None) -> str | None:
        # stored absolute, so play and export find the file from any working directory
        return None if value is None else os.path.abspath(os.path.expanduser(value))


class TrainingConfig(BaseModel):
    """Run-level settings (names as in the original system)."""

    model_config = ConfigDict(extra="forbid")
    seed: int = Field(1, description="seed of torch, numpy and the env's generator")
    log_dir: str = Field("logs", description="root of the run directories")
    no_play: bool = Field(False, description="skip play + export after training")
    device: str = Field("auto", description="learner device: auto, cuda, cuda:N, xpu, mps or cpu")
    devices: list[int | str] | str | None = Field(
        None,
        description="several learners, one rank each (torch.distributed): CUDA indices [0,1] (NCCL) "
        "or cpu:N (N gloo ranks on the CPU); algo.num_envs and algo.batch_size are per rank; unset: "
        "one process on training.device",
    )
    checkpoint_interval: int = Field(500, ge=1, description="iterations between checkpoints")
    keep_checkpoints: int = Field(
        5, ge=1, description="numbered checkpoints kept (the oldest are deleted); model_last.pt always"
    )
    log_interval: int = Field(10, ge=1, description="iterations between metric writes")
    progress: bool | None = Field(
        None,
        description="true: progress bar; false: none; unset: a bar in a terminal, else a plain "
        "line (iteration, env steps/s, mean reward, mean episode length) every 10 s",
    )


# ============================================================================ dataclass -> model
def model_from_dataclass(cls: type) -> type[BaseModel]:
    """A pydantic model (extra keys forbidden) with the fields, types and defaults of ``cls``."""
    hints = typing.get_type_hints(cls)
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            default = f.default_factory()  # type: ignore[misc]
        else:
            default = ...
        fields[f.name] = (hints[f.name], default)
    return create_model(f"{cls.__name__}Model", __config__=ConfigDict(extra="forbid"), **fields)


def build_run_model(algo_config_cls: type, task_config_cls: type[BaseModel]) -> type[BaseModel]:
    """The whole run's pydantic model for one algo and one task."""
    algo_model = model_from_dataclass(algo_config_cls)
    return create_model(
        "RunConfig",
        __config__=ConfigDict(extra="forbid"),
        algo=(algo_model, algo_model()),
        env=(task_config_cls, task_config_cls()),
        sim=(SimConfig, SimConfig()),
        robot=(RobotConfig, RobotConfig()),
        training=(TrainingConfig, TrainingConfig()),
    )


# ============================================================================ keys
def valid_keys(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Every dotted key of ``model``, nested sections included."""
    keys = []
    for name, info in model.model_fields.items():
        key = f"{prefix}{name}"
        keys.append(key)
        ann = info.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            keys += valid_keys(ann, key + ".")
    return keys


def _first_leaf(tree: Any, key: str) -> str:
    """The first full dotted key under ``key`` in ``tree`` (``key`` itself for a value)."""
    while isinstance(tree, dict) and tree:
        name, tree = next(iter(tree.items()))
        key = f"{key}.{name}"
    return key


def _check_keys(
    tree: dict, model: type[BaseModel], source: str, prefix: str = "", root: type[BaseModel] | None = None
) -> None:
    root = root or model
    for name, value in tree.items():
        key = f"{prefix}{name}"
        if name not in model.model_fields:
            given = _first_leaf(value, key)
            close = difflib.get_close_matches(given, valid_keys(root), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            section = prefix.rstrip(".") or "the top level"
            raise ConfigError(
                f"unknown key {given!r} in {source}{hint} (valid keys under {section}: "
                f"{', '.join(sorted(model.model_fields))})"
            )
        ann = model.model_fields[name].annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            if not isinstance(value, dict):
                raise ConfigError(f"{key!r} in {source} is a section; set its keys, e.g. {key}.<key>=...")
            _check_keys(value, ann, source, key + ".", root)


def parse_overrides(overrides: list[str]) -> dict:
    """``["algo.num_envs=8", "training.no_play=true"]`` -> nested dict, values parsed as YAML."""
    tree: dict = {}
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"override {item!r} is not of the form key.sub=value")
        key, raw = item.split("=", 1)
        key = key.strip()
        if not key:
            raise ConfigError(f"override {item!r} has an empty key")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw
        node = tree
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"override {item!r} sets a key inside {part!r}, which is a value")
        node[parts[-1]] = value
    return tree


def deep_merge(base: dict, top: dict) -> dict:
    """``top`` over ``base``, recursively for nested dicts. Returns a new dict."""
    out = dict(base)
    for k, v in top.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _load_yaml(path: Path) -> dict:
    data = yaml.safe_load(path.read_text()) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must hold a mapping of sections, got {type(data).__name__}")
    return data


def owner_config_files(
    folder: Path | None, algo: str, sim: str, preset: str | None
) -> list[Path]:
    """Owner YAML files for this algo × sim (and preset), in the order they apply.

    Raises:
        ConfigError: an unknown preset, listing the available ones.
    """
    if folder is None:
        if preset:
            raise ConfigError(f"unknown preset {preset!r}: this task has no presets")
        return []
    files = []
    base = folder / f"{algo}_{sim}.yaml"
    if base.exists():
        files.append(base)
    if preset:
        path = folder / f"{algo}_{sim}.{preset}.yaml"
        if not path.exists():
            have = sorted(p.name.split(".")[1] for p in folder.glob(f"{algo}_{sim}.*.yaml"))
            raise ConfigError(
                f"unknown preset {preset!r} for --algo {algo} --sim {sim}; "
                f"valid presets: {', '.join(have) or '(none)'}"
            )
        files.append(path)
    return files


def resolve_config(
    model: type[BaseModel], files: list[Path], overrides: list[str]
) -> BaseModel:
    """Merge owner YAML ``files`` and ``overrides`` over the defaults of ``model`` and validate.

    Raises:
        ConfigError: an unknown key (with the closest valid one) or an invalid value (with the
            key, the value and what was expected).
    """
    tree: dict = {}
    for path in files:
        layer = _load_yaml(path)
        _check_keys(layer, model, str(path))
        tree = deep_merge(tree, layer)
    cli = parse_overrides(overrides)
    _check_keys(cli, model, "the command line")
    tree = deep_merge(tree, cli)
    try:
        return model.model_validate(tree)
    except ValidationError as exc:
        errors = exc.errors()
        err = errors[0]
        key = ".".join(str(p) for p in err["loc"])
        branches = [e for e in errors if len(e["loc"]) > 1 and e["loc"][:-1] == err["loc"][:-1]]
        if len(branches) > 1 and all(e.get("input") == err.get("input") for e in branches):
            # a union (e.g. true/false or "auto"): every branch rejected the value; name the
            # field, not pydantic's branch tags, and say what each branch expected
            key = ".".join(str(p) for p in err["loc"][:-1])
            expected = ", or ".join(e["msg"].lower() for e in branches)
            raise ConfigError(f"invalid value for {key}: {err.get('input')!r} ({expected})") from None
        if err["type"] == "value_error" and isinstance(err.get("input"), dict):
            # a section's own check across its keys: its message names them; the section's
            # whole input would only bury it
            raise ConfigError(f"invalid {key}: {err['msg'].removeprefix('Value error, ')}") from None
        raise ConfigError(
            f"invalid value for {key}: {err.get('input')!r} ({err['msg'].lower()})"
        ) from None
