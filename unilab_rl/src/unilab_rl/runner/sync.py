"""Synchronous off-policy training loop: collect one env step, store it, update, record."""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

from unilab_rl.learner import Learner
from unilab_rl.runner.loop import LearnSummary, RunBook, RunnerBase, RunnerHooks
from unilab_rl.vecenv import VecEnv


class OffPolicyRunner(RunnerBase):
    """Runs an off-policy :class:`~unilab_rl.learner.Learner` on a :class:`~unilab_rl.vecenv.VecEnv`.

    One iteration is one env step of all envs plus the learner's gradient updates for it. The
    loop is synchronous (collection, then learning), in one process: the debugging and test mode.
    :class:`unilab_rl.async_runtime.AsyncOffPolicyRunner` overlaps the two.

    Args:
        env: the vector env; :meth:`learn` resets it on its first call.
        algo: the learner.
        hooks: the trainer's :class:`~unilab_rl.runner.RunnerHooks` (metrics, checkpoints,
            summary, progress); None: none.
        log_fn, checkpoint_fn: shorthands for hooks with only ``on_log`` / ``on_checkpoint``
            (:class:`~unilab_rl.runner.FunctionHooks`), called after ``hooks``' own.
        log_interval: iterations between ``on_log`` calls (>= 1); the last iteration always logs.
        checkpoint_interval: iterations between checkpoints; 0 saves only at the end.
        episode_window: finished episodes averaged into ``Train/mean_reward`` and
            ``Train/mean_episode_length``; ``None``: ``max(100, num_envs)``.
        seed: seed of the CPU generator of warm-up random actions; ``None`` draws one from
            torch's global RNG (reproducible under ``torch.manual_seed``). The async runner uses
            the same rule, so both runtimes take the same warm-up actions.
        steps_per_iteration: env steps one iteration stands for in the record (default
            ``num_envs``; data-parallel trainers pass ``num_envs * world_size``).
        goal_episode_length: mean episode length recorded as reached in
            :attr:`~unilab_rl.runner.LearnSummary.time_to_goal_episode_length`.

    Attributes:
        summary: the :class:`~unilab_rl.runner.LearnSummary` of the last :meth:`learn` call.

    Raises:
        ValueError: an interval or window out of range.
    """

    def __init__(
        self,
        env: VecEnv,
        algo: Learner,
        *,
        hooks: RunnerHooks | None = None,
        log_fn: Callable[[int, dict[str, float]], None] | None = None,
        checkpoint_fn: Callable[[int], None] | None = None,
        log_interval: int = 1,
        checkpoint_interval: int = 0,
        episode_window: int | None = None,
        seed: int | None = None,
        steps_per_iteration: int | None = None,
        goal_episode_length: int | None = None,
    ) -> None:
        super().__init__(algo, env.num_envs, hooks=hooks, log_fn=log_fn, checkpoint_fn=checkpoint_fn,
                         log_interval=log_interval, checkpoint_interval=checkpoint_interval,
                         episode_window=episode_window, seed=seed, steps_per_iteration=steps_per_iteration,
                         goal_episode_length=goal_episode_length)
        self.env = env
        self._obs: dict[str, torch.Tensor] | None = None
        self._current_return = torch.zeros(env.num_envs, device=env.device)
        self._current_length = torch.zeros(env.num_envs, dtype=torch.long, device=env.device)
        self._action_generator = torch.Generator().manual_seed(self.seed)
        self.summary = LearnSummary(runtime="sync")

    def learn(
        self,
        num_iterations: int,
        start_iteration: int | None = None,
        on_iteration: Callable[[int, dict[str, float]], None] | None = None,
    ) -> LearnSummary:
        """Train for ``num_iterations`` iterations.

        Args:
            num_iterations: iterations to run (>= 0).
            start_iteration: value of the iteration counter at the start; ``None`` continues from
                ``algo.iteration`` (0 for a fresh learner, the saved value after a resume).
            on_iteration: called as ``on_iteration(iteration, metrics)`` after every iteration
                (after the hooks' ``on_iteration``).

        A hook or ``on_iteration`` may raise to end training (e.g.
        :class:`~unilab_rl.runner.StopTraining`); ``algo.iteration`` then already counts the
        finished iteration, the last checkpoint is saved and ``on_end`` called before the
        exception propagates (:meth:`~unilab_rl.runner.loop.RunBook.run`).

        Returns:
            :class:`~unilab_rl.runner.LearnSummary`, also kept as :attr:`summary`.

        Metrics (``dict[str, float]``) passed to the hooks:
            ``Train/mean_reward``, ``Train/mean_episode_length`` (once an episode has finished),
            ``Loss/critic``, ``Critic/mean_q`` (once updates start), ``Loss/actor``,
            ``Loss/alpha``, ``Policy/alpha``, ``Policy/entropy`` (in iterations with an actor
            update), ``Perf/total_fps``, ``Perf/collection_time``, ``Perf/learning_time`` (s),
            ``Perf/utd_ratio``, and every ``extras["log"]`` entry of the env step, ``Episode*``
            entries (e.g. ``Episode_Reward/<term>``) as means over the episode window
            (:class:`~unilab_rl.runner.EpisodeLogWindow`).

        Raises:
            ValueError: ``num_iterations`` < 0.
            KeyError: the env's ``extras`` lacks ``"final_obs"``.
            FloatingPointError: a learner metric became NaN or infinite.
        """
        book = self._open_book(num_iterations, start_iteration, on_iteration, LearnSummary(runtime="sync"))
        return book.run(lambda: self._loop(num_iterations, book))

    def _loop(self, num_iterations: int, book: RunBook) -> None:
        env, algo = self.env, self.algo
        if self._obs is None:
            self._obs = env.reset()
        for _ in range(num_iterations):
            # Collect: act in every env (uniformly at random while warming up), step, and store the
            # transition with the pre-reset observation as s' so time-outs bootstrap correctly.
            t0 = time.perf_counter()
            obs = self._obs
            if algo.iteration < algo.learning_starts:
                actions = algo.random_actions(env.num_envs, self._action_generator)
            else:
                actions = algo.act(obs["actor"])
            next_obs, rewards, terminated, truncated, extras = env.step(actions)
            if "final_obs" not in extras:
                raise KeyError("env.step extras lack 'final_obs' (the pre-reset observation), required by VecEnv")
            algo.store(obs, actions, rewards, terminated, extras["final_obs"], truncated=truncated)
            self._obs = next_obs
            returns, lengths = self._track_episodes(rewards, terminated | truncated)
            t1 = time.perf_counter()

            # Learn: once the buffer holds the warm-up transitions, run the gradient updates.
            metrics: dict[str, float] = {}
            if len(algo.replay) >= algo.learning_starts * env.num_envs:
                metrics |= book.update()
            t2 = time.perf_counter()
            algo.iteration += 1

            # Record: episode statistics, env terms, timing; hooks (log, checkpoint) on cadence.
            metrics["Perf/collection_time"] = t1 - t0
            metrics["Perf/learning_time"] = t2 - t1
            metrics["Perf/total_fps"] = env.num_envs / max(t2 - t0, 1e-9)
            book.end_iteration(metrics, returns, lengths, extras.get("log", {}),
                               {"collection": t1 - t0, "learning": t2 - t1})

    def _track_episodes(self, rewards: torch.Tensor, done: torch.Tensor) -> tuple[list[float], list[int]]:
        """Accumulate per-env returns and lengths; return those of the episodes that ended."""
        self._current_return += rewards.to(self._current_return.device)
        self._current_length += 1
        done = done.to(self._current_return.device)
        if not bool(done.any()):
            return [], []
        returns, lengths = self._current_return[done].tolist(), self._current_length[done].tolist()
        self._current_return[done] = 0.0
        self._current_length[done] = 0
        return returns, lengths


__all__ = ["OffPolicyRunner"]
