"""`unilab config`: the resolved config of a train command, as YAML, and the task's presets."""

import pytest
import yaml


@pytest.fixture
def config(unilab_in_process):
    """``config(*args) -> result``: ``unilab config ARGS``, the command run in this process."""
    return lambda *args: unilab_in_process("config", *args)


def test_prints_every_layer_resolved(config):
    result = config("--algo", "sac", "--task", "g1_walk_flat", "--preset", "laptop", "training.num_envs=8")
    assert result.returncode == 0, result.stderr
    cfg = yaml.safe_load(result.stdout)
    assert cfg["training"]["num_envs"] == 8  # override
    assert cfg["training"]["max_iterations"] == 300 and cfg["runtime"]["mode"] == "sync"  # laptop preset
    assert cfg["algo"]["symmetry"] is True and cfg["runtime"]["collector_shards"] == 2  # owner YAML
    assert cfg["algo"]["gamma"] == 0.97 and cfg["env"]["gait"]["enabled"] is True  # code default
    assert set(cfg) >= {"algo", "runtime", "env", "sim", "training"}
    presets = result.stdout.strip().splitlines()[-1]
    assert presets.startswith("# presets of --algo sac --task g1_walk_flat --sim mujoco:") and "laptop" in presets


@pytest.mark.parametrize("algo, owner", [("sac", (2, "pipeline")), ("flashsac", (1, "threads"))])
def test_the_tracking_runtime_pipelines_two_shards_for_sac_and_threads_on_a_laptop(config, algo, owner):
    """SAC's tracking owner YAML steps two pipelined shards (measured in docs/benchmarks.md);
    FlashSAC's keeps one shard; the laptop preset goes back to threads, which beat the pipeline
    on 2 cores."""
    def runtime(*args):
        result = config("--algo", algo, "--task", "g1_motion_tracking", *args)
        assert result.returncode == 0, result.stderr
        cfg = yaml.safe_load(result.stdout)["runtime"]
        return cfg["collector_shards"], cfg["shard_stepping"]
    assert runtime() == owner
    assert runtime("--preset", "laptop")[1] == "threads"


def test_bad_key_is_the_train_error(config):
    result = config("--algo", "sac", "--task", "g1_walk_flat", "training.num_env=8")
    assert result.returncode == 2
    assert "did you mean 'training.num_envs'" in result.stderr and result.stdout == ""


def test_a_combination_train_refuses_is_refused_here_too(config):
    for overrides, text in (
        (["runtime.mode=async", "runtime.num_collectors=3"], "must be divisible by runtime.num_collectors"),
        (["algo.buffer_size_per_env=5"], "algo.buffer_size_per_env=5 is smaller than algo.learning_starts=10"),
    ):
        result = config("--algo", "sac", "--task", "g1_walk_flat", "--preset", "laptop", *overrides)
        lines = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
        assert result.returncode == 2 and result.stdout == "" and len(lines) == 1 and text in lines[0], result.stderr


def test_another_algorithms_setting_is_named_as_such(config):
    result = config("--algo", "flashsac", "--task", "g1_walk_flat", "algo.critic_reduction=mean")
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert result.returncode == 2 and lines == [
        "error: unknown key 'algo.critic_reduction' in the command line: it is a setting of --algo sac, not of "
        "--algo flashsac"
    ], result.stderr
    typo = config("--algo", "flashsac", "--task", "g1_walk_flat", "algo.critic_reductoin=mean")
    assert typo.returncode == 2 and "a setting of --algo" not in typo.stderr  # a misspelling: the usual message


def test_a_key_given_twice_is_the_one_error_line_train_gives(config):
    result = config("--algo", "sac", "--task", "g1_walk_flat", "algo.gamma=0.97", "algo.gamma=0.99")
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert result.returncode == 2 and result.stdout == "" and lines == [
        "error: overrides: algo.gamma given twice (0.97, then 0.99); expected each key once"
    ], result.stderr


def test_a_boolean_for_a_float_setting_is_one_error_line(config):
    result = config("--algo", "sac", "--task", "g1_walk_flat", "env.rewards.alive=true")
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert result.returncode == 2 and result.stdout == "" and lines == [
        "error: invalid value for env.rewards.alive: true (expected a float, not true/false)"
    ], result.stderr


@pytest.mark.parametrize("device, ok", [("gpu", False), ("cuda0", False), ("cuda:1", True), ("mps", True)])
def test_a_device_name_torch_does_not_know_is_refused_by_config_as_by_train(device, ok, config):
    """``unilab config`` checks the device's spelling (whether the machine has it is train's check)."""
    result = config("--algo", "sac", "--task", "g1_walk_flat", f"training.device={device}")
    if ok:
        assert result.returncode == 0 and f"device: {device}" in result.stdout, result.stderr
    else:
        assert result.returncode == 2 and [ln for ln in result.stderr.splitlines() if ln.strip()] == [
            f"error: invalid value for training.device: '{device}' (expected auto, cpu, cuda, cuda:N, xpu, xpu:N "
            f"or mps)"
        ], result.stderr


def test_errors_show_booleans_as_yaml_spells_them(config):
    for args, line in (
        (["--algo", "flashsac", "--task", "g1_walk_flat", "algo.equivariant_actor=true", "algo.symmetry=false"],
         "error: algo.equivariant_actor=true needs algo.symmetry=true (the env's mirror), got algo.symmetry=false"),
        (["--algo", "sac", "--task", "g1_walk_flat", "robot.feet=true"],
         "error: invalid value for robot.feet: true (input should be 'project', 'model' or 'spheres')"),
    ):
        result = config(*args)
        assert result.returncode == 2 and result.stdout == "", result.stderr
        assert [ln for ln in result.stderr.splitlines() if ln.strip()] == [line], result.stderr


@pytest.mark.parametrize("bad, line, good", [
    (["env.penalty_curriculum.exempt=[foot_slip,foot_slip]"],
     "error: invalid env: env.penalty_curriculum.exempt: 'foot_slip' is listed 2 times in ['foot_slip', "
     "'foot_slip']; expected each penalty once",
     ["env.penalty_curriculum.exempt=[foot_slip]"]),
    (["env.penalty_curriculum.exempt=[ang_vel_xy]"],  # late lists it by default
     "error: invalid env: env.penalty_curriculum.late: 'ang_vel_xy' is also in env.penalty_curriculum.exempt; "
     "expected a penalty either at full weight from the start (exempt) or from zero (late; its default is "
     "['ang_vel_xy']: to exempt that one, also set env.penalty_curriculum.late=[])",
     ["env.penalty_curriculum.exempt=[ang_vel_xy]", "env.penalty_curriculum.late=[]"]),
], ids=["exempt twice", "exempt and late"])
def test_a_penalty_list_that_does_not_fit_is_one_error_line(bad, line, good, config):
    result = config("--algo", "sac", "--task", "g1_walk_flat", *bad)
    assert result.returncode == 2 and result.stdout == "", result.stderr
    assert [ln for ln in result.stderr.splitlines() if ln.strip()] == [line], result.stderr
    ok = config("--algo", "sac", "--task", "g1_walk_flat", *good)
    assert ok.returncode == 0, ok.stderr


@pytest.mark.parametrize("value, line", [
    ("0.05", "error: invalid env.penalty_curriculum: env.penalty_curriculum.start=0.05 is below "
             "env.penalty_curriculum.min_scale=0.1; expected a scale in [min_scale, 1] = [0.1, 1]"),
    ("1.5", "error: invalid value for env.penalty_curriculum.start: 1.5 (input should be less than or equal to 1)"),
], ids=["below min_scale", "above 1"])
def test_a_penalty_curriculum_start_outside_the_scale_bounds_is_one_error_line(value, line, config):
    result = config("--algo", "sac", "--task", "g1_walk_flat", f"env.penalty_curriculum.start={value}")
    assert result.returncode == 2 and result.stdout == "", result.stderr
    assert [ln for ln in result.stderr.splitlines() if ln.strip()] == [line], result.stderr
    ok = config("--algo", "sac", "--task", "g1_walk_flat", "env.penalty_curriculum.start=0.1")
    assert ok.returncode == 0, ok.stderr
    assert yaml.safe_load(ok.stdout)["env"]["penalty_curriculum"]["start"] == 0.1
