"""Config layering and validation: unknown keys and bad values fail with one precise message."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from unilab.config import (
    ConfigError,
    build_run_model,
    deep_merge,
    layer_overrides,
    owner_config_files,
    parse_overrides,
    resolve_config,
)
from unilab.tasks.g1_walk_flat.config import G1WalkFlatConfig


@dataclass
class _AlgoCfg:
    gamma: float = 0.97
    hidden: tuple[int, ...] = (64, 64)


@pytest.fixture()
def model():
    return build_run_model(_AlgoCfg, G1WalkFlatConfig)


def test_overrides_parse_yaml_values():
    tree = parse_overrides(["training.num_envs=8", "training.no_play=true", "env.commands.lin_vel_x=[0, 1]"])
    assert tree == {
        "training": {"num_envs": 8, "no_play": True},
        "env": {"commands": {"lin_vel_x": [0, 1]}},
    }


def test_override_without_equals_is_rejected():
    with pytest.raises(ConfigError, match="key.sub=value"):
        parse_overrides(["training.num_envs"])


def test_a_key_given_twice_is_refused_naming_both_values():
    with pytest.raises(ConfigError) as err:
        parse_overrides(["algo.gamma=0.97", "training.seed=1", " algo.gamma = 0.99"])
    assert str(err.value) == "overrides: algo.gamma given twice (0.97, then 0.99); expected each key once"
    assert err.value.key == "algo.gamma"


def test_layered_overrides_give_each_key_once_with_the_later_value():
    base = ["env.push.enabled=false", "env.observation_noise=false", "training.seed=0"]
    merged = layer_overrides(base, ["env.push.enabled=true"], [" training.seed =3"])
    assert merged == ["env.observation_noise=false", "env.push.enabled=true", " training.seed =3"]
    assert parse_overrides(merged) == {"env": {"observation_noise": False, "push": {"enabled": True}},
                                       "training": {"seed": 3}}


@pytest.mark.parametrize("order", [1, -1])
def test_a_setting_given_by_its_key_and_inside_its_sections_value_is_refused(order):
    items = ["env.commands.lin_vel_x=[0, 1]", "env.commands={lin_vel_x: [0, 2], ang_vel_z: [0, 1]}"][::order]
    with pytest.raises(ConfigError) as err:
        parse_overrides(items)
    assert "both set env.commands.lin_vel_x; expected each setting once" in str(err.value)
    assert "env.commands.lin_vel_x and env.commands" in str(err.value) or "env.commands and env.commands.lin_vel_x" in str(err.value)


@pytest.mark.parametrize("order", [1, -1])
def test_a_sections_value_and_keys_it_does_not_hold_merge_in_either_order(order):
    items = ["env.commands.lin_vel_x=[0, 1]", "env.commands={ang_vel_z: [0, 1]}"][::order]
    assert parse_overrides(items) == {"env": {"commands": {"lin_vel_x": [0, 1], "ang_vel_z": [0, 1]}}}
    with pytest.raises(ConfigError, match="both set env.commands; expected each setting once"):
        parse_overrides(["env.commands.lin_vel_x=[0, 1]", "env.commands=5"])


def test_a_layered_section_replaces_only_the_keys_it_holds():
    merged = layer_overrides(["env.commands.lin_vel_x=[0.5, 0.5]", "env.commands.ang_vel_z=[0.0, 0.0]"],
                             ["env.commands={ang_vel_z: [-1, 1], heading: {enabled: true}}"])
    assert merged == ["env.commands.lin_vel_x=[0.5, 0.5]", "env.commands.ang_vel_z=[-1, 1]", "env.commands.heading.enabled=true"]
    assert parse_overrides(merged) == {"env": {"commands": {"lin_vel_x": [0.5, 0.5], "ang_vel_z": [-1, 1],
                                                            "heading": {"enabled": True}}}}


def test_deep_merge_keeps_untouched_keys():
    assert deep_merge({"a": {"b": 1, "c": 2}}, {"a": {"c": 3}}) == {"a": {"b": 1, "c": 3}}


def test_defaults_and_overrides_are_applied(model):
    cfg = resolve_config(model, [], ["training.num_envs=8", "env.rewards.upright=0.5", "training.seed=7"])
    assert cfg.training.num_envs == 8
    assert cfg.training.max_iterations == 1000
    assert cfg.env.rewards.upright == 0.5
    assert cfg.training.seed == 7
    assert cfg.training.log_dir == "logs"


def test_unknown_key_names_the_closest_valid_key(model):
    with pytest.raises(ConfigError) as err:
        resolve_config(model, [], ["training.max_iteration=5"])
    msg = str(err.value)
    assert "'training.max_iteration'" in msg and "did you mean 'training.max_iterations'" in msg


def test_a_renamed_key_names_its_new_key(model):
    with pytest.raises(ConfigError, match=r"key 'algo.runtime' in the command line is now 'runtime.mode'"):
        resolve_config(model, [], ["algo.runtime=async"])
    with pytest.raises(ConfigError, match=r"key 'algo.num_envs' in the command line is now 'training.num_envs'"):
        resolve_config(model, [], ["algo.num_envs=8"])
    with pytest.raises(ConfigError, match=r"'algo.expansion' in the command line is no longer a setting"):
        resolve_config(model, [], ["algo.expansion=2"])


def test_unknown_nested_key(model):
    with pytest.raises(ConfigError, match="did you mean 'env.rewards.upright'"):
        resolve_config(model, [], ["env.rewards.uprigth=1.0"])


def test_unknown_section(model):
    with pytest.raises(ConfigError, match="unknown key 'trainig.seed'.*'training.seed'"):
        resolve_config(model, [], ["trainig.seed=1"])


def test_wrong_type_names_key_value_and_expectation(model):
    with pytest.raises(ConfigError) as err:
        resolve_config(model, [], ["training.num_envs=abc"])
    msg = str(err.value)
    assert "training.num_envs" in msg and "'abc'" in msg and "integer" in msg


def test_constraint_violation_is_reported(model):
    with pytest.raises(ConfigError, match="env.commands.standing_fraction"):
        resolve_config(model, [], ["env.commands.standing_fraction=1.5"])


def test_owner_yaml_layers_and_is_checked(tmp_path, model):
    (tmp_path / "sac_mujoco.yaml").write_text("training:\n  num_envs: 32\nalgo:\n  gamma: 0.9\n")
    (tmp_path / "sac_mujoco.small.yaml").write_text("training:\n  num_envs: 4\n")
    files = owner_config_files(tmp_path, "sac", "mujoco", "small")
    cfg = resolve_config(model, files, ["algo.gamma=0.95"])
    assert (cfg.training.num_envs, cfg.algo.gamma) == (4, 0.95)

    (tmp_path / "sac_mujoco.bad.yaml").write_text("training:\n  num_env: 4\n")
    with pytest.raises(ConfigError, match="sac_mujoco.bad.yaml.*did you mean 'training.num_envs'"):
        resolve_config(model, owner_config_files(tmp_path, "sac", "mujoco", "bad"), [])


def test_unknown_preset_lists_valid_presets(tmp_path):
    (tmp_path / "sac_mujoco.laptop.yaml").write_text("{}\n")
    with pytest.raises(ConfigError, match="unknown preset 'huge'.*valid presets: laptop"):
        owner_config_files(tmp_path, "sac", "mujoco", "huge")


@pytest.mark.parametrize(
    "override, expected",
    [
        ("env.commands.lin_vel_x=[1.0]",
         "invalid value for env.commands.lin_vel_x: [1.0] (expected a list of 2 numbers [min, max], "
         "e.g. env.commands.lin_vel_x=[-1.0,1.0])"),
        ("env.commands.lin_vel_x=[0.0,0.5,1.0]",
         "invalid value for env.commands.lin_vel_x: [0.0, 0.5, 1.0] (expected a list of 2 numbers [min, max]"),
        ("env.commands.lin_vel_x=0.5", "invalid value for env.commands.lin_vel_x: 0.5 (expected a list of 2 numbers"),
        ("env.commands.lin_vel_x=[fast,1.0]", "invalid value for env.commands.lin_vel_x: ['fast', 1.0] (expected"),
        ("env.domain_randomization.torso_com_m=[0.1,0.1]",
         "invalid value for env.domain_randomization.torso_com_m: [0.1, 0.1] (expected a list of 3 numbers [x, y, z]"),
    ],
    ids=["short", "long", "scalar", "not-a-number", "xyz"],
)
def test_a_list_of_the_wrong_length_names_the_key_and_the_expected_shape(model, override, expected):
    with pytest.raises(ConfigError) as info:
        resolve_config(model, [], [override])
    assert str(info.value).startswith(expected), str(info.value)
    assert info.value.key == override.split("=")[0]


@pytest.mark.parametrize("seed", ["-1", str(2**32)])
def test_a_seed_outside_numpys_range_is_refused(model, seed):
    with pytest.raises(ConfigError, match=rf"invalid value for training.seed: {seed} \(input should be"):
        resolve_config(model, [], [f"training.seed={seed}"])
    assert resolve_config(model, [], [f"training.seed={2**32 - 1}"]).training.seed == 2**32 - 1


def test_file_paths_are_stored_absolute(model, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = resolve_config(model, [], ["robot.mjcf=models/../g1.xml"])
    assert cfg.robot.mjcf == str(tmp_path / "g1.xml")
    assert resolve_config(model, [], []).robot.mjcf is None

    from unilab.tasks.g1_motion_tracking.config import G1MotionTrackingConfig

    motion = build_run_model(_AlgoCfg, G1MotionTrackingConfig)
    assert resolve_config(motion, [], ["env.motion.file=clip.npz"]).env.motion.file == str(tmp_path / "clip.npz")


@pytest.mark.parametrize("override, expected", [
    ("env.rewards.alive=true", "invalid value for env.rewards.alive: true (expected a float, not true/false)"),
    ("algo.gamma=false", "invalid value for algo.gamma: false (expected a float, not true/false)"),
    ("training.num_envs=true", "invalid value for training.num_envs: true (expected an integer, not true/false)"),
    ("env.commands.lin_vel_x=[true,1]",
     "invalid value for env.commands.lin_vel_x: [true, 1] (expected a list of floats, not true/false)"),
    ("algo.hidden=[64,false]", "invalid value for algo.hidden: [64, false] (expected a list of integers, not true/false)"),
])
def test_a_boolean_for_a_number_is_refused_not_read_as_one_or_zero(model, override, expected):
    """The value is shown as the user typed it in YAML (true/false), not as Python's True/False."""
    with pytest.raises(ConfigError) as err:
        resolve_config(model, [], [override])
    assert str(err.value) == expected
    assert err.value.key == override.split("=")[0]


@pytest.mark.parametrize("override, expected", [
    ("robot.feet=true", "invalid value for robot.feet: true (input should be 'project', 'model' or 'spheres')"),
    ("robot.actuators=false", "invalid value for robot.actuators: false (input should be 'project' or 'file')"),
    ("robot.name=null", "invalid value for robot.name: null (input should be a valid string)"),
])
def test_a_boolean_or_null_for_a_name_reads_as_typed(model, override, expected):
    with pytest.raises(ConfigError) as err:
        resolve_config(model, [], [override])
    assert str(err.value) == expected


@pytest.mark.parametrize("device", ["cpu", "learner", "server"])
def test_runtime_policy_device_takes_its_three_choices_and_refuses_others_in_one_line(model, device):
    assert resolve_config(model, [], [f"runtime.policy_device={device}"]).runtime.policy_device == device
    with pytest.raises(ConfigError) as err:
        resolve_config(model, [], ["runtime.policy_device=gpu"])
    assert str(err.value) == ("invalid value for runtime.policy_device: 'gpu' "
                              "(input should be 'cpu', 'learner' or 'server')")
    assert err.value.key == "runtime.policy_device"


@pytest.mark.parametrize("feet", ["model", "spheres", "project"])
def test_robot_feet_takes_its_three_choices(model, feet):
    assert resolve_config(model, [], [f"robot.feet={feet}"]).robot.feet == feet
    assert resolve_config(model, [], []).robot.feet == "project"  # the default


def test_robot_feet_refuses_another_value_naming_the_key_and_the_choices(model):
    with pytest.raises(ConfigError) as err:
        resolve_config(model, [], ["robot.feet=bogus"])
    assert str(err.value) == "invalid value for robot.feet: 'bogus' (input should be 'project', 'model' or 'spheres')"
    assert err.value.key == "robot.feet"


def test_a_boolean_for_a_number_in_a_yaml_file_is_refused_and_ints_for_floats_stay_accepted(tmp_path, model):
    (tmp_path / "sac_mujoco.yaml").write_text("env:\n  rewards:\n    alive: yes\n")
    with pytest.raises(ConfigError, match=r"^invalid value for env.rewards.alive: true \(expected a float"):
        resolve_config(model, owner_config_files(tmp_path, "sac", "mujoco", None), [])
    cfg = resolve_config(model, [], ["env.rewards.alive=2", "algo.gamma=1", "training.no_play=true"])
    assert (cfg.env.rewards.alive, cfg.algo.gamma, cfg.training.no_play) == (2.0, 1.0, True)


@pytest.mark.parametrize("override, suggestion", [
    ("mjcf=x", "'robot.mjcf'"),
    ("log_dir=x", "'training.log_dir'"),
    ("nthread=2", "'sim.nthread'"),
    ("rewards.alive=1", "'env.rewards.alive'"),
    ("num_env=3", "'training.num_envs'"),
    ("trainig.seed=1", "'training.seed'"),
])
def test_a_key_without_its_section_names_the_key_in_the_section_that_has_it(model, override, suggestion):
    with pytest.raises(ConfigError) as err:
        resolve_config(model, [], [override])
    assert f"(did you mean {suggestion}?)" in str(err.value)


def test_a_saved_robot_section_without_feet_reads_as_the_models_feet():
    """Runs saved before ``robot.feet`` existed trained on the model's feet; eval, play and export
    must rebuild those, not the new default's soles. A section that names its feet keeps them."""
    from unilab.config import migrate_saved_config

    old = {"robot": {"name": "g1", "mjcf": "/data/g1/scene.xml", "actuators": "project"}, "algo": {"gamma": 0.97}}
    assert migrate_saved_config(old)["robot"]["feet"] == "model"
    assert "feet" not in old["robot"]  # the caller's tree is not changed
    new = {"robot": {"name": "g1", "mjcf": None, "actuators": "project", "feet": "project"}}
    assert migrate_saved_config(new) == new
