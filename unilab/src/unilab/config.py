"""Run configuration: code defaults, owner YAML, presets and ``key.sub=value`` overrides, validated
by pydantic before anything runs.

Layers, later wins: the pydantic defaults of each section, the task's owner YAML for this
algo × sim (``<algo>_<sim>.yaml``), an optional preset (``<algo>_<sim>.<preset>.yaml``), then the
command line's overrides. Every key of every layer is checked: an unknown key is an error that names
the closest valid key, and a value of the wrong type names the key, the value and what was expected.

Sections:

- ``algo``: the algorithm's hyperparameters (its config dataclass, e.g.
  :class:`unilab_rl.SACConfig`);
- ``runtime``: how the learner executes, the same for every algorithm
  (:class:`unilab_rl.RuntimeConfig`: sync or async collection, collectors, compilation);
- ``env``: the task's settings (its pydantic model);
- ``sim``: physics threads; ``robot``: the robot, its model file and drives (docs/robots.md);
- ``training``: the run (envs, iterations, seed, device, log directory, checkpoints, resume).

A key that moved in the redesign of these sections (e.g. ``algo.runtime`` -> ``runtime.mode``) is
refused with one line naming its new key (:data:`RENAMED_KEYS`).
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import types
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from mjbatch_uni import did_you_mean
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator
from unilab_rl.runtime import RuntimeConfig


class ConfigError(ValueError):
    """A configuration problem, worded as one line for the user.

    Attributes:
        key: the dotted key at fault, when one is (``None`` otherwise).
    """

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class UnknownKeyError(ConfigError):
    """A key the run's config does not have.

    Attributes:
        key: the dotted key as written (``"algo.actor_emaa"``).
        source: where it was written (``"the command line"``, a config file).
    """

    def __init__(self, message: str, key: str, source: str) -> None:
        super().__init__(message, key)
        self.source = source


def absolute_path(value: str | None) -> str | None:
    """An absolute, normalized path (``~`` expanded), so that a run's saved config names the same
    file from any working directory (``unilab play`` elsewhere); ``None`` and ``""`` unchanged."""
    return os.path.abspath(os.path.expanduser(value)) if value else value


FilePath = Annotated[str, AfterValidator(absolute_path)]
"""A file path setting (``robot.mjcf``, ``env.motion.file``): stored absolute, relative to the
working directory of the command that set it."""


MAX_PUSH_LIN_VEL = 5.0
"""Largest push (or reset perturbation) of a robot base's linear velocity a task accepts, m/s:
ten times mjlab's largest push (0.5). At 100 m/s the G1's physics runs away without tripping
MuJoCo's divergence warning (step rewards near -1e11)."""
MAX_PUSH_ANG_VEL = 10.0
"""Largest push of a robot base's angular velocity a task accepts, rad/s: about thirteen times
mjlab's largest (0.78)."""


# ============================================================================ shared sections
class SimConfig(BaseModel):
    """Physics settings shared by every backend."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    nthread: int = Field(0, ge=0, description="physics threads; 0 = one per available core")
    cpu_ids: list[int] | None = Field(None, description="cores to pin physics threads to (Linux)")


class RobotConfig(BaseModel):
    """Robot model settings (docs/robots.md)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    name: str = Field("g1", description="robot description (see `unilab plugins`): joints, drives, pose, feet")
    mjcf: FilePath | None = Field(
        None, description="MJCF of that robot, e.g. a Menagerie checkout's g1.xml or scene.xml; joints and "
        "bodies matched by name; stored absolute (a relative path is taken from the current directory)"
    )
    actuators: Literal["project", "file"] = Field(
        "project", description="project: the robot's tuned drives replace the file's (a table shows what "
        "differs); file: keep the file's actuators and derive the action scale from them"
    )
    feet: Literal["project", "model", "spheres"] = Field(
        "project", description="project: each foot's collision geoms replaced by the robot description's sole "
        "geoms, the sole the recipe was tuned on (kept where the model's feet already are them, as on the built-in "
        "G1; the model's feet where the description gives none); model: the feet collide as the model's geoms do; "
        "spheres: four spheres at each sole's corners (fewer contacts, cheaper physics; docs/robots.md)"
    )

    @field_validator("mjcf", mode="before")
    @classmethod
    def _empty_is_unset(cls, value):
        """``robot.mjcf=`` (an empty value) means unset: the description's own model."""
        return None if isinstance(value, str) and not value.strip() else value


class TrainingConfig(BaseModel):
    """The run: its size and length, seed, devices, files and cadence."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    num_envs: int = Field(1024, ge=1, description="parallel envs (per rank with several ranks)")
    max_iterations: int = Field(
        1000, ge=1, description="iterations to train; one iteration = one env step of every env and its updates"
    )
    resume: str | None = Field(
        None,
        description="continue a run: 'latest' (newest run of this algo and task), a run directory or a .pt "
        "checkpoint; networks, optimizers, normalizers, RNG states, the iteration count and the env curricula the "
        "task records (g1_walk_flat: the penalty scale, as env.penalty_curriculum.start) are restored, the "
        "replay buffer starts empty, training continues up to max_iterations",
    )
    seed: int = Field(
        1, ge=0, le=2**32 - 1, description="seed of torch, numpy and the env's generator, 0 to 2^32 - 1 (numpy's range)"
    )
    log_dir: str = Field("logs", description="root of the run directories")
    no_play: bool = Field(False, description="skip play + export after training")
    device: str = Field(
        "auto",
        description="learner device: auto, cuda, cuda:N, xpu, xpu:N, mps or cpu (whether this machine has it is "
        "checked when the run starts)",
    )
    devices: list[int | str] | str | None = Field(
        None,
        description="several learners, one rank each (torch.distributed): CUDA indices [0,1] (NCCL) "
        "or cpu:N (N gloo ranks on the CPU); training.num_envs and algo.batch_size are per rank; unset: "
        "one process on training.device",
    )
    checkpoint_interval: int = Field(500, ge=1, description="iterations between checkpoints")
    keep_checkpoints: int = Field(
        5, ge=1, description="numbered checkpoints kept (the oldest are deleted); model_last.pt always"
    )
    log_interval: int = Field(10, ge=1, description="iterations between metric writes")
    eval_interval: int = Field(
        0, ge=0,
        description="iterations between evaluations of the deterministic policy with the task's suite, in a "
        "background process (Eval/* in TensorBoard, time_to_eval_pass in run_summary.json; docs/eval.md); 0: off",
    )
    allow_large: bool = Field(
        False,
        description="start even when the run's memory estimate (envs, replay buffer, update batch) "
        "exceeds the memory available on the host or the learner device",
    )
    progress: bool | None = Field(
        None,
        description="true: progress bar; false: none; unset: a bar in a terminal, else a plain "
        "line (iteration, env steps/s, mean reward, mean episode length) every 10 s",
    )

    @field_validator("device")
    @classmethod
    def _device_is_a_device_name(cls, value: str) -> str:
        # Only the spelling is checked here, so that `unilab config` refuses what `unilab train`
        # would; whether this machine has the device is checked when the run starts.
        if not re.fullmatch(r"auto|cpu|mps|(cuda|xpu)(:[0-9]+)?", value):
            raise ValueError("expected auto, cpu, cuda, cuda:N, xpu, xpu:N or mps")
        return value


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
    runtime_model = model_from_dataclass(RuntimeConfig)
    return create_model(
        "RunConfig",
        __config__=ConfigDict(extra="forbid"),
        algo=(algo_model, algo_model()),
        runtime=(runtime_model, runtime_model()),
        env=(task_config_cls, task_config_cls()),
        sim=(SimConfig, SimConfig()),
        robot=(RobotConfig, RobotConfig()),
        training=(TrainingConfig, TrainingConfig()),
    )


# ============================================================================ keys
RENAMED_KEYS: dict[str, str] = {
    "algo.num_envs": "training.num_envs",
    "algo.max_iterations": "training.max_iterations",
    "algo.resume": "training.resume",
    "algo.device": "training.device",
    "algo.runtime": "runtime.mode",
    "algo.block_steps": "runtime.block_steps",
    "algo.num_blocks": "runtime.num_blocks",
    "algo.sync_weights_every": "runtime.sync_weights_every",
    "algo.num_collectors": "runtime.num_collectors",
    "algo.collector_shards": "runtime.collector_shards",
    "algo.collector_threads": "runtime.collector_threads",
    "algo.policy_device": "runtime.policy_device",
    "algo.learner_threads": "runtime.learner_threads",
    "algo.use_compile": "runtime.compile",
    "algo.compile_mode": "runtime.compile_mode",
    "algo.cuda_graph": "runtime.cuda_graph",
    "algo.mixed_precision": "runtime.mixed_precision",
    "algo.policy_frequency": "algo.actor_update_period",
    "algo.init_alpha": "algo.init_temperature",
    "algo.alpha_lr": "algo.temperature_lr",
}
"""Keys that moved when the sections were redesigned: old key -> new key (each package's
CHANGELOG has the table). An old key is refused with one line naming the new one."""

FIXED_KEYS: dict[str, str] = {
    "algo.log_std_min": "the actor's log-std bounds are the paper's constants (unilab_rl/algorithms/*/networks.py)",
    "algo.log_std_max": "the actor's log-std bounds are the paper's constants (unilab_rl/algorithms/*/networks.py)",
    "algo.expansion": "FlashSAC's block expansion is the paper's 4 (unilab_rl/algorithms/flashsac/networks.py)",
    "algo.bn_momentum": "FlashSAC's batch-norm momentum is the paper's 0.01 (unilab_rl/algorithms/flashsac/networks.py)",
    "algo.zeta_exponent": "FlashSAC's noise repeat law is the paper's Zeta(2) on 1..16 (flashsac/exploration.py)",
    "algo.zeta_max": "FlashSAC's noise repeat law is the paper's Zeta(2) on 1..16 (flashsac/exploration.py)",
    "algo.v_min": "FlashSAC's critic support is [-algo.normalized_g_max, algo.normalized_g_max] (the paper's)",
    "algo.v_max": "FlashSAC's critic support is [-algo.normalized_g_max, algo.normalized_g_max] (the paper's)",
}
"""Keys that are no longer settings, with why."""


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


def migrate_saved_config(tree: dict) -> dict:
    """A saved run's config (``run_config.json``, a checkpoint's ``config``) with the keys of
    :data:`RENAMED_KEYS` moved to their new place and those of :data:`FIXED_KEYS` dropped, so that
    play, export and eval read runs written before the sections were redesigned; a ``robot``
    section without ``feet`` (written before that setting) gets ``model``, the feet it trained on.
    A new config comes back unchanged."""
    out = {section: dict(values) if isinstance(values, dict) else values for section, values in tree.items()}
    for old, new in RENAMED_KEYS.items():
        old_section, old_name = old.split(".", 1)
        if isinstance(out.get(old_section), dict) and old_name in out[old_section]:
            value = out[old_section].pop(old_name)
            new_section, new_name = new.split(".", 1)
            if old == "algo.device":
                continue  # only ever "auto": the device was always training.device
            out.setdefault(new_section, {})
            out[new_section].setdefault(new_name, value)
    for old in FIXED_KEYS:
        section, name = old.split(".", 1)
        if isinstance(out.get(section), dict):
            out[section].pop(name, None)
    if isinstance(out.get("robot"), dict):
        out["robot"].setdefault("feet", "model")  # saved before robot.feet existed: the model's feet
    return out


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
            if key in RENAMED_KEYS:
                raise ConfigError(f"key {key!r} in {source} is now {RENAMED_KEYS[key]!r}: write "
                                  f"{RENAMED_KEYS[key]}=... (the CHANGELOG lists every renamed key)")
            if key in FIXED_KEYS:
                raise ConfigError(f"key {key!r} in {source} is no longer a setting: {FIXED_KEYS[key]}")
            section = prefix.rstrip(".") or "the top level"
            keys = valid_keys(root)
            hint = did_you_mean(given, keys, n=1) if prefix else _top_level_hint(given, keys)
            raise UnknownKeyError(
                f"unknown key {given!r} in {source}{hint}; "
                f"valid keys under {section}: {', '.join(sorted(model.model_fields))}",
                given, source,
            )
        ann = model.model_fields[name].annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            if not isinstance(value, dict):
                raise ConfigError(f"{key!r} in {source} is a section; set its keys, e.g. {key}.<key>=...")
            _check_keys(value, ann, source, key + ".", root)


def _top_level_hint(given: str, keys: list[str]) -> str:
    """``" (did you mean 'robot.mjcf'?)"`` for a key written without its section (``mjcf``,
    ``rewards.alive``) or with a misspelt one: ``given`` is compared with every key and every
    dotted tail of one (``mjcf``, ``rewards.alive``, ``env.rewards.alive``); a tail equal to it
    names its keys (at most 3), else difflib's closest tail does. ``""`` when nothing is close."""
    by_tail: dict[str, list[str]] = {}
    for key in keys:
        parts = key.split(".")
        for i in range(len(parts)):
            by_tail.setdefault(".".join(parts[i:]), []).append(key)
    tails = [given] if given in by_tail else difflib.get_close_matches(given, list(by_tail), n=1)
    names = list(dict.fromkeys(k for tail in tails for k in by_tail[tail]))[:3]
    return f" (did you mean {', '.join(map(repr, names))}?)" if names else ""


def parse_overrides(overrides: list[str]) -> dict:
    """``["training.num_envs=8", "training.no_play=true"]`` -> nested dict, values parsed as YAML.

    Each key is given once: a repeated key is refused, as Hydra refuses it, instead of its last
    value silently winning (``algo.gamma=0.97 ... algo.gamma=0.99`` is more likely a slip than a
    choice). Code that puts settings over settings merges its lists first (:func:`layer_overrides`).

    Raises:
        ConfigError: an item without ``=``, an empty key, a key set inside a value, a key given
            twice (``overrides: algo.gamma given twice (0.97, then 0.99); expected each key once``,
            with ``key`` the dotted key), or a setting given both by its own key and inside a
            section's value (``env.commands.lin_vel_x=[0,1] env.commands={lin_vel_x: [0,2]}``, in
            either order); a section's value and keys it does not hold merge, as the config does.
    """
    tree: dict = {}
    given: dict[str, str] = {}  # key -> its value as written, for the repeated-key message
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"override {item!r} is not of the form key.sub=value")
        key, raw = item.split("=", 1)
        key = key.strip()
        if not key:
            raise ConfigError(f"override {item!r} has an empty key")
        if key in given:
            raise ConfigError(f"overrides: {key} given twice ({given[key]}, then {raw.strip() or repr('')}); "
                              f"expected each key once", key)
        given[key] = raw.strip() or repr("")
        value = _parse_value(raw)
        node = tree
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"override {item!r} sets a key inside {part!r}, which is a value")
        leaf = parts[-1]
        if leaf in node:  # a section given as a value beside keys of its own, in either order
            old = node[leaf]
            if isinstance(old, dict) and isinstance(value, dict):
                shared = sorted(set(dotted_keys(old)) & set(dotted_keys(value)))
                clash = f"{key}.{shared[0]}" if shared else None
            else:
                clash = key
            if clash:
                other = next((k for k in given if k != key and (k.startswith(key + ".") or key.startswith(k + "."))), "")
                raise ConfigError(f"overrides: {other} and {key} both set {clash}; expected each setting once", key)
            node[leaf] = deep_merge(old, value)  # a section's value and keys it does not hold merge
            continue
        node[leaf] = value
    return tree


def _parse_value(raw: str) -> object:
    """An override's value as YAML (``[0, 1]`` -> a list); text YAML cannot read as it is, and
    nothing as ``""``."""
    try:
        return yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        return raw


def _leaves(tree: dict, prefix: str = "") -> list[tuple[str, object]]:
    """``(dotted key, value)`` of each leaf of a nested dict (an empty dict is a leaf)."""
    out = []
    for name, value in tree.items():
        key = f"{prefix}{name}"
        out += _leaves(value, key + ".") if isinstance(value, dict) and value else [(key, value)]
    return out


def dotted_keys(tree: dict, prefix: str = "") -> list[str]:
    """The leaf keys of a nested override dict, dotted (``{"a": {"b": 1}}`` -> ``["a.b"]``; an
    empty dict is a leaf)."""
    return [key for key, _ in _leaves(tree, prefix)]


def layer_overrides(*layers: Iterable[str]) -> list[str]:
    """Lists of ``key=value`` overrides, each over the ones before it, as one list that gives each
    key once (what :func:`parse_overrides` takes): an item is dropped when a later one sets the
    same key, so the later value wins. For code that composes settings (an eval case's over its
    suite's); the user's own list is checked by :func:`parse_overrides`. An item without ``=`` is
    kept, for :func:`parse_overrides` to refuse.

    An item whose value is a mapping (``env.commands={lin_vel_x: [0, 1]}``) counts as its keys one
    by one (``env.commands.lin_vel_x=[0, 1]``), so a later layer's key replaces just that key of an
    earlier section, and a later section just the keys it holds.

    Returns:
        the items in their order, sections as their keys, less those a later item replaces.
    """
    items = [leaf for layer in layers for item in layer for leaf in _leaf_items(item)]
    last = {item.split("=", 1)[0].strip(): i for i, item in enumerate(items) if "=" in item}
    return [item for i, item in enumerate(items) if "=" not in item or last[item.split("=", 1)[0].strip()] == i]


def _leaf_items(item: str) -> list[str]:
    """``a.b={c: 1, d: {e: 2}}`` -> ``["a.b.c=1", "a.b.d.e=2"]``; any other item as it is."""
    if "=" not in item:
        return [item]
    key, raw = item.split("=", 1)
    value = _parse_value(raw)
    if not isinstance(value, dict) or not value:
        return [item]
    return [f"{dotted}={_flow(v)}" for dotted, v in _leaves(value, key.strip() + ".")]


def _flow(value: object) -> str:
    """``value`` as a one-line YAML flow value, as an override writes it (``[0, 1]``, ``true``)."""
    return yaml.safe_dump(value, default_flow_style=True, width=10**9).strip().removesuffix("\n...")


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
    return validate(model, tree)


def validate(model: type[BaseModel], tree: dict) -> BaseModel:
    """Validate a merged config ``tree`` against ``model``: the one validator every command uses
    (``train``, ``config``, and ``play``/``export`` for a run's saved config).

    Raises:
        ConfigError: one line naming the key, the value and what was expected; its ``key`` is the
            dotted key (``env.commands.lin_vel_x`` for a list of the wrong length, not its item).
    """
    _refuse_bool_for_number(model, tree)
    try:
        return model.model_validate(tree)
    except ValidationError as exc:
        raise _config_error(model, tree, exc.errors()) from None


def _refuse_bool_for_number(model: type[BaseModel], tree: dict, prefix: str = "") -> None:
    """Raise :class:`ConfigError` for ``true``/``false`` given to a number (or a list of numbers)
    that takes no boolean: pydantic's lax mode would read it as 1.0/0.0 (1/0), which is never what
    ``env.rewards.alive=true`` meant. Ints for float keys stay accepted; unknown keys are left to
    :func:`_check_keys` and pydantic."""
    for name, value in tree.items():
        info = model.model_fields.get(name) if isinstance(name, str) else None
        if info is None:
            continue
        key, ann = f"{prefix}{name}", info.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            if isinstance(value, dict):
                _refuse_bool_for_number(ann, value, key + ".")
            continue
        scalars, items = _leaf_types(ann)
        if isinstance(value, bool):
            wanted = scalars
        elif isinstance(value, (list, tuple)) and any(isinstance(v, bool) for v in value):
            wanted = items
        else:
            continue
        if bool in wanted or Any in wanted or not {float, int} & wanted:
            continue
        if isinstance(value, bool):
            what = "a float" if float in wanted else "an integer"
        else:
            what = "a list of " + ("floats" if float in wanted else "integers")
        raise ConfigError(f"invalid value for {key}: {as_typed(value)} (expected {what}, not true/false)", key)


def as_typed(value: Any) -> str:
    """``value`` as an error message shows it: ``repr``, except booleans and None, which read as
    YAML spells them (``true``, ``false``, ``null``: what the user typed), also inside lists."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, list):
        return "[" + ", ".join(as_typed(v) for v in value) + "]"
    return repr(value)


def _leaf_types(ann: Any) -> tuple[set, set]:
    """The types ``ann`` accepts as a scalar, and as the items of a list or tuple, through
    ``Optional``, unions and ``Annotated``."""
    scalars: set = set()
    items: set = set()
    stack = [ann]
    while stack:
        a = stack.pop()
        origin = typing.get_origin(a)
        if origin in (typing.Union, types.UnionType):
            stack += typing.get_args(a)
        elif origin is Annotated:
            stack.append(typing.get_args(a)[0])
        elif origin in (list, tuple, typing.Sequence):
            for item in typing.get_args(a):
                if item is not Ellipsis:
                    items |= _leaf_types(item)[0]
        else:
            scalars.add(a)
    return scalars, items


def _config_error(model: type[BaseModel], tree: dict, errors: list[dict]) -> ConfigError:
    err = errors[0]
    loc = tuple(err["loc"])
    key = ".".join(str(p) for p in loc)
    branches = [e for e in errors if len(e["loc"]) > 1 and tuple(e["loc"])[:-1] == loc[:-1]]
    if len(branches) > 1 and all(e.get("input") == err.get("input") for e in branches):
        # a union (e.g. true/false or "auto"): every branch rejected the value; name the
        # field, not pydantic's branch tags, and say what each branch expected
        key = ".".join(str(p) for p in loc[:-1])
        expected = ", or ".join(e["msg"].lower() for e in branches)
        return ConfigError(f"invalid value for {key}: {as_typed(err.get('input'))} ({expected})", key)
    if err["type"] == "value_error" and isinstance(err.get("input"), dict):
        # a section's own check across its keys: its message names them; the section's
        # whole input would only bury it
        return ConfigError(f"invalid {key}: {err['msg'].removeprefix('Value error, ')}", key)
    field_loc = loc[: next((i for i, p in enumerate(loc) if isinstance(p, int)), len(loc))]
    shape = _fixed_length(_annotation_at(model, field_loc))
    if shape is not None and (len(field_loc) < len(loc) or err["type"] in ("too_long", "too_short", "tuple_type")):
        # a fixed-length list (a [min, max] range, an x, y, z offset): name the key and the
        # whole value given, not the missing item (``...lin_vel_x.1``) pydantic reports
        key = ".".join(str(p) for p in field_loc)
        given = _value_at(tree, field_loc, err.get("input"))
        length, names = shape
        what = f"a list of {length} numbers" + (f" {names}" if names else "")
        example = f"{key}=[{_example(length)}]"
        return ConfigError(f"invalid value for {key}: {as_typed(given)} (expected {what}, e.g. {example})", key)
    if err["type"] == "value_error":  # a field's own check: its message as written (it may name cuda:N)
        return ConfigError(f"invalid value for {key}: {as_typed(err.get('input'))} "
                           f"({err['msg'].removeprefix('Value error, ')})", key)
    return ConfigError(f"invalid value for {key}: {as_typed(err.get('input'))} ({err['msg'].lower()})", key)


def _annotation_at(model: type[BaseModel], loc: tuple) -> Any:
    """The annotation of the field at the dotted path ``loc`` of ``model`` (None if none)."""
    ann: Any = model
    for name in loc:
        if not (isinstance(ann, type) and issubclass(ann, BaseModel)) or name not in ann.model_fields:
            return None
        ann = ann.model_fields[name].annotation
    return ann


def _fixed_length(ann: Any) -> tuple[int, str] | None:
    """``(n, names)`` when ``ann`` is (an optional) ``tuple`` of n numbers: names ``[min, max]``
    for two, ``[x, y, z]`` for three; None for anything else."""
    union = typing.get_origin(ann) in (typing.Union, types.UnionType)
    args = [a for a in typing.get_args(ann) if a is not type(None)] if union else [ann]
    for a in args:
        if typing.get_origin(a) is tuple:
            items = typing.get_args(a)
            if items and Ellipsis not in items and all(i in (int, float) for i in items):
                return len(items), {2: "[min, max]", 3: "[x, y, z]"}.get(len(items), "")
    return None


def _value_at(tree: dict, loc: tuple, default: Any) -> Any:
    node: Any = tree
    for name in loc:
        if not isinstance(node, dict) or name not in node:
            return default
        node = node[name]
    return node


def _example(length: int) -> str:
    return {2: "-1.0,1.0", 3: "0.0,0.0,0.0"}.get(length, ",".join(["0.0"] * length))
