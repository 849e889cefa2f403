"""Test helpers: :class:`PointEnv`, a tiny deterministic :class:`unilab_rl.vecenv.VecEnv`, and
:class:`SymmetricPointEnv`, the same with a left/right mirror (``env.mirror``).

In the package (not a conftest) so that a spawned collector process can import it by name.
"""

from __future__ import annotations

import os

import torch

DEVICE = torch.device("cpu")


class PointEnv:
    """A 1-D point that must reach a target; implements :class:`unilab_rl.vecenv.VecEnv`.

    - State: position ``x`` and target ``g``, both drawn uniformly in [-1, 1] at reset.
    - Action: velocity command in the asymmetric box ``[-1, 2]``; ``x <- clamp(x + STEP * a, -3, 3)``.
    - Reward: ``-|g - x|`` after the move.
    - Termination (terminal state): ``|g - x| < REACH`` after the move.
    - Truncation (time-out): ``max_episode_length`` steps without reaching the target.
    - Observations: ``actor = [g - x]``, ``critic = [g - x, x, t / T]`` (asymmetric).

    Deterministic for a given seed (its own torch.Generator).
    """

    STEP = 0.2
    REACH = 0.05

    def __init__(self, num_envs: int = 8, max_episode_length: int = 20, seed: int = 0) -> None:
        self.num_envs = num_envs
        self.num_actions = 1
        self.obs_dims = {"actor": 1, "critic": 3}
        self.action_low = torch.tensor([-1.0])
        self.action_high = torch.tensor([2.0])
        self.max_episode_length = max_episode_length
        self.device = DEVICE
        self.generator = torch.Generator().manual_seed(seed)
        self.x = torch.zeros(num_envs)
        self.g = torch.zeros(num_envs)
        self.t = torch.zeros(num_envs, dtype=torch.long)
        self.episode_distance = torch.zeros(num_envs)

    def _reset_rows(self, rows: torch.Tensor) -> None:
        n = int(rows.sum())
        self.x[rows] = torch.rand(n, generator=self.generator) * 2 - 1
        self.g[rows] = torch.rand(n, generator=self.generator) * 2 - 1
        self.t[rows] = 0
        self.episode_distance[rows] = 0.0

    def _obs(self) -> dict[str, torch.Tensor]:
        d = (self.g - self.x).unsqueeze(-1)
        tau = (self.t.float() / self.max_episode_length).unsqueeze(-1)
        return {"actor": d.clone(), "critic": torch.cat([d, self.x.unsqueeze(-1), tau], dim=-1)}

    def reset(self) -> dict[str, torch.Tensor]:
        self._reset_rows(torch.ones(self.num_envs, dtype=torch.bool))
        return self._obs()

    def step(self, actions: torch.Tensor):
        a = actions.squeeze(-1).clamp(self.action_low[0], self.action_high[0])
        self.x = (self.x + self.STEP * a).clamp(-3.0, 3.0)
        self.t += 1
        distance = (self.g - self.x).abs()
        reward = -distance
        self.episode_distance += distance
        terminated = distance < self.REACH
        truncated = (self.t >= self.max_episode_length) & ~terminated
        final_obs = self._obs()
        done = terminated | truncated
        log: dict[str, float] = {}
        if bool(done.any()):
            log["Episode_Reward/distance"] = float(-self.episode_distance[done].mean())
            log["Episode_Termination/reached"] = float(terminated[done].float().mean())
            self._reset_rows(done)
        return self._obs(), reward, terminated, truncated, {"final_obs": final_obs, "log": log}

    def close(self) -> None:
        pass

    def oracle_actions(self) -> torch.Tensor:
        """A hand-written near-optimal controller: move straight to the target."""
        return ((self.g - self.x) / self.STEP).clamp(-1.0, 2.0).unsqueeze(-1)


class SymmetricPointEnv(PointEnv):
    """:class:`PointEnv` with the symmetric action box ``[-1, 1]`` and a mirror (``x -> -x``):
    ``env.mirror`` negates ``g - x`` and ``x`` (and the action) and keeps ``t / T``; rewards,
    terminations and time-outs are the same for a state and its mirror image."""

    def __init__(self, num_envs: int = 8, max_episode_length: int = 20, seed: int = 0) -> None:
        from unilab_rl.vecenv import Mirror

        super().__init__(num_envs, max_episode_length, seed)
        self.action_low = torch.tensor([-1.0])
        self.action_high = torch.tensor([1.0])
        self.mirror = Mirror(
            obs={"actor": (torch.tensor([0]), torch.tensor([-1.0])),
                 "critic": (torch.tensor([0, 1, 2]), torch.tensor([-1.0, -1.0, 1.0]))},
            actions=(torch.tensor([0]), torch.tensor([-1.0])),
        )  # fmt: skip


def live_children() -> list[int]:
    """Live child pids of this process (Linux /proc), except multiprocessing's resource tracker
    (one per process, shared by every multiprocessing user; it exits with its parent) and zombies."""
    with open(f"/proc/{os.getpid()}/task/{os.getpid()}/children") as f:
        pids = [int(p) for p in f.read().split()]
    alive = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            with open(f"/proc/{pid}/cmdline") as f:
                cmdline = f.read()
            if state != "Z" and "resource_tracker" not in cmdline:
                alive.append(pid)
        except FileNotFoundError:
            pass
    return alive


def fill_random(agent, env, steps: int) -> None:
    """Reset ``env`` and store ``steps`` env steps of the learner's uniform warm-up actions
    (``agent.random_actions``) with ``agent.store``: a replay buffer to update from.

    The transitions carry the env's ``extras["final_obs"]`` as the next observation and its
    ``truncated`` flags, as the runners store them.
    """
    obs = env.reset()
    for _ in range(steps):
        actions = agent.random_actions(env.num_envs)
        next_obs, rewards, terminated, truncated, extras = env.step(actions)
        agent.store(obs, actions, rewards, terminated, extras["final_obs"], truncated)
        obs = next_obs


__all__ = ["PointEnv", "fill_random", "live_children", "make_learner"]


def make_learner(learner_cls: type, config_cls: type, env, **settings):
    """Build a learner from one flat set of settings, as scripts and tests write them.

    ``settings`` may mix the algorithm's hyperparameters (fields of ``config_cls``), execution
    settings (fields of :class:`unilab_rl.runtime.RuntimeConfig`; the runtime defaults to
    ``mode="sync"`` here), ``device`` (default ``"cpu"``) and ``max_iterations`` (the run length
    schedules see; default 1000). A key that fits none of them raises ``TypeError`` naming it.

    Example: ``make_learner(SAC, SACConfig, env, batch_size=64, mode="async", device="cpu")``.
    """
    import dataclasses

    from unilab_rl.runtime import RuntimeConfig

    algo_fields = {f.name for f in dataclasses.fields(config_cls)}
    runtime_fields = {f.name for f in dataclasses.fields(RuntimeConfig)}
    device = settings.pop("device", "cpu")
    max_iterations = settings.pop("max_iterations", 1000)
    unknown = sorted(set(settings) - algo_fields - runtime_fields)
    if unknown:
        raise TypeError(f"unknown settings for {learner_cls.__name__}: {unknown}")
    algo = config_cls(**{k: v for k, v in settings.items() if k in algo_fields})
    runtime = RuntimeConfig(**{"mode": "sync", **{k: v for k, v in settings.items() if k in runtime_fields}})
    return learner_cls(env, algo, device, runtime, **({"max_iterations": max_iterations}
                                                       if "max_iterations" in _init_params(learner_cls) else {}))


def _init_params(cls: type) -> set[str]:
    import inspect

    return set(inspect.signature(cls.__init__).parameters)
