"""FlashSAC on Gymnasium's MuJoCo Humanoid through unilab_rl, against the official published curve.

The learner's own check, away from the G1 tasks: unilab_rl's FlashSAC trains Gymnasium's
``Humanoid-v4`` (or ``-v5``) through the :class:`unilab_rl.vecenv.VecEnv` protocol (a small adapter
below) with the official implementation's CPU-simulator settings, and the script prints its
evaluation returns next to the official FlashSAC returns at the same env steps.

Official settings (``Holiday-Robot/FlashSAC`` at 87edc90, ``scripts/run_mujoco.sh`` and
``configs/flashSAC_base.yaml`` / ``configs/agent/flashSAC.yaml``): one env, actions rescaled to
``[-1, 1]`` (``flash_rl/envs/__init__.py``, ``RescaleAction``), 1 M env steps, replay 1 M with
updates from 10 k transitions on (uniform random actions until then), batch 512, one update per env
step, gamma 0.99, 1-step returns, tau 0.01, no AMP, symmetric observations, the learning-rate
cosine over the whole 1 M-update run; evaluation every 100 k env steps: the deterministic policy
``tanh(mean)``, mean return of 50 episodes (``flash_rl/evaluation.py``). Everything else is
FlashSAC's default in both codes (networks, 101 atoms on +-5, reward scaling, held noise, unified
entropy target).

Published figure: ``results/stateRL_cpusim/FlashSAC.csv`` at 87edc90, ``Humanoid-v4``,
``avg_return``, five seeds (0, 1000, 2000, 3000, 4000); :data:`OFFICIAL` holds their mean, min and
max per 100 k env steps. ``Humanoid-v5`` (Gymnasium's current version: same reward terms, fixed
contact-force observations, 348 instead of 376 observations) is not in the published set.

GPU machine (about 25 min per seed for the full 1 M steps; 300 k steps about 8 min)::

    python benchmarks/humanoid_flashsac.py --steps 300000 --seeds 0,1000,2000 --device cuda --out humanoid.json

A short CPU smoke run (minutes; far too short and too small to learn)::

    python benchmarks/humanoid_flashsac.py --steps 1500 --learning-starts 500 --eval-every 500 \\
        --eval-episodes 1 --device cpu --set batch_size=64 --set critic_hidden_dim=64 --set actor_hidden_dim=32

Needs ``gymnasium`` (and ``imageio``, which its MuJoCo module imports) beside the MuJoCo already in
the workspace: ``pip install gymnasium imageio``. Not part of CI.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
import warnings

import torch

OFFICIAL_SOURCE = "Holiday-Robot/FlashSAC@87edc90 results/stateRL_cpusim/FlashSAC.csv (Humanoid-v4, 5 seeds)"
OFFICIAL: dict[int, tuple[float, float, float]] = {
    0: (99.3, 83.4, 137.5),
    100_000: (6138.3, 1834.1, 7883.6),
    200_000: (9640.2, 8471.5, 10217.7),
    300_000: (10569.7, 9709.2, 10822.8),
    400_000: (10409.8, 6756.7, 11533.2),
    500_000: (11367.7, 10609.1, 11768.4),
    600_000: (10281.2, 4647.8, 12260.5),
    700_000: (10829.8, 7860.8, 12389.3),
    800_000: (11869.6, 10648.7, 12324.6),
    900_000: (12426.3, 12185.9, 12853.6),
    1_000_000: (12606.1, 12328.7, 12713.3),
}
"""Env step -> (mean, min, max) over the five published seeds of the deterministic policy's return."""

OFFICIAL_SETTINGS = dict(
    learning_starts=10_000, buffer_size_per_env=1_000_000, batch_size=512, num_updates=1, gamma=0.99, n_step=1,
    tau=0.01, actor_update_period=2, lr=3e-4, lr_end=1.5e-4, num_bins=101, normalized_g_max=5.0,
    init_temperature=0.01, target_sigma=0.15, entropy_units="squashed", noise_repeat=True,
)
"""FlashSACConfig values of the official CPU-simulator runs (the rest are FlashSAC's defaults)."""


class GymVecEnv:
    """``num_envs`` Gymnasium environments as a :class:`unilab_rl.vecenv.VecEnv` on the CPU.

    Each env's actions are rescaled to ``[-1, 1]`` (``gymnasium.wrappers.RescaleAction``), as the
    official code does; observations form the ``"actor"`` group (no privileged critic group). An
    env that ends is reset at once; ``extras["final_obs"]`` holds the observation it ended in.

    Args:
        env_id: a Gymnasium id, e.g. ``"Humanoid-v4"``.
        num_envs: envs stepped one after another.
        seed: env ``i`` is reset with ``seed + i`` first.
    """

    def __init__(self, env_id: str, num_envs: int = 1, seed: int = 0) -> None:
        import gymnasium as gym
        import numpy as np

        self._np = np
        self.envs = [gym.wrappers.RescaleAction(gym.make(env_id), np.float32(-1.0), np.float32(1.0))
                     for _ in range(num_envs)]
        space = self.envs[0].action_space
        self.num_envs, self.num_actions = num_envs, int(space.shape[0])
        self.obs_dims = {"actor": int(self.envs[0].observation_space.shape[0])}
        self.action_low = torch.as_tensor(space.low, dtype=torch.float32)
        self.action_high = torch.as_tensor(space.high, dtype=torch.float32)
        self.max_episode_length = int(self.envs[0].spec.max_episode_steps or 1000)
        self.device = torch.device("cpu")
        self.seed = seed
        self._obs: list | None = None

    def _group(self, rows: list) -> dict[str, torch.Tensor]:
        return {"actor": torch.as_tensor(self._np.stack(rows), dtype=torch.float32)}

    def reset(self) -> dict[str, torch.Tensor]:
        self._obs = [env.reset(seed=self.seed + i)[0] for i, env in enumerate(self.envs)]
        return self._group(self._obs)

    def step(self, actions: torch.Tensor):
        acts = actions.detach().cpu().numpy()
        obs, final, rewards, terminated, truncated = [], [], [], [], []
        for i, env in enumerate(self.envs):
            o, r, te, tr, _ = env.step(acts[i])
            final.append(o)
            if te or tr:
                o, _ = env.reset()
            obs.append(o)
            rewards.append(r)
            terminated.append(te)
            truncated.append(tr and not te)
        self._obs = obs
        extras = {"final_obs": self._group(final), "log": {}}
        return (self._group(obs), torch.tensor(rewards, dtype=torch.float32), torch.tensor(terminated),
                torch.tensor(truncated), extras)

    def close(self) -> None:
        for env in self.envs:
            env.close()


def evaluate(learner, env: GymVecEnv, episodes: int, seed: int) -> float:
    """Mean return of ``episodes`` episodes of the deterministic policy (``squash(mean)``) on a
    one-env ``env``, episode ``k`` reset with ``seed + k``."""
    returns = []
    for k in range(episodes):
        env.seed = seed + k
        obs, total, done = env.reset(), 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(learner.act(obs["actor"], deterministic=True))
            total += float(reward[0])
            done = bool(terminated[0] or truncated[0])
        returns.append(total)
    return statistics.mean(returns)


def parse_sets(pairs: list[str], config_cls) -> dict:
    """``key=value`` strings -> FlashSACConfig fields, typed like the field's default."""
    fields = {f.name: f for f in dataclasses.fields(config_cls)}
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or key not in fields:
            raise SystemExit(f"error: --set {pair!r}: expected KEY=VALUE with KEY a FlashSACConfig field")
        default = fields[key].default
        if isinstance(default, bool):
            out[key] = value.lower() in ("1", "true", "yes")
        elif isinstance(default, int):
            out[key] = int(value)
        elif isinstance(default, float):
            out[key] = float(value)
        else:
            out[key] = None if value.lower() in ("null", "none") else value
    return out


def run_seed(args: argparse.Namespace, seed: int, settings: dict) -> list[tuple[int, float]]:
    """Train one seed; returns [(env steps, evaluation return)] at every ``--eval-every`` steps."""
    from unilab_rl import FlashSAC, FlashSACConfig, OffPolicyRunner
    from unilab_rl.testing import make_learner

    torch.manual_seed(seed)
    env, eval_env = GymVecEnv(args.env, args.num_envs, seed), GymVecEnv(args.env, 1, 10_000 + seed)
    learner = make_learner(FlashSAC, FlashSACConfig, env, device=args.device, max_iterations=args.schedule_steps,
                           mixed_precision=False, **settings)
    runner = OffPolicyRunner(env, learner, seed=seed, log_interval=10**9)
    curve = [(0, evaluate(learner, eval_env, args.eval_episodes, 10_000 + seed))]
    print(f"seed {seed}: step 0 return {curve[-1][1]:.1f}", flush=True)
    t0 = time.perf_counter()
    done = 0
    try:
        while done < args.steps:
            target = min(done + args.eval_every, args.steps)
            while done < target:  # progress lines, so that a run cut short still shows its pace
                chunk = max(min(args.progress_every, target - done) // args.num_envs, 1)
                runner.learn(chunk)
                done += chunk * args.num_envs
                print(f"seed {seed}: {done} env steps, {done / (time.perf_counter() - t0):.0f} env steps/s",
                      flush=True)
            curve.append((done, evaluate(learner, eval_env, args.eval_episodes, 10_000 + seed)))
            print(f"seed {seed}: step {done} return {curve[-1][1]:.1f} ({time.perf_counter() - t0:.0f} s, "
                  f"cuda_graphs={learner.cuda_graphs})", flush=True)
    finally:
        env.close()
        eval_env.close()
    return curve


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env", default="Humanoid-v4", help="Gymnasium id (the published curve is Humanoid-v4)")
    p.add_argument("--steps", type=int, default=1_000_000, help="env steps per seed")
    p.add_argument("--seeds", default="0", help="comma-separated (the official ones: 0,1000,2000,3000,4000)")
    p.add_argument("--num-envs", type=int, default=1)
    p.add_argument("--device", default="auto")
    p.add_argument("--learning-starts", type=int, default=None, help="override the official 10,000 (env steps)")
    p.add_argument("--schedule-steps", type=int, default=1_000_000,
                   help="horizon of the cosine learning-rate schedule in iterations (official: the 1 M-step run)")
    p.add_argument("--eval-every", type=int, default=100_000)
    p.add_argument("--eval-episodes", type=int, default=50)
    p.add_argument("--progress-every", type=int, default=10_000, help="env steps between progress lines")
    p.add_argument("--set", action="append", default=[], help="FlashSACConfig KEY=VALUE (repeatable)")
    p.add_argument("--out", default=None, help="write the curves as JSON here")
    args = p.parse_args(argv)
    warnings.filterwarnings("ignore", message=".*out of date.*")  # Humanoid-v4 is the published version
    try:
        import gymnasium  # noqa: F401
    except ImportError:
        print("error: gymnasium is not installed: pip install gymnasium imageio", file=sys.stderr)
        return 2
    for name in ("steps", "num_envs", "eval_every", "eval_episodes", "schedule_steps", "progress_every"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    from unilab_rl import FlashSACConfig

    settings = {**OFFICIAL_SETTINGS, "num_updates": args.num_envs}  # one update per env step
    if args.learning_starts is not None:
        settings["learning_starts"] = max(args.learning_starts // args.num_envs, 1)
    settings |= parse_sets(args.set, FlashSACConfig)
    settings["buffer_size_per_env"] = min(settings["buffer_size_per_env"], -(-args.steps // args.num_envs))
    print(f"FlashSAC on {args.env}: {json.dumps(settings)}", flush=True)
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    curves = {seed: run_seed(args, seed, settings) for seed in seeds}

    print(f"\nevaluation return (deterministic policy, {args.eval_episodes} episodes) against {OFFICIAL_SOURCE}")
    print(f"{'env steps':>10s} {'ours: mean':>11s} {'min':>9s} {'max':>9s} {'official: mean':>15s} {'min':>9s} {'max':>9s}")
    for i, (step, _) in enumerate(curves[seeds[0]]):
        ours = [curves[s][i][1] for s in seeds]
        ref = OFFICIAL.get(step)
        ref_s = f"{ref[0]:15.1f} {ref[1]:9.1f} {ref[2]:9.1f}" if ref else f"{'-':>15s} {'-':>9s} {'-':>9s}"
        print(f"{step:10d} {statistics.mean(ours):11.1f} {min(ours):9.1f} {max(ours):9.1f} {ref_s}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"env": args.env, "settings": settings, "official_source": OFFICIAL_SOURCE,
                       "official": OFFICIAL, "curves": {str(s): c for s, c in curves.items()}}, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
