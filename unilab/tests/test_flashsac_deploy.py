"""FlashSAC through the CLI and the deploy path: `unilab train --algo flashsac` ends normally, and
play and export work on a flashsac checkpoint (ONNX parity, the input batch norm as normalizer)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from unilab.deploy.export import export, max_abs_diff
from unilab.deploy.play import play
from unilab.errors import UserError
from unilab.train import train

onnxruntime = pytest.importorskip("onnxruntime")

UNILAB = str(Path(sys.executable).parent / "unilab")
OBS_DIM = 103  # g1_walk_flat actor: 99 + the 4 gait-clock columns the owner YAML turns on
TINY = [
    "training.num_envs=2", "training.max_iterations=3", "algo.batch_size=16", "algo.num_updates=1",
    "algo.learning_starts=1", "algo.buffer_size_per_env=8", "algo.actor_hidden_dim=32",
    "algo.critic_hidden_dim=32", "sim.nthread=1", "training.device=cpu", "training.progress=false",
    "training.no_play=true",
    # a checkpoint is all these tests need: one process, no evaluation of the final policy
    "runtime.mode=sync", "training.eval_interval=0",
    # the deployed policy is the actor itself, whose statistics the fixture moves
    "algo.actor_ema=0",
]


def test_cli_train_flashsac_laptop_preset_completes(tmp_path):
    cmd = [UNILAB, "train", "--algo", "flashsac", "--task", "g1_walk_flat", "--sim", "mujoco", "--preset", "laptop",
           "training.max_iterations=5", "training.no_play=true", "sim.nthread=1", f"training.log_dir={tmp_path / 'logs'}"]
    result = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    (run,) = list((tmp_path / "logs" / "flashsac" / "g1_walk_flat").iterdir())
    summary = json.loads((run / "run_summary.json").read_text())
    assert summary["status"] == "normal_completion" and summary["iterations"] == 5
    full = json.loads((run / "run_config.json").read_text())["config"]
    config = full["algo"]
    # Owner YAML, then the laptop preset, then the command line.
    assert (full["training"]["num_envs"], config["batch_size"], full["training"]["max_iterations"]) == (32, 128, 5)
    # The owner recipe: FlashSAC's critic trunk with a scalar head and SAC's actor, at SAC's rates.
    assert (config["critic"], config["actor"], config["gamma"], config["tau"]) == ("trunk", "mlp", 0.97, 0.125)
    assert config["actor_mlp_hidden"] == [128, 64]
    ckpt = torch.load(run / "model_last.pt", weights_only=True)
    assert ckpt["algo"] == "flashsac" and "critic_target" in ckpt["agent"]


@pytest.fixture(scope="module", params=["mlp", "residual"])
def run_dir(tmp_path_factory, request) -> Path:
    """A flashsac run with a few updates, with the owner YAML's actor (SAC's MLP) and with the
    paper's residual actor; the actor's input batch-norm statistics are then moved far from
    (0, 1) so that a policy without them would differ."""
    logs = tmp_path_factory.mktemp("flashsac") / "logs"
    run = train("flashsac", "g1_walk_flat", "mujoco", [*TINY, f"algo.actor={request.param}", "algo.actor_mlp_hidden=[32,32]",
                                                       f"training.log_dir={logs}"], argv=[])
    path = run / "model_last.pt"
    ckpt = torch.load(path, weights_only=True)
    assert ckpt["agent"]["num_critic_updates"] >= 2
    gen = torch.Generator().manual_seed(0)
    actor = ckpt["agent"]["actor"]
    prefix = {"mlp": "", "residual": "trunk."}[request.param]
    assert f"{prefix}input_norm.running_mean" in actor
    if request.param == "mlp":  # SAC's heads start at zero: give the mean head weights to see through
        actor["mean_head.weight"] = torch.randn(actor["mean_head.weight"].shape, generator=gen)
    actor[f"{prefix}input_norm.running_mean"] = torch.randn(OBS_DIM, generator=gen)
    actor[f"{prefix}input_norm.running_var"] = torch.rand(OBS_DIM, generator=gen) * 4 + 0.1
    torch.save(ckpt, path)
    return run


def test_export_matches_the_torch_policy_with_the_batch_norm_folded_in(run_dir, checkpoint_policy):
    result = export(str(run_dir), num_envs=2, record_steps=10, num_random=256)
    assert result.checker == "passed" and result.verified
    # Actions span up to about +-20 units (joint-limit bounds / action scale): 1e-4 absolute is a
    # relative float32 error near 1e-6 (the export's default --atol).
    assert result.max_abs_diff < 1e-4
    assert result.metadata["source"]["algo"] == "flashsac"
    # trained with algo.actor_ema=0: the export says the policy is the online actor
    assert result.metadata["source"]["actor_ema"] == 0.0 and result.lines()[0].endswith("(iteration 3; the online actor)")

    policy, group = checkpoint_policy(run_dir)
    assert group == "actor" and not policy.training
    obs = 2.0 * torch.randn(64, OBS_DIM, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        actions = policy(obs)
    assert actions.shape == (64, 29), actions.shape
    assert actions.std(0).mean() > 1e-2
    assert max_abs_diff(result.path, policy, obs) < 1e-4
    # The input batch norm is the normalizer: resetting its statistics changes the actions.
    norm = policy.actor.input_norm if hasattr(policy.actor, "input_norm") else policy.actor.trunk.input_norm
    with torch.no_grad():
        norm.running_mean.zero_()
        norm.running_var.fill_(1.0)
    assert max_abs_diff(result.path, policy, obs) > 1e-2


def test_play_rolls_out_the_flashsac_policy(run_dir):
    result = play(str(run_dir), num_envs=2, steps=10, record_video=False)
    assert int(result.episode_lengths.sum()) == 2 * 10
    assert torch.isfinite(result.episode_returns).all()
    assert result.observations.shape == (2 * 10, OBS_DIM)
    assert "(iteration 3; the online actor)" in result.lines()[0], result.lines()[0]


def test_play_with_another_network_kind_is_one_error_naming_the_key(run_dir):
    """A network-kind override the checkpoint was not trained with is the user's error, naming the
    key and the value that loads it, not a traceback from the learner."""
    with pytest.raises(UserError) as err:
        play(str(run_dir), num_envs=2, steps=2, record_video=False, overrides=["algo.critic=categorical"])
    message = str(err.value)
    assert "\n" not in message and "algo.critic=trunk" in message and "'categorical'" in message, message
