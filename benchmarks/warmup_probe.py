"""What FlashSAC's uniform warm-up puts in its replay, per action box: rewards, episode lengths and
the reward scale the learner will divide by.

For each ``--bounds`` value it builds the task's env and a FlashSAC learner as ``unilab train --algo
flashsac --task T --sim mujoco`` would (owner YAML plus ``algo.action_bound=B`` and ``--set``
overrides), steps ``--iterations`` iterations of uniform random actions in the learner's box (the
warm-up, ``random_actions`` with a seeded CPU generator), stores them, and prints the stored
rewards' mean and standard deviation, the random-action episodes' mean length, the largest
running discounted return ``max |G|``, ``sqrt(Var G)`` and the divisor ``max(sqrt(Var G),
max |G| / normalized_g_max)`` (:class:`unilab_rl.algorithms.flashsac.exploration.RewardScaler`).
No gradient step runs. On the CPU, e.g.::

    python benchmarks/warmup_probe.py --task g1_walk_flat --bounds null,1.0,3.0
"""

from __future__ import annotations

import argparse

import torch


def probe(task: str, bound: str, num_envs: int, iterations: int, seed: int, extra: list[str]) -> str:
    """One box: build, warm up, summarize (one line)."""
    from unilab.build import algo_settings, prepare, seed_everything

    overrides = [f"algo.action_bound={bound}", f"algo.buffer_size_per_env={iterations}",
                 f"training.num_envs={num_envs}", "runtime.mode=sync", *extra]
    algo_reg, task_reg, backend_reg, cfg = prepare("flashsac", task, "mujoco", overrides, None)
    seed_everything(seed)
    algo_cfg, runtime = algo_settings(algo_reg, cfg)
    env = task_reg.item.make_env(cfg.env, backend_cls=backend_reg.item, num_envs=num_envs, nthread=1, cpu_ids=None,
                                 robot_mjcf=cfg.robot.mjcf, seed=seed)
    try:
        agent = algo_reg.item.make_agent(env, algo_cfg, device="cpu", runtime=runtime, max_iterations=iterations)
        generator = torch.Generator().manual_seed(seed)
        obs = env.reset()
        length = torch.zeros(num_envs)
        lengths: list[float] = []
        for _ in range(iterations):
            actions = agent.random_actions(num_envs, generator)
            nxt, rewards, terminated, truncated, extras = env.step(actions)
            agent.store(obs, actions, rewards, terminated, extras["final_obs"], truncated)
            obs = nxt
            length += 1
            done = terminated | truncated
            lengths += length[done].tolist()
            length[done] = 0
    finally:
        env.close()
    stored = agent.replay.rewards[: len(agent.replay)]
    scaler = agent.reward_scaler
    mean_length = f"{sum(lengths) / len(lengths):.1f} ({len(lengths)} ended)" if lengths else "none ended"
    return (f"{task} action_bound={bound}: reward mean {float(stored.mean()):.3f} std {float(stored.std()):.3f}; "
            f"random-action episode length {mean_length}; max|G| {float(scaler.return_abs_max):.2f}, "
            f"sqrt(Var G) {float(scaler.return_stats.var.sqrt()):.2f} -> reward divisor {float(scaler.scale()):.2f}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="g1_walk_flat")
    p.add_argument("--bounds", default="null,1.0,3.0", help="comma-separated algo.action_bound values")
    p.add_argument("--num-envs", type=int, default=64)
    p.add_argument("--iterations", type=int, default=100, help="warm-up iterations (the owner default: 100)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--set", action="append", default=[], help="extra key=value override (repeatable)")
    args = p.parse_args(argv)
    for name in ("num_envs", "iterations"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    for bound in (b.strip() for b in args.bounds.split(",") if b.strip()):
        print(probe(args.task, bound, args.num_envs, args.iterations, args.seed, args.set), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
