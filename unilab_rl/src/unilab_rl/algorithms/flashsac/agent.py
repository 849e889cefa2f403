"""The FlashSAC learner: networks, target critic, temperature, optimizers, reward scaling,
exploration noise and replay buffer in one object.

The math lives in :mod:`unilab_rl.algorithms.flashsac.update`; this file holds state and wiring.
It is a :class:`unilab_rl.learner.Learner`, as SAC is, so both runners, ``unilab play`` and
``unilab export`` drive it unchanged.

Async runtime (``runtime.mode="async"``): the collector runs a CPU copy of
:meth:`FlashSAC.exploration_policy`. The held exploration noise lives in that copy, on the
collector's side: it draws k from the truncated Zeta law and fresh Gaussian noise itself (from its
own seeded RNG) and reuses it for k env steps, exactly as :meth:`FlashSAC.act` does in the sync
runtime; with several collectors each shard holds its own noise and k (also with
``runtime.policy_device=server``, where the learner's process computes the Gaussian and the copy
only adds the noise). The learner broadcasts the actor's floating-point state, batch-norm running
statistics included, so the copy acts with the learner's normalization (batch norms on running
statistics). The reward scaling stays on the
learner: :meth:`FlashSAC.store_steps` advances it step by step with the time-outs the collector
recorded.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import logging
import math
from collections.abc import Callable
from typing import Any

import torch

from unilab_rl.algorithms.flashsac import update as flash_update
from unilab_rl.algorithms.flashsac.config import FlashSACConfig
from unilab_rl.algorithms.flashsac.exploration import HeldNoise, RewardScaler
from unilab_rl.algorithms.flashsac.nstep import NStepWindow
from unilab_rl.algorithms.flashsac.networks import (
    CategoricalCritic,
    DeterministicPolicy,
    ExplorationPolicy,
    FlashActor,
    MLPActor,
    MLPCritic,
    TrunkCritic,
    WeightProjection,
)
from unilab_rl.device import resolve_device
from unilab_rl.learner import GRAPH_CAPTURE_LOCK, ActorCriticState, ScheduleFromConfig
from unilab_rl.replay import Batch, ReplayBuffer, block_rows
from unilab_rl.runtime import RuntimeConfig
from unilab_rl.vecenv import Mirror, VecEnv, learner_mirror, learner_spaces

logger = logging.getLogger(__name__)


def resolve_compile_mode(mode: str, torch_version: str = torch.__version__) -> str:
    """``"auto"`` -> ``"default"`` on torch >= 2.9, else ``"reduce-overhead"``; any other mode
    unchanged.

    The official code picks ``"max-autotune"`` on torch >= 2.9 (``Holiday-Robot/FlashSAC``
    ``flash_rl/agents/utils/network.py``). Its autotuning benchmarks kernels for minutes before
    the first update runs, longer than a short run lasts (docs/benchmarks.md). ``"default"``
    compiles without autotuning and without CUDA graphs; ``runtime.compile_mode=max-autotune``
    restores the official choice.
    """
    if mode != "auto":
        return mode
    major, minor = (int(part) for part in torch_version.split("+")[0].split(".")[:2])
    return "default" if (major, minor) >= (2, 9) else "reduce-overhead"


class FlashSAC(ActorCriticState, ScheduleFromConfig):
    """FlashSAC (arXiv 2604.04539): SAC with batch-normalized inverted-residual networks, unit-norm
    weight projection, twin categorical critics on a fixed support with return-based reward
    scaling, a unified entropy target and held exploration noise.

    Observation groups: the actor reads ``"actor"``; the critics read ``"critic"`` when the env
    has it (asymmetric actor-critic), else ``"actor"``. Observations are stored raw; each network's
    input batch norm normalizes them (there is no separate observation normalizer).

    Args:
        env: the vector env (only its sizes, action box and device are read here).
        cfg: hyperparameters; copied, never mutated.
        device: learner device; ``None`` resolves ``"auto"`` (:func:`unilab_rl.device.resolve_device`).
        runtime: execution settings (``compile``, ``compile_mode``, ``mixed_precision``); ``None``
            takes :class:`~unilab_rl.runtime.RuntimeConfig`'s defaults. ``cuda_graph`` (``auto``:
            on a CUDA learner) captures each whole update as a CUDA graph (:class:`_StepGraphs`).
        max_iterations: the run's length in iterations: the horizon of the cosine learning-rate
            schedule (:attr:`FlashSACConfig.lr_end`).

    ``cfg.critic="mlp"`` (an ablation toward SAC, not in the paper) replaces the categorical critic
    by :class:`MLPCritic`, SAC's scalar twin critic behind an input batch norm, trained on raw
    rewards with the squared soft TD error
    (:func:`~unilab_rl.algorithms.flashsac.update.scalar_critic_objective`); then there is no
    reward scaling and only the actor's weights are projected. ``cfg.critic="trunk"`` keeps
    FlashSAC's critic trunks (projected) under a scalar head each (:class:`TrunkCritic`), trained
    as ``"mlp"`` is. ``cfg.actor="mlp"`` (the same kind
    of ablation) replaces the residual actor by :class:`MLPActor`, SAC's actor behind an input
    batch norm, whose weights are not projected.

    Attributes:
        actor, critic, critic_target: :class:`FlashActor` (:class:`MLPActor` with
            ``cfg.actor="mlp"``), :class:`CategoricalCritic` (twin, fused) or, with
            ``cfg.critic="mlp"``, :class:`MLPCritic` (``"trunk"``: :class:`TrunkCritic`).
        log_temperature: () float32 leaf tensor, log alpha.
        target_entropy: float, :func:`~unilab_rl.algorithms.flashsac.update.unified_target_entropy`.
        reward_scaler: :class:`RewardScaler`, or ``None`` when ``cfg.reward_normalization`` is off
            or ``cfg.critic`` is not ``"categorical"``.
        exploration_noise: :class:`HeldNoise` used by :meth:`act`.
        replay: the :class:`ReplayBuffer` (not part of :meth:`state_dict`).
        iteration: iterations completed, maintained by the runner; saved in checkpoints.
        num_critic_updates: gradient steps taken on the critic so far (drives the delayed actor
            and the learning-rate schedule).
        compile_backend: ``"inductor"`` when the objectives run through ``torch.compile``, else ``"eager"``.
        autocast_dtype: ``torch.bfloat16`` when mixed precision is on, else ``None``.
        mirror: the env's :class:`~unilab_rl.vecenv.Mirror` when ``cfg.symmetry`` is on, else ``None``.

    Raises:
        ValueError: the env has no ``"actor"`` group or a malformed action box; ``cfg.symmetry``
            is on and the env has no usable ``mirror``; ``runtime.cuda_graph=true`` on a device
            other than CUDA.
        unilab_rl.device.DeviceUnavailableError: ``device`` names a missing device.
    """

    # Warm-up actions, alpha, cuda_graphs and the checkpoint (less its own entries) are
    # ActorCriticState's, on these attributes.
    temperature_key = "log_temperature"
    temperature_optimizer_key = "temperature_optimizer"

    def __init__(self, env: VecEnv, cfg: FlashSACConfig, device: torch.device | str | None = None,
                 runtime: RuntimeConfig | None = None, max_iterations: int = 1000) -> None:
        self.cfg = dataclasses.replace(cfg)
        cfg = self.cfg
        self.runtime = dataclasses.replace(runtime) if runtime is not None else RuntimeConfig()
        self.device = resolve_device("auto" if device is None else device)
        if self.runtime.cuda_graph is True and self.device.type != "cuda":
            raise ValueError(f"runtime.cuda_graph=true needs a CUDA learner device, got {self.device.type}")
        # Capture may happen: optimizers keep their step counts and learning rates on the device.
        self._may_capture = self.runtime.cuda_graph is not False and self.device.type == "cuda"
        self.env_device = torch.device(env.device)
        self.num_envs = env.num_envs
        self.num_actions = env.num_actions
        self.actor_group, self.critic_group, obs_dims, self.action_low, self.action_high = learner_spaces(
            env, "FlashSAC", self.device
        )
        if cfg.action_bound is not None:  # squash into the box intersected with [-b, b]
            low = self.action_low.clamp(min=-cfg.action_bound)
            high = self.action_high.clamp(max=cfg.action_bound)
            if not (high > low).all():
                raise ValueError(
                    f"FlashSACConfig.action_bound={cfg.action_bound!r} leaves no room in the env's action box "
                    f"[{self.action_low.tolist()}, {self.action_high.tolist()}]: it must overlap (-b, b) in every dimension"
                )
            self.action_low, self.action_high = low, high
        self.mirror: Mirror | None = learner_mirror(env, "FlashSAC", obs_dims, self.device) if cfg.symmetry else None

        # Networks (the FlashSAC ones projected onto their spheres at construction) and the target
        # critic, which follows by EMA from then on and is never projected again.
        actor_mirror = None
        if cfg.equivariant_actor and self.mirror is not None:
            actor_mirror = (self.mirror.obs[self.actor_group], self.mirror.actions)
        actor: FlashActor | MLPActor
        if cfg.actor == "mlp":
            actor = MLPActor(obs_dims[self.actor_group], self.action_low, self.action_high, cfg.actor_mlp_hidden,
                             entropy_units=cfg.entropy_units, mirror=actor_mirror)
        else:
            actor = FlashActor(
                obs_dims[self.actor_group], self.action_low, self.action_high, cfg.actor_hidden_dim,
                cfg.actor_num_blocks, entropy_units=cfg.entropy_units, mirror=actor_mirror,
            )  # fmt: skip
        self.actor = actor.to(self.device)
        critic: CategoricalCritic | MLPCritic | TrunkCritic
        if cfg.critic == "mlp":
            critic = MLPCritic(obs_dims[self.critic_group], self.num_actions, cfg.critic_mlp_hidden)
        elif cfg.critic == "trunk":
            critic = TrunkCritic(obs_dims[self.critic_group], self.num_actions, cfg.critic_hidden_dim, cfg.critic_num_blocks)
        else:
            critic = CategoricalCritic(
                obs_dims[self.critic_group], self.num_actions, cfg.critic_hidden_dim, cfg.critic_num_blocks,
                num_bins=cfg.num_bins, v_min=-cfg.normalized_g_max, v_max=cfg.normalized_g_max,
            )  # fmt: skip
        self.critic = critic.to(self.device)
        self.critic_target = copy.deepcopy(self.critic).requires_grad_(False)
        self._target_params = list(self.critic_target.parameters())
        self._online_params = list(self.critic.parameters())
        # SAC's MLP networks have no unit-sphere constraint: only FlashSAC's own are projected.
        self._project_actor = WeightProjection(self.actor) if cfg.actor == "residual" else None
        self._project_critic = WeightProjection(self.critic) if cfg.critic != "mlp" else None
        self._init_actor_average(cfg.actor_ema)
        self.log_temperature = torch.tensor(math.log(cfg.init_temperature), device=self.device, requires_grad=True)
        self.target_entropy = flash_update.unified_target_entropy(self.num_actions, cfg.target_sigma)

        # Adam everywhere, no weight decay, no clipping (the projection bounds the norms). Where
        # steps may be captured, each rate is a () device tensor that the schedule fills in place.
        opt = {"fused": self.device.type in ("cuda", "cpu"), "capturable": self._may_capture}
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=self._rate(cfg.lr), **opt)
        self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), lr=self._rate(cfg.lr), **opt)
        self.temperature_optimizer = torch.optim.Adam(
            [self.log_temperature], lr=self._rate(cfg.lr * cfg.temperature_lr_scale), **opt
        )
        # Updates start in the iteration where the buffer first holds learning_starts * N rows.
        first = max(cfg.learning_starts - 1, 0)
        self.total_updates = max(max_iterations - first, 1) * cfg.num_updates

        # The scaling fits returns to the categorical support; the scalar critic learns raw returns.
        scale_rewards = cfg.reward_normalization and cfg.critic == "categorical"
        self.reward_scaler = (
            RewardScaler(cfg.gamma, cfg.normalized_g_max, device=self.device) if scale_rewards else None
        )
        self.exploration_noise = HeldNoise(
            self.num_actions, device=self.device, enabled=cfg.noise_repeat
        )
        self.replay = ReplayBuffer(cfg.buffer_size_per_env * self.num_envs, obs_dims, self.num_actions, self.device)
        self.nstep = NStepWindow(cfg.n_step, cfg.gamma) if cfg.n_step > 1 else None

        self.iteration = 0
        self.num_critic_updates = 0
        amp = self.runtime.mixed_precision
        use_amp = amp is True or (amp == "auto" and self.device.type == "cuda")
        self.autocast_dtype = torch.bfloat16 if use_amp else None
        self._setup_compile()

    # -- Acting -----------------------------------------------------------------------------

    @torch.no_grad()
    def act(self, obs_actor: torch.Tensor, deterministic: bool = False) -> torch.Tensor:
        """Actions for a batch of raw actor observations.

        Args:
            obs_actor: (N, obs_dims["actor"]) float32, on any device.
            deterministic: ``squash(mean)`` instead of the exploration action
                ``squash(mean + std * held_noise)``.

        Returns:
            (N, A) float32 on the env device, within ``[action_low, action_high]``.
        """
        obs = obs_actor.to(self.device, torch.float32)
        if deterministic:
            actions = self.deployed_actor.deterministic_action(obs)
        else:
            actions = self.actor.explore(obs, self.exploration_noise(obs.shape[0]))
        return actions.to(self.env_device)

    def exploration_policy(self) -> ExplorationPolicy:
        """The live collection policy (shares the actor and :attr:`exploration_noise`): raw actor
        obs (B, Da) float32 -> (B, A) float32 exploration actions on running statistics.

        The async runner sends a CPU copy of it to each collector (the copy holds its own noise)
        and broadcasts its floating-point state (:func:`unilab_rl.async_runtime.flat_state`: the
        actor's parameters and batch-norm running statistics).
        """
        return ExplorationPolicy(self.actor, self.exploration_noise)

    def inference_policy(self) -> DeterministicPolicy:
        """A module mapping raw actor observations (B, Da) to the deterministic actions (B, A) of
        :attr:`deployed_actor`, with the input batch norm on running statistics as the observation
        normalizer; shares weights."""
        return DeterministicPolicy(self.deployed_actor)

    # -- Storing ----------------------------------------------------------------------------

    @torch.no_grad()
    def store(
        self,
        obs: dict[str, torch.Tensor],
        actions: torch.Tensor,
        rewards: torch.Tensor,
        terminated: torch.Tensor,
        next_obs: dict[str, torch.Tensor],
        truncated: torch.Tensor | None = None,
    ) -> None:
        """Add one env step of all envs to the replay buffer (through the n-step window when
        ``cfg.n_step > 1``: the row stored is the n-step transition anchored ``n_step - 1`` steps
        back, none for the first ``n_step - 1`` calls) and advance the reward scaling.

        Args:
            obs: group -> (N, d) observations the actions were taken in.
            actions: (N, A) actions sent to the env.
            rewards: (N,) float32, raw (scaled at sampling time).
            terminated: (N,) bool, terminal states only.
            next_obs: group -> (N, d), the env's ``extras["final_obs"]``.
            truncated: (N,) bool time-outs; with ``terminated`` they end the running returns of
                the reward scaling and cut the n-step sums. ``None`` counts only terminations as
                episode ends.
        """
        groups = self.replay.obs_dims
        obs = {g: obs[g].to(self.device) for g in groups}
        next_obs = {g: next_obs[g].to(self.device) for g in groups}
        if self.nstep is None:
            self.replay.add(obs, actions, rewards, terminated, next_obs)
        else:
            trunc = torch.zeros_like(terminated, dtype=torch.bool) if truncated is None else truncated
            row = self.nstep.push(obs, actions.to(self.device), rewards.to(self.device),
                                  terminated.to(self.device), trunc.to(self.device), next_obs)
            if row is not None:
                self.replay.add(*row)
        if self.reward_scaler is not None:
            done = terminated.bool() if truncated is None else terminated.bool() | truncated.bool()
            self.reward_scaler.update(rewards.to(self.device), done.to(self.device))

    @torch.no_grad()
    def store_steps(
        self,
        obs: dict[str, torch.Tensor],
        actions: torch.Tensor,
        rewards: torch.Tensor,
        terminated: torch.Tensor,
        next_obs: dict[str, torch.Tensor],
        truncated: torch.Tensor | None = None,
    ) -> int:
        """Add T env steps of all N envs at once (the async runner's block): one copy to the
        learner device per field, one replay write (after the n-step window, step by step, when
        ``n_step > 1``), then the reward scaling advanced step by step (as T :meth:`store` calls
        would, so both runtimes store and scale identically).

        Args:
            obs, next_obs: group -> (T, N, d) float32 (e.g. views of a shared-memory block).
            actions: (T, N, A) float32; rewards: (T, N) float32; terminated: (T, N) bool.
            truncated: (T, N) bool time-outs, or ``None`` (only terminations end the running returns).

        Returns:
            bytes copied from the source tensors.

        Raises:
            KeyError, ValueError: as :meth:`ReplayBuffer.add`.
        """
        steps, n = rewards.shape
        groups = self.replay.obs_dims
        block = {"obs": {g: obs[g] for g in groups}, "next_obs": {g: next_obs[g] for g in groups},
                 "actions": actions, "rewards": rewards, "terminated": terminated}
        if (self.reward_scaler is not None or self.nstep is not None) and truncated is not None:
            block["truncated"] = truncated
        d, nbytes = block_rows(block, self.device)
        rewards_d, terminated_d = d["rewards"], d["terminated"]
        if self.nstep is None:
            self.replay.add(d["obs"], d["actions"], rewards_d, terminated_d, d["next_obs"])
        else:
            trunc_d = d["truncated"] if truncated is not None else torch.zeros_like(terminated_d, dtype=torch.bool)
            rows = []
            for t in range(steps):
                r = slice(t * n, (t + 1) * n)
                row = self.nstep.push({g: v[r] for g, v in d["obs"].items()}, d["actions"][r], rewards_d[r],
                                      terminated_d[r], trunc_d[r], {g: v[r] for g, v in d["next_obs"].items()})
                if row is not None:
                    rows.append(row)
            if rows:
                self.replay.add({g: torch.cat([row[0][g] for row in rows]) for g in groups},
                                torch.cat([row[1] for row in rows]), torch.cat([row[2] for row in rows]),
                                torch.cat([row[3] for row in rows]),
                                {g: torch.cat([row[4][g] for row in rows]) for g in groups})
        if self.reward_scaler is not None:
            done = terminated_d.bool()
            if truncated is not None:
                done = done | d["truncated"].bool()
            for t in range(steps):
                rows = slice(t * n, (t + 1) * n)
                self.reward_scaler.update(rewards_d[rows], done[rows])
        return nbytes

    # -- Learning ---------------------------------------------------------------------------

    def _autocast(self) -> contextlib.AbstractContextManager:
        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        # No cast cache where steps may be captured (PyTorch, "CUDA Graphs": autocast).
        return torch.autocast(device_type=self.device.type, dtype=self.autocast_dtype,
                              cache_enabled=not self._may_capture)

    def _critic_objective(
        self,
        critic_obs: torch.Tensor,  # (B, Dc)
        actions: torch.Tensor,  # (B, A)
        rewards: torch.Tensor,  # (B,) scaled (raw without a reward scaler)
        terminated: torch.Tensor,  # (B,) bool
        next_actor_obs: torch.Tensor,  # (B, Da)
        next_critic_obs: torch.Tensor,  # (B, Dc)
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        # cfg.critic is fixed for the learner's life: torch.compile traces one branch and guards on it.
        with self._autocast():
            args = (self.actor, self.critic, self.critic_target, critic_obs, actions, rewards, terminated,
                    next_actor_obs, next_critic_obs, self.log_temperature.detach().exp(),
                    self.cfg.gamma**self.cfg.n_step)  # fmt: skip
            if self.cfg.critic != "categorical":  # "mlp" and "trunk": scalar Q on raw rewards
                return flash_update.scalar_critic_objective(*args)
            return flash_update.critic_objective(
                *args, target=self.cfg.categorical_target, hl_gauss_sigma=self.cfg.hl_gauss_sigma
            )

    def _actor_objective(
        self,
        actor_obs: torch.Tensor,  # (B, Da)
        next_actor_obs: torch.Tensor,  # (B, Da)
        critic_obs: torch.Tensor,  # (B, Dc)
    ) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
        with self._autocast():
            return flash_update.actor_objective(
                self.actor, self.critic, self.log_temperature, actor_obs, next_actor_obs, critic_obs,
                self.target_entropy,
            )  # fmt: skip

    def _setup_compile(self) -> None:
        """Compile the two forward objectives; backward passes run the compiled backward graphs,
        optimizer steps and weight projections stay eager (fused kernels, in-place foreach). With
        ``runtime.cuda_graph`` whole steps are captured instead (:class:`_StepGraphs`), so the
        objectives use the graph-free twin of a CUDA-graph compile mode."""
        use = self.runtime.compile
        want = use is True or (use == "auto" and self.device.type == "cuda")
        self.compile_backend = "inductor" if want else "eager"
        self._graphs = _StepGraphs() if self._may_capture else None
        mode = resolve_compile_mode(self.runtime.compile_mode)
        if self._graphs is not None:
            mode = {"reduce-overhead": "default", "max-autotune": "max-autotune-no-cudagraphs"}.get(mode, mode)
        self.compile_mode = mode
        # CUDA-graph compile modes need to be told where a training step begins (cudagraph trees).
        self._cudagraphs = want and mode in ("reduce-overhead", "max-autotune")
        if want:
            self._critic_objective_fn = torch.compile(self._critic_objective, fullgraph=True, mode=mode)
            self._actor_objective_fn = torch.compile(self._actor_objective, fullgraph=True, mode=mode)
        else:
            self._critic_objective_fn = self._critic_objective
            self._actor_objective_fn = self._actor_objective

    def _rate(self, value: float) -> float | torch.Tensor:
        """A learning rate as the optimizers hold it: a () float32 device tensor where steps may be
        captured (a captured step reads it in place), else a float."""
        return torch.tensor(value, dtype=torch.float32, device=self.device) if self._may_capture else value

    def _set_learning_rate(self) -> tuple[float, float]:
        """Set each optimizer's rate from its own step count, as the official code's per-optimizer
        schedulers: the critic's cosine runs over all ``total_updates``; the actor and temperature,
        stepped every ``actor_update_period``-th update, reach its middle by the end of the run.
        Tensor rates are filled in place (no host sync), float rates replaced.

        Returns:
            (critic rate, actor rate); the temperature's is the actor's x ``temperature_lr_scale``.
        """
        cfg = self.cfg
        actor_steps = -(-self.num_critic_updates // cfg.actor_update_period)  # actor steps taken so far
        critic_lr = flash_update.cosine_learning_rate(self.num_critic_updates, self.total_updates, cfg.lr, cfg.lr_end)
        actor_lr = flash_update.cosine_learning_rate(actor_steps, self.total_updates, cfg.lr, cfg.lr_end)
        for optimizer, lr in (
            (self.critic_optimizer, critic_lr),
            (self.actor_optimizer, actor_lr),
            (self.temperature_optimizer, actor_lr * cfg.temperature_lr_scale),
        ):
            for group in optimizer.param_groups:
                if isinstance(group["lr"], torch.Tensor):
                    group["lr"].fill_(lr)
                else:
                    group["lr"] = lr
        return critic_lr, actor_lr

    def _step(self, batch: Batch, with_actor: bool) -> torch.Tensor:
        """One update on ``batch`` (FlashSAC's order): when ``with_actor``, an actor and temperature
        step, each followed by the actor's weight projection, then the actor's moving average
        (``cfg.actor_ema``); then a critic step (its target uses the actor just updated), the
        critic's projection (categorical critic only) and the EMA of the target critic. Nothing is
        decided on the host, so a CUDA graph can capture it whole.

        Returns:
            (3,) float32, detached: critic loss, mean Q, target Q; with ``with_actor`` (7,): then
            actor loss, temperature loss, entropy estimate, alpha after the step.
        """
        cfg, a, c = self.cfg, self.actor_group, self.critic_group
        rewards = batch.rewards if self.reward_scaler is None else self.reward_scaler(batch.rewards)
        logs = []
        if with_actor:
            if self._cudagraphs:
                torch.compiler.cudagraph_mark_step_begin()
            loss, temp_loss, info = self._actor_objective_fn(batch.obs[a], batch.next_obs[a], batch.obs[c])
            flash_update.apply_gradients(loss + temp_loss, [self.actor_optimizer, self.temperature_optimizer])
            if cfg.weight_normalization and self._project_actor is not None:
                self._project_actor()
            self._update_actor_average()
            logs.append(torch.stack([loss.detach(), temp_loss.detach(), info["entropy"],
                                     self.log_temperature.detach().exp()]).float())
        if self._cudagraphs:
            torch.compiler.cudagraph_mark_step_begin()
        qf_loss, info = self._critic_objective_fn(
            batch.obs[c], batch.actions, rewards, batch.terminated, batch.next_obs[a], batch.next_obs[c]
        )
        flash_update.apply_gradients(qf_loss, self.critic_optimizer)
        if cfg.weight_normalization and self._project_critic is not None:
            self._project_critic()
        flash_update.ema_update(self._target_params, self._online_params, cfg.tau)
        critic_log = torch.stack([qf_loss.detach(), info["mean_q"], info["target_q"]]).float()
        return torch.cat([critic_log, *logs])

    def update(self) -> dict[str, float]:
        """Run ``cfg.num_updates`` updates (:meth:`_step`), each on a fresh uniform batch: on every
        ``actor_update_period``-th one (counted across calls, starting with the first) an actor and
        temperature step, then a critic step and the EMA of the target critic. Each optimizer step
        is followed by the weight projection. Synchronizes with the device once, at the end. With
        ``runtime.cuda_graph`` each update is a CUDA-graph replay once captured (:class:`_StepGraphs`).

        Returns:
            ``"Loss/critic"``, ``"Critic/mean_q"``, ``"Critic/target_q"`` (means over this call, in
            scaled-reward units; raw reward units without a reward scaler, as always with
            ``cfg.critic="mlp"`` or ``"trunk"``), ``"Policy/learning_rate"`` (the critic's),
            ``"Policy/actor_learning_rate"``, ``"Policy/reward_scale"`` (the divisor
            of the rewards; 1 when scaling is off) and, when an actor step happened,
            ``"Loss/actor"``, ``"Loss/alpha"``, ``"Policy/entropy"`` (means) and ``"Policy/alpha"``
            (after the last step).

        Raises:
            ValueError: the replay buffer is empty.
        """
        cfg = self.cfg
        if len(self.replay) == 0:
            raise ValueError("Cannot sample from an empty ReplayBuffer; add transitions first")
        # Graph outputs are consumed (stacked = copied) before the next call: replays overwrite them.
        critic_logs: list[torch.Tensor] = []  # each (3,): critic loss, mean Q, target Q
        actor_logs: list[torch.Tensor] = []  # each (4,): actor loss, temperature loss, entropy, alpha
        lr = actor_lr = cfg.lr
        for _ in range(cfg.num_updates):
            with_actor = self.num_critic_updates % cfg.actor_update_period == 0
            lr, actor_lr = self._set_learning_rate()
            if self._graphs is None:
                out = self._step(self.replay.sample(cfg.batch_size, mirror=self.mirror), with_actor)
            else:
                out = self._graphs.step(self, with_actor)
            critic_logs.append(out[:3])
            if with_actor:
                actor_logs.append(out[3:])
            self.num_critic_updates += 1

        scale = self.reward_scaler.scale() if self.reward_scaler is not None else torch.ones((), device=self.device)
        names = ["Loss/critic", "Critic/mean_q", "Critic/target_q", "Policy/reward_scale"]
        values = [torch.stack(critic_logs).mean(0), scale.reshape(1).float()]
        if actor_logs:
            names += ["Loss/actor", "Loss/alpha", "Policy/entropy", "Policy/alpha"]
            stacked = torch.stack(actor_logs)  # (n, 4)
            values.append(torch.cat([stacked[:, :3].mean(0), stacked[-1, 3:]]))
        metrics = dict(zip(names, torch.cat(values).tolist()))
        metrics["Policy/learning_rate"] = lr
        metrics["Policy/actor_learning_rate"] = actor_lr
        return metrics

    # -- Checkpoints ------------------------------------------------------------------------

    def _extra_state(self) -> dict[str, Any]:
        """``reward_scaler``: the reward scaling's statistics, or ``None`` when it is off;
        ``critic_kind``: ``cfg.critic`` (``"categorical"``, ``"mlp"`` or ``"trunk"``); ``actor_kind``:
        ``cfg.actor`` (``"residual"`` or ``"mlp"``).

        The checkpoint (:meth:`ActorCriticState.state_dict`) is then ``actor``, ``critic``,
        ``critic_target`` (batch-norm statistics included), ``log_temperature``,
        ``actor_optimizer``, ``critic_optimizer``, ``temperature_optimizer``, ``reward_scaler``,
        ``critic_kind``, ``actor_kind``, ``iteration``, ``num_critic_updates``, (informative only) ``config`` and,
        with ``cfg.actor_ema > 0``, ``actor_average``; neither the replay buffer nor the per-env
        running returns of the reward scaling.
        """
        return {
            "reward_scaler": None if self.reward_scaler is None else self.reward_scaler.state_dict(),
            "critic_kind": self.cfg.critic,
            "actor_kind": self.cfg.actor,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from :meth:`state_dict` (:meth:`ActorCriticState.load_state_dict`), after
        checking that the checkpoint's critic and actor are of this learner's kinds. A checkpoint
        without a ``critic_kind`` (``actor_kind``) entry is read as holding a categorical critic
        (a residual actor).

        Raises:
            ValueError: the checkpoint's critic kind differs from ``cfg.critic`` or its actor kind
                from ``cfg.actor``, naming both and the override that loads it; nothing is loaded then.
            KeyError, RuntimeError: as :meth:`ActorCriticState.load_state_dict`.
        """
        for network, default in (("critic", "categorical"), ("actor", "residual")):
            kind, own = state.get(f"{network}_kind", default), getattr(self.cfg, network)
            if kind != own:
                raise ValueError(
                    f"the checkpoint's FlashSAC {network} is {kind!r} but FlashSACConfig.{network} is {own!r}: "
                    f"build the learner with algo.{network}={kind} to load it"
                )
        super().load_state_dict(state)

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        """The reward scaling's statistics (when both sides have them), then each optimizer's rate
        and capture flag as this learner holds them (a () device tensor where steps may be
        captured, else a float), whatever the checkpoint's were."""
        if self.reward_scaler is not None and state.get("reward_scaler") is not None:
            self.reward_scaler.load_state_dict(state["reward_scaler"])
        for optimizer in (self.actor_optimizer, self.critic_optimizer, self.temperature_optimizer):
            for group in optimizer.param_groups:
                group["lr"] = self._rate(float(group["lr"]))
                group["capturable"] = self._may_capture


class _StepGraphs:
    """The CUDA graphs of :class:`FlashSAC`'s two kinds of update (``runtime.cuda_graph``),
    captured lazily: ``"actor"`` (sample, actor and temperature step, critic step, EMA) and
    ``"critic"`` (the same without the actor step), as :meth:`FlashSAC._step` runs them.

    Each kind first runs :data:`WARMUP` times eagerly on a side stream, which builds the
    optimizer state, compiles the objectives and settles the caching allocator (PyTorch, "CUDA
    Graphs": whole-network capture). The next update of that kind is captured into a graph with its
    own memory pool (holding :data:`~unilab_rl.learner.GRAPH_CAPTURE_LOCK`, so that the async
    runtime's acting server does not touch the GPU meanwhile), then replayed, and so is every
    later one. Each graph draws its batch itself
    (:meth:`~unilab_rl.replay.ReplayBuffer.sample_capturable`, from the device generator, into
    static tensors) and reads the live parameters, batch-norm statistics, optimizer state,
    learning-rate tensors, reward-scaling statistics and replay storage, all updated in place
    outside it. :meth:`FlashSAC.load_state_dict` replaces this object, since it replaces the
    optimizers' state tensors. (SAC's whole-step graphs, ``unilab_rl.algorithms.sac.agent``,
    follow the same plan.)
    """

    WARMUP = 3
    """Eager updates of each kind before its capture."""

    def __init__(self) -> None:
        self.graphs: dict[str, torch.cuda.CUDAGraph] = {}  # "actor", "critic" once captured
        self.outs: dict[str, torch.Tensor] = {}  # their static outputs: (7,) and (3,)
        self.warm = {"actor": 0, "critic": 0}
        self.stream: torch.cuda.Stream | None = None

    @property
    def captured(self) -> bool:
        """Every kind of update run so far is a graph replay (and at least one has run)."""
        ran = {kind for kind, n in self.warm.items() if n > 0}
        return bool(ran) and ran <= set(self.graphs)

    def _eager(self, agent: FlashSAC, kind: str, step: Callable[[], torch.Tensor]) -> torch.Tensor:
        """Run ``step`` on the side stream, then make the current stream wait for it."""
        if self.stream is None:
            self.stream = torch.cuda.Stream(agent.device)
        main = torch.cuda.current_stream(agent.device)
        self.stream.wait_stream(main)
        with torch.cuda.stream(self.stream):
            out = step()
        main.wait_stream(self.stream)
        torch.cuda.synchronize(agent.device)  # warm-up only: no cross-stream lifetime to track
        self.warm[kind] += 1
        return out

    def step(self, agent: FlashSAC, with_actor: bool) -> torch.Tensor:
        """One update of the kind ``with_actor`` names: eager while warming up, then captured once
        and replayed; returns a copy of its (7,) or (3,) log."""
        kind = "actor" if with_actor else "critic"

        def update() -> torch.Tensor:
            return agent._step(agent.replay.sample_capturable(agent.cfg.batch_size, agent.mirror), with_actor)

        graph = self.graphs.get(kind)
        if graph is None:
            if self.warm[kind] < self.WARMUP:
                return self._eager(agent, kind, update)
            graph = torch.cuda.CUDAGraph()
            with GRAPH_CAPTURE_LOCK, torch.cuda.graph(graph):  # no acting server call meanwhile
                self.outs[kind] = update()
            self.graphs[kind] = graph
        graph.replay()
        return self.outs[kind].clone()


def make(env: VecEnv, cfg: FlashSACConfig, *, device: torch.device | str | None = None,
         runtime: RuntimeConfig | None = None, max_iterations: int = 1000) -> FlashSAC:
    """The algorithm factory (:attr:`unilab_rl.registry.AlgorithmSpec.make_agent`)."""
    return FlashSAC(env, cfg, device, runtime, max_iterations)


__all__ = ["FlashSAC", "make", "resolve_compile_mode"]
