"""Peak memory of one gradient update per batch sample, the figure ``unilab/memory.py`` uses to
refuse runs that would not fit (``UPDATE_BYTES_PER_SAMPLE``).

Builds the learner on CPU for g1_walk_flat's sizes (actor 103, critic 115 observations, 29
actions, 1024 envs) without physics, fills its replay buffer with random transitions, and prints
the resident-memory peak's growth over the first ``update()`` (one critic update at
``--batch-size``, float32, no compile) divided by the batch size. One algorithm setting per
process, since a process's peak only grows::

    python benchmarks/update_memory.py --algo flashsac
    python benchmarks/update_memory.py --algo flashsac --set critic=mlp
    python benchmarks/update_memory.py --algo sac
"""

from __future__ import annotations

import argparse
import resource

import torch


class SizesOnly:
    """A :class:`unilab_rl.vecenv.VecEnv`'s sizes and action box, nothing to step."""

    def __init__(self, obs_dims: dict[str, int], num_actions: int, num_envs: int) -> None:
        self.num_envs, self.num_actions, self.obs_dims = num_envs, num_actions, obs_dims
        self.action_low, self.action_high = -torch.ones(num_actions), torch.ones(num_actions)
        self.device = torch.device("cpu")


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--algo", choices=("sac", "flashsac"), default="flashsac")
    ap.add_argument("--batch-size", type=int, default=8192)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="config field (strings only, e.g. critic=mlp, actor=mlp)")
    args = ap.parse_args()
    from unilab_rl import SAC, FlashSAC, FlashSACConfig, SACConfig
    from unilab_rl.testing import make_learner

    cls, cfg_cls = (FlashSAC, FlashSACConfig) if args.algo == "flashsac" else (SAC, SACConfig)
    extra = dict(pair.split("=", 1) for pair in args.set)
    if args.algo == "flashsac":
        extra["mixed_precision"] = False
    dims, actions, envs, rows_per_env = {"actor": 103, "critic": 115}, 29, 1024, 16
    env = SizesOnly(dims, actions, envs)
    learner = make_learner(cls, cfg_cls, env, device="cpu", batch_size=args.batch_size, num_updates=1,
                           buffer_size_per_env=rows_per_env, **extra)
    n = rows_per_env * envs
    obs = {g: torch.randn(n, d) for g, d in dims.items()}
    learner.replay.add(obs, torch.rand(n, actions) * 2 - 1, torch.randn(n), torch.zeros(n, dtype=torch.bool), obs)
    before = peak_rss_bytes()
    learner.update()
    per_sample = (peak_rss_bytes() - before) / args.batch_size
    print(f"{args.algo} {' '.join(args.set)}: {per_sample / 1e3:.0f} KB per sample "
          f"(peak growth of the first update at batch {args.batch_size})")


if __name__ == "__main__":
    main()
