"""`unilab export`: ONNX parity with the torch policy, the metadata round trip, and the check in
run_summary.json."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from unilab.deploy import DEFAULT_ATOL
from unilab.deploy.export import export, max_abs_diff, read_metadata
from unilab.robots import g1

onnxruntime = pytest.importorskip("onnxruntime")

OBS_DIM = 103  # g1_walk_flat actor: 99 + the 4 gait-clock columns the SAC owner default turns on


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, finished_walk_run) -> Path:
    """A real run directory whose last checkpoint holds a non-trivial policy: random mean-head
    weights (training starts them at zero) four times the size 40 laptop iterations reach, in
    the actor and in its moving average, and normalizer statistics far from (0, 1)."""
    run = finished_walk_run(tmp_path_factory.mktemp("export"))
    path = run / "model_last.pt"
    ckpt = torch.load(path, weights_only=True)
    gen = torch.Generator().manual_seed(0)
    actor = ckpt["agent"]["actor"]
    for key in ("mean_head.weight", "mean_head.bias"):
        actor[key] = 0.01 * torch.randn(actor[key].shape, generator=gen)
        if "actor_average" in ckpt["agent"]:  # the deployed actor (algo.actor_ema): the same weights
            ckpt["agent"]["actor_average"][key] = actor[key].clone()
    norm = ckpt["agent"]["obs_normalizers"]
    norm["actor.mean"] = torch.randn(norm["actor.mean"].shape, generator=gen)
    norm["actor.var"] = torch.rand(norm["actor.var"].shape, generator=gen) * 4 + 0.1
    torch.save(ckpt, path)
    return run


@pytest.fixture(scope="module")
def exported(run_dir):
    return export(str(run_dir), num_envs=2, record_steps=20, num_random=512)


@pytest.fixture(scope="module")
def torch_policy(run_dir, checkpoint_policy):
    """The checkpoint's torch policy, built afresh (not the module export() compared against)."""
    return checkpoint_policy(run_dir)[0]


def test_onnx_matches_the_torch_policy(exported, torch_policy):
    assert exported.checker == "passed" and exported.verified
    assert exported.max_abs_diff_random < 1e-5 and exported.max_abs_diff_recorded < 1e-5
    assert exported.samples_recorded == 2 * 20

    # Independently of export()'s own check: a fresh torch policy and onnxruntime on new inputs.
    policy = torch_policy
    obs = 2.0 * torch.randn(256, OBS_DIM, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        want = policy(obs).numpy()
    session = onnxruntime.InferenceSession(str(exported.path), providers=["CPUExecutionProvider"])
    got = session.run(["actions"], {"obs": obs.numpy()})[0]
    assert got.shape == (256, 29) and got.dtype == np.float32
    assert np.abs(got - want).max() < 1e-5
    assert want.std(axis=0).mean() > 1e-2, "a constant policy would make this check vacuous"


def test_the_check_catches_a_policy_without_its_normalizer(exported, torch_policy):
    policy = torch_policy
    obs = 2.0 * torch.randn(64, OBS_DIM, generator=torch.Generator().manual_seed(2))
    assert max_abs_diff(exported.path, policy, obs) < DEFAULT_ATOL
    assert max_abs_diff(exported.path, policy.actor.deterministic_action, obs) > 100 * DEFAULT_ATOL


def test_metadata_round_trip(exported):
    meta = read_metadata(exported.path)
    assert meta == json.loads(json.dumps(exported.metadata))
    assert meta["unilab_policy_schema"] == 1

    obs = meta["observation"]
    assert (obs["input"], obs["group"], obs["dim"]) == ("obs", "actor", OBS_DIM)
    terms = obs["terms"]
    assert [t["name"] for t in terms][:3] == ["base_lin_vel", "base_ang_vel", "projected_gravity"]
    assert terms[0]["start"] == 0 and terms[-1]["stop"] == OBS_DIM
    assert [t["name"] for t in terms][-1] == "gait_phase"
    assert all(a["stop"] == b["start"] for a, b in zip(terms, terms[1:]))
    assert all(t["dim"] == t["stop"] - t["start"] > 0 for t in terms)

    action = meta["action"]
    assert action["joint_names"] == list(g1.G1_JOINT_NAMES)
    assert [action["actuator_names"][i] for i in action["actuator_index"]] == action["joint_names"]
    for key in ("scale", "offset", "low", "high"):
        assert len(action[key]) == 29
    assert meta["default_joint_pos"] == action["offset"]
    assert meta["default_joint_pos"] == pytest.approx(
        [g1.KEYFRAMES["knees_bent"][1].get(j, 0.0) for j in g1.G1_JOINT_NAMES], abs=1e-6
    )
    assert meta["control"]["rate_hz"] == pytest.approx(50.0)
    assert meta["control"]["decimation"] == 4
    assert len(meta["pd_gains"]["kp"]) == 29 and min(meta["pd_gains"]["kp"]) > 0
    assert meta["normalizer"]["in_graph"] is True
    assert meta["source"]["algo"] == "sac" and meta["source"]["task"] == "g1_walk_flat"
    assert meta["source"]["actor_ema"] == 0.005  # the SAC g1_walk_flat default deploys the average
    assert meta["robot"] == {"name": "g1", "mjcf": None, "actuators": "project", "feet": "project"}  # the built-in model

    # what a host needs to build the command and gait_phase columns, as the run trained them
    commands = meta["commands"]
    assert commands["twist"]["class"].endswith("UniformVelocityCommand")
    # the export env is the play env: its fixed forward command, listed in source.overrides
    assert commands["twist"]["settings"]["lin_vel_x"] == [0.5, 0.5]
    assert "env.commands.lin_vel_x=[0.5,0.5]" in meta["source"]["overrides"]
    gait = commands["gait"]
    assert gait["class"].endswith("GaitPhaseCommand") and "gait clock" in gait["description"]
    assert gait["settings"]["period_s"] == 1.0 and gait["settings"]["frequency_width_hz"] == 0.2
    assert gait["settings"]["velocity_command"] == "twist"


def test_run_summary_records_the_check(run_dir, exported):
    s = json.loads((run_dir / "run_summary.json").read_text())
    assert s["onnx_max_abs_diff"] == exported.max_abs_diff
    assert s["onnx"]["path"] == "policy.onnx" and s["onnx"]["verified"] is True
    assert s["onnx"]["checkpoint"] == "model_last.pt" and s["onnx"]["iteration"] == 2


def test_an_earlier_checkpoint_exports_beside_the_final_policy(run_dir, exported):
    final_bytes = (run_dir / "policy.onnx").read_bytes()
    before = json.loads((run_dir / "run_summary.json").read_text())
    payload = torch.load(run_dir / "model_last.pt", weights_only=True)
    payload["iteration"] = 1
    torch.save(payload, run_dir / "model_1.pt")
    try:
        result = export(str(run_dir), checkpoint="model_1.pt", num_envs=1, record_steps=4, num_random=64)
    finally:
        (run_dir / "model_1.pt").unlink()
    assert result.path == run_dir / "policy_1.onnx" and result.verified and not result.final
    assert (run_dir / "policy.onnx").read_bytes() == final_bytes, "the final policy.onnx was overwritten"
    assert read_metadata(result.path)["source"]["iteration"] == 1
    s = json.loads((run_dir / "run_summary.json").read_text())
    assert s["onnx"] == before["onnx"] and s["onnx_max_abs_diff"] == before["onnx_max_abs_diff"]
    entry = s["onnx_checkpoints"]["1"]
    assert entry["path"] == "policy_1.onnx" and entry["checkpoint"] == "model_1.pt"
    assert entry["iteration"] == 1 and entry["max_abs_diff"] == result.max_abs_diff


def test_export_command_prints_the_difference(run_dir, tmp_path, unilab_in_process):
    out = tmp_path / "p.onnx"
    result = unilab_in_process("export", str(run_dir), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert "onnx.checker passed" in result.stdout and "max |onnx - torch| = " in result.stdout
    assert "(iteration 2; the actor's moving average, algo.actor_ema=0.005)" in result.stdout, result.stdout
    assert out.exists() and read_metadata(out)["action"]["dim"] == 29


@pytest.mark.parametrize("overrides", [["runtime.cuda_graph=true"],
                                       ["runtime.mode=async", "runtime.collector_shards=2"]])
def test_training_only_settings_do_not_stop_a_cpu_rebuild(run_dir, overrides, checkpoint_policy):
    """runtime.cuda_graph=true (valid only for a CUDA learner) and the async runtime's shard counts
    (which must divide the training env count, not the play env's 1) are training settings: play
    and export rebuild the policy on the CPU for one env all the same."""
    policy, group = checkpoint_policy(run_dir, overrides)  # as the config of a GPU machine's run
    assert group == "actor" and policy(torch.zeros(1, OBS_DIM)).shape == (1, 29)


def test_the_docs_state_the_bar_the_check_applies():
    """docs/play_export.md states one parity bar, and it is the default the check applies."""
    import re

    from unilab.cli import export as export_command

    root = Path(__file__).resolve().parents[2]
    text = (root / "docs" / "play_export.md").read_text()
    bars = re.findall(r"max \|onnx - torch\| <= ([0-9.]+e-[0-9]+)", text)
    assert bars and {float(b) for b in bars} == {DEFAULT_ATOL}
    assert not re.search(r"(below|<) 1e-5", text), "a stricter promise than the check makes"
    import inspect

    assert inspect.signature(export_command).parameters["atol"].default.default == DEFAULT_ATOL


def test_motion_tracking_metadata_names_the_clips_the_policy_tracks():
    """A tracking policy's metadata says which reference motion it was trained to follow."""
    from unilab.deploy.export import command_settings
    from unilab.tasks.g1_motion_tracking import G1MotionTrackingConfig, make_env
    from unisim.backends.mujoco import MujocoBackend

    env = make_env(G1MotionTrackingConfig(), backend_cls=MujocoBackend, num_envs=2, nthread=1)
    try:
        motion = command_settings(env)["motion"]
        infos = env.commands["motion"].clips
    finally:
        env.close()
    assert motion["class"].endswith("MotionCommand") and motion["sampling"] == "adaptive"
    assert [c["name"] for c in motion["clips"]] == [c.name for c in infos] and len(infos) >= 1
    clip = motion["clips"][0]
    assert clip["source"].endswith(".npz") and clip["num_frames"] == infos[0].num_frames
    assert clip["duration_s"] == pytest.approx((clip["num_frames"] - 1) / clip["fps"])
    json.dumps(motion)  # JSON-safe, as the ONNX metadata needs
