"""Motion-tracking probe of an exported g1_motion_tracking policy: play the clip, measure.

One command, from the repository root (packages installed, or PYTHONPATH set to the four src dirs):

    python benchmarks/motion_probe.py logs/sac/g1_motion_tracking/RUN
    python benchmarks/motion_probe.py logs/sac/g1_motion_tracking/RUN --num-envs 16 --json probe.json

It loads ``<run>/policy.onnx`` (onnxruntime, CPU; the normalizer is in the graph) and
``<run>/run_config.json``, and rebuilds the run's env with the task's play settings, as
``unilab play`` does (:data:`unilab.deploy.loading.PLAY_OVERRIDES`): every row starts at the
clip's first frame in the exact reference state (no reset noise), no observation noise, no pushes.
The startup domain randomization (friction, CoM, encoder bias) stays, so rows differ. No
checkpoint (``model_*.pt``) is needed, so a run whose checkpoints stayed on the training machine
can still be measured.

Each row plays the clip once, deterministically (the policy's mean action): the rollout lasts
the clip's length in env steps, and a row that ends earlier (fall, anchor or end-effector
termination) is counted and stops there. It prints:

* completed: rows that reached the clip's end (the ``motion_end`` time-out) or the rollout's end;
* mean episode length, in steps and as a fraction of the clip's length (the maximum, since the
  episode ends with the clip);
* per tracking term, the mean kernel value over the steps played (rows' steps before they
  ended) and, times the term's weight, the reward per second of play, e.g. ``motion_body_pos`` =
  exp(-mean_b |p_b - p_b^ref|^2 / std^2) of the anchor-relative body positions: 1.0 is exact;
* the termination terms that fired, with counts (a row can trip several in one step).

The tracking bar the project holds a default run to (issue 5), on these numbers: mean episode
length >= 90 % of the maximum and the relative body position kernel >= 0.85 (the reward >= 0.85
of its weight). The training log's
``Episode_Reward/<term>`` divides an episode's sum by the 10 s time-out, not by the episode's
length, so with the clip's 6 s and adaptive start times it reads far below these.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tracking_probe import OnnxPolicy  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run", type=Path, help="run directory with policy.onnx and run_config.json")
    p.add_argument("--onnx", type=Path, default=None, help="ONNX file (default <run>/policy.onnx)")
    p.add_argument("--num-envs", type=int, default=8)
    p.add_argument("--threads", type=int, default=1, help="physics threads")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", type=Path, default=None, help="write the results here")
    p.add_argument("overrides", nargs="*", help="key=value over the run config and the play settings")
    args = p.parse_args(argv)
    if args.num_envs < 1:
        p.error(f"--num-envs must be >= 1, got {args.num_envs}")

    from unilab.deploy.export import read_metadata
    from unilab.deploy.loading import make_env, run_config

    onnx_path = args.onnx or args.run / "policy.onnx"
    if not onnx_path.is_file():
        raise SystemExit(f"no ONNX policy at {onnx_path} (unilab export RUN writes one from a checkpoint)")
    loaded = run_config(args.run, [f"sim.nthread={args.threads}", f"training.seed={args.seed}", *args.overrides],
                        checkpoint=onnx_path, play=True)
    if loaded.task != "g1_motion_tracking":
        raise SystemExit(f"{args.run} is a {loaded.task!r} run; this probe plays g1_motion_tracking clips")
    env = make_env(loaded, args.num_envs)
    policy = OnnxPolicy(onnx_path)
    if policy.dim != env.obs_dims["actor"]:
        raise SystemExit(f"the ONNX policy reads {policy.dim} observations, the env gives {env.obs_dims['actor']}")
    meta = read_metadata(onnx_path)

    if len(env.commands["motion"].clips) > 1:
        raise SystemExit(f"{args.run} tracks {len(env.commands['motion'].clips)} clips; this probe plays one "
                         "(pass env.motion.file=CLIP.npz to probe one of them)")
    clip_steps = int(env.commands["motion"].num_frames) - 1
    rewards = env.reward_manager
    tracking = [n for n in rewards.names if n.startswith("motion_")]
    cols = torch.tensor([rewards.names.index(n) for n in tracking])
    term_names = env.termination_manager.names
    n = args.num_envs
    kernel_sum = torch.zeros(len(tracking), dtype=torch.float64)
    steps_played = 0
    alive = torch.ones(n, dtype=torch.bool)
    length = torch.zeros(n, dtype=torch.long)
    fired = {name: 0 for name in term_names}
    failed = torch.zeros(n, dtype=torch.bool)  # ended by a termination term (not the clip's end)
    torch.set_num_threads(1)
    obs = env.reset()
    with torch.no_grad():
        for _ in range(clip_steps):
            obs, _, terminated, truncated, _ = env.step(policy(obs["actor"].to("cpu", torch.float32)))
            done = (terminated | truncated).cpu() & alive
            for j, name in enumerate(term_names):
                fired[name] += int((env.termination_manager.last[:, j].cpu() & done).sum())
            length += alive.long()
            failed |= terminated.cpu() & alive
            # The terms' own values this step, for rows still playing after it.
            keep = alive & ~done
            if keep.any():
                values = rewards.last_values()[:, cols].cpu().double()
                kernel_sum += values[keep].sum(dim=0)
                steps_played += int(keep.sum())
            alive &= ~done
    env.close()

    completed = int((~failed).sum())
    kernels = (kernel_sum / max(steps_played, 1)).tolist()
    result = {
        "run": str(args.run), "onnx_iteration": meta.get("source", {}).get("iteration"), "num_envs": n,
        "clip_steps": clip_steps, "completed": completed,
        "mean_episode_length": float(length.double().mean()),
        "episode_length_fraction": float(length.double().mean() / clip_steps),
        "kernels": dict(zip(tracking, kernels)),
        "weights": {name: rewards.terms[name].weight for name in tracking},
        "terminations": {k: v for k, v in fired.items() if v},
    }
    print(f"run {args.run} | onnx iteration {result['onnx_iteration']} | {n} rows from the clip's first frame, "
          f"{clip_steps} steps ({clip_steps * env.step_dt:.2f} s)")
    print(f"completed {completed}/{n} | mean episode length {result['mean_episode_length']:.1f} steps = "
          f"{100 * result['episode_length_fraction']:.1f} % of the clip | terminations {result['terminations']}")
    print(f"{'term':<28} {'kernel':>7} {'weight':>7} {'reward/s':>9}")
    for name, k in zip(tracking, kernels):
        w = result["weights"][name]
        print(f"{name:<28} {k:7.3f} {w:7.2f} {w * k:9.3f}")
    body = result["kernels"].get("motion_body_pos", float("nan"))
    ok = result["episode_length_fraction"] >= 0.9 and body >= 0.85
    print(f"tracking bar (length >= 90 % of the clip, motion_body_pos kernel >= 0.85): "
          f"{100 * result['episode_length_fraction']:.1f} %, {body:.3f} -> {'PASS' if ok else 'FAIL'}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
