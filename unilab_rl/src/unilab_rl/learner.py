"""The learner interface: everything a runner or a trainer may call and read on an off-policy learner.

A learner owns its networks, optimizers, observation statistics and replay buffer; a runner
(:mod:`unilab_rl.runner`, :mod:`unilab_rl.async_runtime`) owns the loop around it. SAC
(:class:`unilab_rl.algorithms.sac.SAC`) and FlashSAC (:class:`unilab_rl.algorithms.flashsac.FlashSAC`)
implement :class:`Learner`; a plugin algorithm that implements it trains with either runner, plays
and exports without changes anywhere else.

Shapes: N envs, A actions, T env steps of an async block, Da the ``"actor"`` observation group's
width, d any group's width. Observations are raw (unnormalized) float32; the learner normalizes.
"""

from __future__ import annotations

import copy
import dataclasses
import threading
from typing import Any, ClassVar, Protocol, runtime_checkable

import torch
from torch import nn

from unilab_rl.runtime import RuntimeConfig

GRAPH_CAPTURE_LOCK = threading.Lock()
"""The process's lock around CUDA-graph captures. A learner holds it while it captures an update
as a CUDA graph (SAC's and FlashSAC's ``_StepGraphs``), and the async runtime's acting server
(:mod:`unilab_rl.async_runtime.acting_server`, ``runtime.policy_device=server``), a thread of the
learner's process, holds it around each acting call. Under ``torch.cuda.graph``'s default global
capture mode a synchronizing CUDA call or a ``cudaMalloc`` from another thread invalidates the
capture, and a random draw from another thread could advance the capture's generator state, so no
acting call may overlap a capture. A plugin learner that captures graphs takes it too."""


@runtime_checkable
class Learner(Protocol):
    """An off-policy learner as the runners and trainers use it.

    Attributes:
        num_envs: N, envs per env step it is fed.
        num_actions: A.
        device: where the networks and the replay buffer live.
        action_low, action_high: (A,) float32 bounds of the env's action box (any device).
        actor_group: the observation group the actor reads (``"actor"``).
        replay: the replay buffer, with ``obs_dims`` (group -> d), ``capacity`` and ``len()``.
        runtime: the execution settings it was built with.
        iteration: iterations completed (one iteration = one env step of all envs and its
            updates); the runner advances it, checkpoints save it.
        learning_starts: iterations of uniform-random actions before the first update.
        updates_per_iteration: gradient updates of the critic per iteration.
        batch_size: transitions sampled per gradient update.
        compile_backend: ``"inductor"`` when its objectives run through ``torch.compile``, else
            ``"eager"``.
        cuda_graphs: True once its updates replay captured CUDA graphs.
    """

    num_envs: int
    num_actions: int
    device: torch.device
    action_low: torch.Tensor
    action_high: torch.Tensor
    actor_group: str
    replay: Any
    runtime: RuntimeConfig
    iteration: int

    @property
    def learning_starts(self) -> int: ...

    @property
    def updates_per_iteration(self) -> int: ...

    @property
    def batch_size(self) -> int: ...

    @property
    def compile_backend(self) -> str: ...

    @property
    def cuda_graphs(self) -> bool: ...

    def act(self, obs_actor: torch.Tensor, deterministic: bool = False) -> torch.Tensor:
        """(N, Da) raw actor observations -> (N, A) float32 actions on the env's device: a sample
        of the exploration policy, or its mean action when ``deterministic``."""
        ...

    def random_actions(self, num: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """(num, A) float32 actions uniform in the action box (warm-up). With a CPU ``generator``
        the draw is made on the CPU with it, so that every runtime takes the same warm-up actions."""
        ...

    def exploration_policy(self) -> nn.Module:
        """The live collection policy, sharing the learner's weights: (B, Da) raw float32 ->
        (B, A) float32 sampled actions. The async runtime runs a copy of it in each collector and
        broadcasts its floating-point ``state_dict`` entries (parameters and buffers such as
        observation statistics); the copy must draw its noise on its inputs' device and hold no
        device tensors across pickling.

        ``runtime.policy_device=server`` also needs the forward pass split in two:
        ``gaussian(obs) -> (mean, log_std)``, (B, A) float32 each with no randomness (run by the
        acting server on the learner's device), and ``explore_from(mean, log_std) -> actions``,
        which draws the noise (run by the collector), with ``forward(obs) ==
        explore_from(*gaussian(obs))``. SAC's and FlashSAC's policies have both; a learner that
        captures CUDA graphs holds :data:`GRAPH_CAPTURE_LOCK` while it captures."""
        ...

    def inference_policy(self) -> nn.Module:
        """The deterministic policy (mean action), sharing weights: (B, Da) raw float32 -> (B, A)
        float32. Play, evaluation and ONNX export use it."""
        ...

    def store(self, obs: dict[str, torch.Tensor], actions: torch.Tensor, rewards: torch.Tensor,
              terminated: torch.Tensor, next_obs: dict[str, torch.Tensor],
              truncated: torch.Tensor | None = None) -> None:
        """Store one env step of all envs: obs/next_obs group -> (N, d) (``next_obs`` is the env's
        pre-reset ``extras["final_obs"]``), actions (N, A), rewards (N,) float32, terminated and
        truncated (N,) bool."""
        ...

    def store_steps(self, obs: dict[str, torch.Tensor], actions: torch.Tensor, rewards: torch.Tensor,
                    terminated: torch.Tensor, next_obs: dict[str, torch.Tensor],
                    truncated: torch.Tensor | None = None) -> int:
        """Store T env steps at once, each field with a leading (T, N) shape, as T :meth:`store`
        calls would. Returns the bytes copied."""
        ...

    def update(self) -> dict[str, float]:
        """:attr:`updates_per_iteration` gradient updates; returns scalar metrics (``Loss/*``,
        ``Critic/*``, ``Policy/*``), every value finite unless training diverged."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume learning except the replay buffer; tensors, numbers,
        strings and containers of them only (``torch.load(weights_only=True)`` reads it)."""
        ...

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`. Raises ``KeyError`` / ``RuntimeError`` when it does not fit."""
        ...


class ScheduleFromConfig:
    """:class:`Learner`'s schedule members read from a config with the usual field names
    (``cfg.learning_starts``, ``cfg.num_updates``, ``cfg.batch_size``), as SAC's and FlashSAC's."""

    cfg: Any

    @property
    def learning_starts(self) -> int:
        """Iterations of uniform-random actions before the first update (``cfg.learning_starts``)."""
        return self.cfg.learning_starts

    @property
    def updates_per_iteration(self) -> int:
        """Critic updates per iteration (``cfg.num_updates``)."""
        return self.cfg.num_updates

    @property
    def batch_size(self) -> int:
        """Transitions per gradient update (``cfg.batch_size``)."""
        return self.cfg.batch_size


class ActorCriticState:
    """The state members SAC and FlashSAC share: warm-up actions, the temperature, the CUDA-graph
    flag and the checkpoint of the networks, the temperature, the optimizers and the counters.

    The learner holds ``actor``, ``critic`` and ``critic_target`` (``nn.Module``), a () float32
    log-temperature leaf tensor and its optimizer (attributes named by :attr:`temperature_key` and
    :attr:`temperature_optimizer_key`, which are also their checkpoint keys), ``actor_optimizer``
    and ``critic_optimizer``, the ints ``iteration`` and ``num_critic_updates``, a dataclass
    ``cfg``, the (A,) float32 action box ``action_low`` / ``action_high`` on ``device``,
    ``env_device``, ``num_actions``, and ``_graphs``: ``None`` or its captured-step CUDA graphs, an
    object with a ``captured`` flag that is rebuilt (no argument) after a checkpoint is loaded.
    Entries of its own go through :meth:`_extra_state` and :meth:`_load_extra_state`.

    The deployed policy: with :meth:`_init_actor_average` (``algo.actor_ema > 0``) a moving
    average of the actor, :attr:`actor_average`, kept by :meth:`_update_actor_average` after each
    actor update, is :attr:`deployed_actor`; else the actor itself.
    """

    actor_average: nn.Module | None = None

    actor: nn.Module
    critic: nn.Module
    critic_target: nn.Module
    actor_optimizer: torch.optim.Optimizer
    critic_optimizer: torch.optim.Optimizer
    iteration: int
    num_critic_updates: int
    cfg: Any
    action_low: torch.Tensor
    action_high: torch.Tensor
    num_actions: int
    device: torch.device
    env_device: torch.device
    _graphs: Any

    temperature_key: ClassVar[str]
    """Attribute and checkpoint key of the log-temperature tensor (SAC: ``"log_alpha"``)."""
    temperature_optimizer_key: ClassVar[str]
    """Attribute and checkpoint key of its optimizer (SAC: ``"alpha_optimizer"``)."""

    def random_actions(self, num: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """(num, A) float32 actions uniform in the action box, on the env device (warm-up exploration).

        Args:
            num: rows.
            generator: a CPU ``torch.Generator``; the draw is made on the CPU with it
                (:func:`uniform_actions`), so the synchronous runner and the async collector produce
                identical warm-up actions from one seed. ``None`` draws from the learner device's
                global RNG.
        """
        if generator is not None:
            return uniform_actions(self.action_low.cpu(), self.action_high.cpu(), num, generator).to(self.env_device)
        u = torch.rand(num, self.num_actions, device=self.device)
        return (self.action_low + (self.action_high - self.action_low) * u).to(self.env_device)

    def _init_actor_average(self, rate: float) -> None:
        """With ``rate > 0``, :attr:`actor_average`: a copy of ``actor`` without gradients that
        :meth:`_update_actor_average` moves towards it by ``rate``."""
        self._average_rate = rate
        self.actor_average = None
        if rate > 0:
            self.actor_average = copy.deepcopy(self.actor).requires_grad_(False)

            def averaged(m: nn.Module) -> list[torch.Tensor]:
                # parameters and floating buffers (e.g. batch-norm running statistics)
                return [*m.parameters(), *(b for b in m.buffers() if b.is_floating_point())]

            self._average_pairs = (averaged(self.actor_average), averaged(self.actor))

    @torch.no_grad()
    def _update_actor_average(self) -> None:
        """``average <- average + rate (actor - average)`` in place (no host sync, capturable);
        nothing when there is no average."""
        if self.actor_average is not None:
            torch._foreach_lerp_(self._average_pairs[0], self._average_pairs[1], self._average_rate)

    @property
    def deployed_actor(self) -> nn.Module:
        """The actor whose mean action is deployed (play, evaluation, export,
        ``act(deterministic=True)``): :attr:`actor_average` when there is one, else ``actor``."""
        return self.actor if self.actor_average is None else self.actor_average

    @property
    def alpha(self) -> float:
        """Current temperature, ``exp`` of the log-temperature tensor (synchronizes)."""
        return float(getattr(self, self.temperature_key).detach().exp())

    @property
    def cuda_graphs(self) -> bool:
        """True once ``update`` replays captured CUDA graphs for every kind of step it has run
        (``runtime.cuda_graph``)."""
        return self._graphs is not None and self._graphs.captured

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume learning, except the replay buffer (too large; refilled).

        Returns:
            dict with ``actor``, ``critic``, ``critic_target``, the log temperature (a () float32
            copy), ``actor_optimizer``, ``critic_optimizer``, the temperature's optimizer, the
            entries of :meth:`_extra_state`, ``iteration``, ``num_critic_updates``,
            (informative only, not read back) ``config`` and, when there is one, ``actor_average``,
            in that order.
        """
        state = {
            "actor": self.actor.state_dict(),
            "critic": self.critic.state_dict(),
            "critic_target": self.critic_target.state_dict(),
            self.temperature_key: getattr(self, self.temperature_key).detach().clone(),
            "actor_optimizer": self.actor_optimizer.state_dict(),
            "critic_optimizer": self.critic_optimizer.state_dict(),
            self.temperature_optimizer_key: getattr(self, self.temperature_optimizer_key).state_dict(),
            **self._extra_state(),
            "iteration": self.iteration,
            "num_critic_updates": self.num_critic_updates,
            "config": dataclasses.asdict(self.cfg),
        }
        if self.actor_average is not None:
            state["actor_average"] = self.actor_average.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from :meth:`state_dict` (tensors may be on any device): networks, temperature,
        optimizers, then :meth:`_load_extra_state`, then the counters; captured CUDA graphs are
        dropped (the optimizers' state tensors were replaced), to be captured anew. An actor
        average missing from ``state`` (a checkpoint written with the average off) starts from
        the restored actor.

        Raises:
            KeyError: a required entry is missing.
            RuntimeError: a network's shapes differ (from ``nn.Module.load_state_dict``).
        """
        self.actor.load_state_dict(state["actor"])
        if self.actor_average is not None:
            self.actor_average.load_state_dict(state.get("actor_average", state["actor"]))
        self.critic.load_state_dict(state["critic"])
        self.critic_target.load_state_dict(state["critic_target"])
        with torch.no_grad():
            getattr(self, self.temperature_key).copy_(state[self.temperature_key])
        self.actor_optimizer.load_state_dict(state["actor_optimizer"])
        self.critic_optimizer.load_state_dict(state["critic_optimizer"])
        getattr(self, self.temperature_optimizer_key).load_state_dict(state[self.temperature_optimizer_key])
        self._load_extra_state(state)
        self.iteration = int(state["iteration"])
        self.num_critic_updates = int(state["num_critic_updates"])
        if self._graphs is not None:
            self._graphs = type(self._graphs)()

    def _extra_state(self) -> dict[str, Any]:
        """The learner's own checkpoint entries, placed after the optimizers (none here)."""
        return {}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        """Restore :meth:`_extra_state`'s entries; runs after the optimizers are loaded."""


def uniform_actions(low: torch.Tensor, high: torch.Tensor, num: int, generator: torch.Generator) -> torch.Tensor:
    """(num, A) float32 actions uniform in ``[low, high]`` ((A,) CPU tensors), drawn with a CPU
    ``generator``: the warm-up draw. A learner's ``random_actions(num, generator)`` must return
    exactly this, so that the async collectors (which draw it themselves) and the synchronous
    runner take the same warm-up actions from one seed."""
    return low + (high - low) * torch.rand(num, low.shape[0], generator=generator)


def missing_members(learner: Any) -> list[str]:
    """Names of :class:`Learner` members that ``learner`` lacks (empty when it has them all)."""
    names = [n for n in Learner.__annotations__] + [
        n for n, v in vars(Learner).items() if not n.startswith("_") and (callable(v) or isinstance(v, property))
    ]
    return [n for n in dict.fromkeys(names) if not hasattr(learner, n)]


__all__ = ["GRAPH_CAPTURE_LOCK", "ActorCriticState", "Learner", "ScheduleFromConfig", "missing_members",
           "uniform_actions"]
