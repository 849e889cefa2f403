"""The SAC learner: networks, targets, optimizers, normalizers and replay buffer in one object.

The math lives in :mod:`unilab_rl.algorithms.sac.update`; this file holds state and wiring.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import math
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from unilab_rl.algorithms.sac import update as sac_update
from unilab_rl.algorithms.sac.config import SACConfig
from unilab_rl.algorithms.sac.networks import Actor, Critic, DeterministicPolicy, ExplorationPolicy
from unilab_rl.device import resolve_device
from unilab_rl.normalizer import RunningMeanStd, batch_moments
from unilab_rl.learner import GRAPH_CAPTURE_LOCK, ActorCriticState, ScheduleFromConfig
from unilab_rl.replay import Batch, ReplayBuffer, block_rows
from unilab_rl.runtime import RuntimeConfig
from unilab_rl.vecenv import Mirror, VecEnv, apply_mirror, learner_mirror, learner_spaces

logger = logging.getLogger(__name__)


class SAC(ActorCriticState, ScheduleFromConfig):
    """Soft Actor-Critic (Haarnoja et al. 2018, arXiv 1801.01290 / 1812.05905) with automatic
    temperature, twin critics with Polyak-averaged targets, delayed actor updates (FastSAC,
    arXiv 2512.01996) and a replay buffer on the learner device.

    Observation groups: the actor reads ``"actor"``; the critics read ``"critic"`` when the env
    has that group (asymmetric actor-critic), else ``"actor"``. Both are stored raw in the buffer
    and normalized with running statistics at use time (:attr:`obs_normalizers`).

    Args:
        env: the vector env to train on (only its sizes, action box and device are read here).
        cfg: hyperparameters; copied, never mutated.
        device: learner device; ``None`` resolves ``"auto"`` with
            :func:`unilab_rl.device.resolve_device`.
        runtime: execution settings (``compile``, ``compile_mode``, ``cuda_graph``); ``None``
            takes :class:`~unilab_rl.runtime.RuntimeConfig`'s defaults. ``mixed_precision=true``
            is refused: SAC runs in float32 (TF32 matrix products on CUDA).

    Attributes:
        actor, critic, critic_target: the networks (:class:`Actor`, :class:`Critic`).
        actor_average: the moving average of the actor's parameters (``cfg.actor_ema > 0``), the
            deployed deterministic policy; ``None`` when off.
        log_alpha: () float32 leaf tensor, log of the temperature.
        target_entropy: float, ``-cfg.target_entropy_scale * num_actions``.
        obs_normalizers: ``nn.ModuleDict`` group -> :class:`RunningMeanStd` (empty when
            ``cfg.obs_normalization`` is False).
        replay: the :class:`ReplayBuffer` (not part of :meth:`state_dict`).
        iteration: iterations completed, maintained by the runner; saved in checkpoints.
        num_critic_updates: gradient steps taken on the critics so far.
        compile_backend: ``"inductor"`` when the critic and actor objectives run through
            ``torch.compile`` (mode ``runtime.compile_mode``; ``"auto"`` is ``"reduce-overhead"``,
            FastTD3's choice: its CUDA graphs remove the kernel-launch cost that dominates these
            small networks), ``"eager"`` otherwise.
        grad_sync: ``None``, or (data-parallel training, :func:`unilab_rl.distributed.attach`) a
            callable run on each optimizer group's parameters between backward and step (critic;
            actor and temperature), outside the compiled objectives.
        stats_sync: ``None``, or a callable summing a tensor in place over ranks: observation
            statistics are then merged from the moments of all ranks' batches (identical on
            every rank).
        mirror: the env's :class:`~unilab_rl.vecenv.Mirror` on the learner device when
            ``cfg.symmetry`` is on (each sampled batch's second half is mirrored, and the
            observation statistics see every observation and its mirror image), else ``None``.

    Raises:
        ValueError: the env has no ``"actor"`` group, its action box is malformed, or its sizes
            disagree; ``cfg.symmetry`` is on and the env has no usable ``mirror``; the entropy
            target is above what a policy in the action box can have
            (:func:`checked_target_entropy`).
            ``runtime.cuda_graph=true`` without a CUDA device, or ``runtime.mixed_precision=true``.
        unilab_rl.device.DeviceUnavailableError: ``device`` names a missing device.
    """

    # Warm-up actions, alpha, cuda_graphs and the checkpoint (less its own entries) are
    # ActorCriticState's, on these attributes.
    temperature_key = "log_alpha"
    temperature_optimizer_key = "alpha_optimizer"

    def __init__(self, env: VecEnv, cfg: SACConfig, device: torch.device | str | None = None,
                 runtime: RuntimeConfig | None = None) -> None:
        self.cfg = dataclasses.replace(cfg)
        cfg = self.cfg
        self.runtime = dataclasses.replace(runtime) if runtime is not None else RuntimeConfig()
        self.device = resolve_device("auto" if device is None else device)
        if self.runtime.cuda_graph is True and self.device.type != "cuda":
            raise ValueError(f"runtime.cuda_graph=true needs a CUDA learner device, got {self.device}")
        if self.runtime.mixed_precision is True:
            raise ValueError("runtime.mixed_precision=true: SAC runs in float32; use auto or false")
        # Capture may happen: optimizers keep their step counts on the device (capturable).
        self._may_capture = self.runtime.cuda_graph is not False and self.device.type == "cuda"
        self.env_device = torch.device(env.device)
        self.num_envs = env.num_envs
        self.num_actions = env.num_actions
        self.actor_group, self.critic_group, obs_dims, self.action_low, self.action_high = learner_spaces(
            env, "SAC", self.device
        )
        self.mirror: Mirror | None = learner_mirror(env, "SAC", obs_dims, self.device) if cfg.symmetry else None
        self.target_entropy = checked_target_entropy(cfg.target_entropy_scale, self.action_low, self.action_high)

        # Networks and targets.
        actor_mirror = None
        if cfg.equivariant_actor and self.mirror is not None:
            actor_mirror = (self.mirror.obs[self.actor_group], self.mirror.actions)
        self.actor = Actor(
            obs_dims[self.actor_group], self.action_low, self.action_high, cfg.actor_hidden, mirror=actor_mirror
        ).to(self.device)
        self.critic = Critic(obs_dims[self.critic_group], self.action_low, self.action_high, cfg.critic_hidden).to(
            self.device
        )
        self.critic_target = copy.deepcopy(self.critic).requires_grad_(False)
        self._target_params = list(self.critic_target.parameters())
        self._online_params = list(self.critic.parameters())
        self._init_actor_average(cfg.actor_ema)
        self.log_alpha = torch.tensor(math.log(cfg.init_temperature), device=self.device, requires_grad=True)

        # Optimizers (AdamW everywhere; no weight decay on log_alpha). The fused kernels are
        # one launch per step; torch.compile leaves them untraced. (Compiling torch 2.11's foreach
        # Adam on the 0-dim log_alpha fails: "Expected scalars to be on CPU, got meta".)
        opt = {"betas": cfg.adam_betas, "fused": self.device.type in ("cuda", "cpu"), "capturable": self._may_capture}
        self.actor_optimizer = torch.optim.AdamW(
            self.actor.parameters(), lr=cfg.actor_lr, weight_decay=cfg.weight_decay, **opt
        )
        self.critic_optimizer = torch.optim.AdamW(
            self.critic.parameters(), lr=cfg.critic_lr, weight_decay=cfg.weight_decay, **opt
        )
        self.alpha_optimizer = torch.optim.AdamW([self.log_alpha], lr=cfg.temperature_lr, weight_decay=0.0, **opt)

        # Observation normalizers and replay.
        self.obs_normalizers = nn.ModuleDict()
        if cfg.obs_normalization:
            for group, dim in obs_dims.items():
                self.obs_normalizers[group] = RunningMeanStd(
                    dim, eps=cfg.obs_norm_eps, clip=cfg.obs_clip, device=self.device
                )
        self.replay = ReplayBuffer(cfg.buffer_size_per_env * self.num_envs, obs_dims, self.num_actions, self.device)

        self.iteration = 0
        self.num_critic_updates = 0
        self.grad_sync: Callable[[list[torch.Tensor]], None] | None = None
        self.stats_sync: Callable[[torch.Tensor], None] | None = None
        self._setup_compile()

    # -- Acting -----------------------------------------------------------------------------

    def normalize(self, group: str, obs: torch.Tensor) -> torch.Tensor:
        """Normalize (N, d) observations of ``group`` with the running statistics (identity when off)."""
        return self.obs_normalizers[group](obs) if group in self.obs_normalizers else obs

    @torch.no_grad()
    def act(self, obs_actor: torch.Tensor, deterministic: bool = False) -> torch.Tensor:
        """Actions for a batch of actor observations.

        Args:
            obs_actor: (N, obs_dims["actor"]) float32, on any device.
            deterministic: ``centre + half_range * tanh(mean)`` instead of a sample.

        Returns:
            (N, A) float32 on the env device, within ``[action_low, action_high]``.
        """
        obs = self.normalize(self.actor_group, obs_actor.to(self.device, torch.float32))
        if deterministic:
            actions = self.deployed_actor.deterministic_action(obs)
        else:
            actions = self.actor.explore(obs)
        return actions.to(self.env_device)

    def exploration_policy(self) -> ExplorationPolicy:
        """The live collection policy (shares weights): raw actor obs (B, Da) -> sampled actions (B, A).

        The async runner sends a CPU copy of it to the collector and broadcasts its
        :meth:`~torch.nn.Module.state_dict` floating tensors (:func:`unilab_rl.async_runtime.flat_state`).
        """
        return ExplorationPolicy(self.actor, self.obs_normalizers[self.actor_group] if self.obs_normalizers else None)

    def inference_policy(self) -> DeterministicPolicy:
        """A module mapping raw actor observations (B, Da) to the deterministic actions (B, A) of
        :attr:`deployed_actor`; shares weights."""
        normalizer = self.obs_normalizers[self.actor_group] if self.obs_normalizers else None
        return DeterministicPolicy(self.deployed_actor, normalizer)

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
        """Add one env step of all envs to the replay buffer and update the observation statistics.

        Args:
            obs: group -> (N, d) observations the actions were taken in.
            actions: (N, A) actions sent to the env.
            rewards: (N,) float32.
            terminated: (N,) bool, terminal states only (truncation is not termination).
            next_obs: group -> (N, d), the env's ``extras["final_obs"]`` (pre-reset observation).
            truncated: (N,) bool time-outs; unused by SAC (accepted for the runner's uniform call).

        Tensors may be on the env device; they are moved to the learner device once.
        """
        groups = self.replay.obs_dims
        obs = {g: obs[g].to(self.device) for g in groups}
        next_obs = {g: next_obs[g].to(self.device) for g in groups}
        for group, normalizer in self.obs_normalizers.items():
            normalizer.update(self._stats_rows(group, obs[group]), reduce=self.stats_sync)
        self.replay.add(obs, actions, rewards, terminated, next_obs)

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
        """Add T env steps of all N envs at once: one copy to the learner device per field, one
        replay write, then the observation statistics merged step by step (as T :meth:`store`
        calls would, so both runtimes normalize identically).

        Args:
            obs, next_obs: group -> (T, N, d) float32 (e.g. views of a shared-memory block).
            actions: (T, N, A) float32; rewards, terminated: (T, N) float32 / bool.
            truncated: (T, N) bool time-outs; unused by SAC (accepted for the async runner's
                uniform call, :class:`unilab_rl.learner.Learner`).

        Returns:
            bytes copied from the source tensors.

        Raises:
            KeyError, ValueError: as :meth:`ReplayBuffer.add`.
        """
        steps, n = rewards.shape
        groups = self.replay.obs_dims
        d, nbytes = block_rows({"obs": {g: obs[g] for g in groups}, "next_obs": {g: next_obs[g] for g in groups},
                                "actions": actions, "rewards": rewards, "terminated": terminated}, self.device)
        obs_d, next_d = d["obs"], d["next_obs"]
        actions_d, rewards_d, terminated_d = d["actions"], d["rewards"], d["terminated"]
        for group, normalizer in self.obs_normalizers.items():
            rows = [self._stats_rows(group, obs_d[group][t * n : (t + 1) * n]) for t in range(steps)]
            if self.stats_sync is not None:  # one reduction for the block's T steps, merged step by step
                moments = torch.stack([batch_moments(r) for r in rows])
                self.stats_sync(moments)
                for t in range(steps):
                    normalizer.merge_moments(moments[t])
                continue
            for r in rows:
                normalizer.update(r)
        self.replay.add(obs_d, actions_d, rewards_d, terminated_d, next_d)
        return nbytes

    def _stats_rows(self, group: str, obs: torch.Tensor) -> torch.Tensor:
        """The rows the observation statistics of ``group`` learn from: ``obs`` (N, d), and with
        symmetry on also its mirror image, (2N, d), so that the statistics are left/right symmetric
        (``mean[perm] * sign == mean``, ``var[perm] == var``) and normalization commutes with the
        mirror."""
        if self.mirror is None:
            return obs
        return torch.cat([obs, apply_mirror(obs, self.mirror.obs[group])])

    def sample_batch(self) -> Batch:
        """A uniform replay batch of ``cfg.batch_size`` raw transitions; with ``cfg.symmetry`` its
        second half mirrored (:func:`unilab_rl.replay.mirror_half`).

        Raises:
            ValueError: the replay buffer is empty.
        """
        return self.replay.sample(self.cfg.batch_size, mirror=self.mirror)

    # -- Learning ---------------------------------------------------------------------------

    def _critic_objective(
        self,
        critic_obs: torch.Tensor,  # (B, Dc) raw
        actions: torch.Tensor,  # (B, A)
        rewards: torch.Tensor,  # (B,)
        terminated: torch.Tensor,  # (B,) bool
        next_actor_obs: torch.Tensor,  # (B, Da) raw
        next_critic_obs: torch.Tensor,  # (B, Dc) raw
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        a, c, cfg = self.actor_group, self.critic_group, self.cfg
        return sac_update.critic_objective(
            self.actor, self.critic, self.critic_target,
            self.normalize(c, critic_obs), actions, rewards, terminated,
            self.normalize(a, next_actor_obs), self.normalize(c, next_critic_obs),
            self.log_alpha.detach().exp(), cfg.gamma, cfg.critic_reduction,
        )  # fmt: skip

    def _actor_objective(
        self,
        actor_obs: torch.Tensor,  # (B, Da) raw
        critic_obs: torch.Tensor,  # (B, Dc) raw
    ) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
        return sac_update.actor_objective(
            self.actor, self.critic, self.log_alpha,
            self.normalize(self.actor_group, actor_obs), self.normalize(self.critic_group, critic_obs),
            self.target_entropy, self.cfg.critic_reduction,
        )  # fmt: skip

    def _setup_compile(self) -> None:
        """Compile the two forward objectives (each one graph, no breaks); backward passes run the
        compiled backward graphs, optimizer steps stay eager (fused kernels). Under
        ``runtime.cuda_graph`` the whole steps are captured instead (:class:`_StepGraphs`), so the
        objectives use the graph-free twin of a CUDA-graph compile mode."""
        use = self.runtime.compile
        want = use is True or (use == "auto" and self.device.type == "cuda")
        self.compile_backend = "inductor" if want else "eager"
        self._graphs = _StepGraphs() if self._may_capture else None
        mode = "reduce-overhead" if self.runtime.compile_mode == "auto" else self.runtime.compile_mode
        if self._graphs is not None:
            mode = {"reduce-overhead": "default", "max-autotune": "max-autotune-no-cudagraphs"}.get(mode, mode)
        # CUDA-graph modes need to be told where a training step begins (cudagraph trees).
        self._cudagraphs = want and mode in ("reduce-overhead", "max-autotune")
        if want:
            self._critic_objective_fn = torch.compile(self._critic_objective, fullgraph=True, mode=mode)
            self._actor_objective_fn = torch.compile(self._actor_objective, fullgraph=True, mode=mode)
        else:
            self._critic_objective_fn = self._critic_objective
            self._actor_objective_fn = self._actor_objective

    def _critic_step(self, batch: Batch) -> torch.Tensor:
        """One critic gradient step on ``batch`` and the Polyak update of the targets.

        Returns:
            (2,) float32, detached: critic loss, mean Q of the batch.
        """
        a, c, cfg = self.actor_group, self.critic_group, self.cfg
        if self._cudagraphs:
            torch.compiler.cudagraph_mark_step_begin()
        qf_loss, info = self._critic_objective_fn(
            batch.obs[c], batch.actions, batch.rewards, batch.terminated, batch.next_obs[a], batch.next_obs[c]
        )
        sac_update.apply_gradients(qf_loss, self.critic_optimizer, self.critic.parameters(), cfg.max_grad_norm,
                                   self.grad_sync)
        sac_update.polyak_update(self._target_params, self._online_params, cfg.tau)
        return torch.stack([qf_loss.detach(), (info["qf1"] + info["qf2"]) / 2])

    def _actor_step(self, batch: Batch) -> torch.Tensor:
        """One actor and one temperature gradient step on ``batch``'s observations, then the moving
        average of the actor (``cfg.actor_ema``).

        Returns:
            (4,) float32, detached: actor loss, temperature loss, entropy estimate, alpha after the step.
        """
        if self._cudagraphs:
            torch.compiler.cudagraph_mark_step_begin()
        loss, temperature_loss, info = self._actor_objective_fn(batch.obs[self.actor_group],
                                                                batch.obs[self.critic_group])
        sac_update.apply_gradients(
            loss + temperature_loss, [self.actor_optimizer, self.alpha_optimizer],
            self.actor.parameters(), self.cfg.max_grad_norm, self.grad_sync,
        )  # fmt: skip
        self._update_actor_average()
        return torch.stack([loss.detach(), temperature_loss.detach(), info["entropy"], self.log_alpha.detach().exp()])

    def update(self) -> dict[str, float]:
        """Run ``cfg.num_updates`` critic updates (and every ``actor_update_period``-th an actor and
        temperature update), each on a fresh uniform batch of ``cfg.batch_size`` transitions.

        Each critic update is followed by a Polyak update of the target critics. Synchronizes with
        the device once, at the end. With ``runtime.cuda_graph`` each step is a CUDA-graph replay once
        captured (:class:`_StepGraphs`).

        Returns:
            ``"Loss/critic"``, ``"Critic/mean_q"`` (means over this call's critic updates) and, when an
            actor update happened in this call, ``"Loss/actor"``, ``"Loss/alpha"``,
            ``"Policy/entropy"`` (means) and ``"Policy/alpha"`` (after the last update).

        Raises:
            ValueError: the replay buffer is empty; ``runtime.cuda_graph`` is true with data-parallel
                gradient sync (``grad_sync``).
        """
        cfg = self.cfg
        graphs = self._graphs
        if graphs is not None and self.grad_sync is not None:
            if self.runtime.cuda_graph is True:
                raise ValueError("runtime.cuda_graph=true cannot capture data-parallel gradient sync; "
                                 "use cuda_graph=auto (runs eagerly then) or false")
            graphs = None
        if len(self.replay) == 0:
            raise ValueError("Cannot sample from an empty ReplayBuffer; add transitions first")
        # Graph outputs are consumed (stacked = copied) before the next call: CUDA-graph replays
        # overwrite their output buffers.
        critic_logs: list[torch.Tensor] = []  # each (2,): critic loss, mean Q
        actor_logs: list[torch.Tensor] = []  # each (4,): actor loss, alpha loss, entropy, alpha
        for _ in range(cfg.num_updates):
            if graphs is None:
                batch = self.sample_batch()
                critic_logs.append(self._critic_step(batch))
            else:
                critic_logs.append(graphs.critic_step(self))
            self.num_critic_updates += 1
            if self.num_critic_updates % cfg.actor_update_period == 0:
                actor_logs.append(self._actor_step(batch) if graphs is None else graphs.actor_step(self))

        # One host sync for all metrics of this call.
        names = ["Loss/critic", "Critic/mean_q"]
        values = [torch.stack(critic_logs).mean(0)]  # (2,)
        if actor_logs:
            names += ["Loss/actor", "Loss/alpha", "Policy/entropy", "Policy/alpha"]
            stacked = torch.stack(actor_logs)  # (n, 4)
            values.append(torch.cat([stacked[:, :3].mean(0), stacked[-1, 3:]]))  # means; alpha: last
        return dict(zip(names, torch.cat(values).tolist()))

    # -- Checkpoints ------------------------------------------------------------------------

    def _extra_state(self) -> dict[str, Any]:
        """``obs_normalizers``: the running observation statistics."""
        return {"obs_normalizers": self.obs_normalizers.state_dict()}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        """The observation statistics."""
        self.obs_normalizers.load_state_dict(state["obs_normalizers"])


class _StepGraphs:
    """The CUDA graphs of :class:`SAC`'s two steps (``runtime.cuda_graph``), captured lazily.

    Each step kind (critic; actor + temperature) first runs :data:`WARMUP` times eagerly on a side
    stream, which builds the optimizer state, compiles the objectives and settles the caching
    allocator (as PyTorch's "CUDA Graphs" notes prescribe for whole-network capture). The next
    step is captured into a graph with its own memory pool (holding
    :data:`~unilab_rl.learner.GRAPH_CAPTURE_LOCK`, so that the async runtime's acting server does
    not touch the GPU meanwhile) and then replayed, and so is every later one. The critic graph
    samples its batch itself (:meth:`ReplayBuffer.sample_capturable`) into static tensors; the
    actor step reads that batch, as the eager path's actor step reads the batch of the critic
    step before it. Replays read the live parameters, optimizer state, observation
    statistics and replay storage, all updated in place. :meth:`SAC.load_state_dict` replaces
    this object, since it replaces the optimizers' state tensors.
    """

    WARMUP = 3
    """Eager steps of each kind before its capture."""

    def __init__(self) -> None:
        self.graphs: dict[str, torch.cuda.CUDAGraph] = {}  # "critic", "actor" once captured
        self.outs: dict[str, torch.Tensor] = {}  # their static outputs: critic (2,), actor (4,)
        self.batch: Batch | None = None  # the last critic step's batch (the critic graph's static one once captured)
        self.warm = {"critic": 0, "actor": 0}
        self.stream: torch.cuda.Stream | None = None

    @property
    def captured(self) -> bool:
        """Both steps are graph replays."""
        return len(self.graphs) == 2

    def _eager(self, agent: SAC, kind: str, step: Callable[[], torch.Tensor]) -> torch.Tensor:
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

    def _run(self, agent: SAC, kind: str, step: Callable[[], torch.Tensor], may_capture: bool = True) -> torch.Tensor:
        """One ``step`` of ``kind``: eager while warming up (or while ``may_capture`` is false),
        then captured once and replayed; returns a copy of its output."""
        graph = self.graphs.get(kind)
        if graph is None:
            if self.warm[kind] < self.WARMUP or not may_capture:
                return self._eager(agent, kind, step)
            graph = torch.cuda.CUDAGraph()
            with GRAPH_CAPTURE_LOCK, torch.cuda.graph(graph):  # no acting server call meanwhile
                self.outs[kind] = step()
            self.graphs[kind] = graph
        graph.replay()
        return self.outs[kind].clone()

    def critic_step(self, agent: SAC) -> torch.Tensor:
        """One critic step (sample, objective, backward, AdamW, Polyak); returns its (2,) log, a copy."""

        def step() -> torch.Tensor:
            self.batch = agent.replay.sample_capturable(agent.cfg.batch_size, agent.mirror)
            return agent._critic_step(self.batch)

        return self._run(agent, "critic", step)

    def actor_step(self, agent: SAC) -> torch.Tensor:
        """One actor and temperature step on the last critic step's batch; returns its (4,) log, a
        copy. Captured only once the critic graph is, so that it reads that graph's static batch."""
        return self._run(agent, "actor", lambda: agent._actor_step(self.batch), may_capture="critic" in self.graphs)


def checked_target_entropy(scale: float, action_low: torch.Tensor, action_high: torch.Tensor) -> float:
    """The entropy target ``-scale * A`` in nats (A actions), checked against the action box.

    The log-probabilities are in the env's action units, so no policy whose actions stay in the
    box ``[low, high]`` has more entropy than the uniform distribution over it,
    ``sum(log(high - low))`` nats; a target above that is never met and the temperature would
    grow without bound.

    Args:
        scale: ``SACConfig.target_entropy_scale``.
        action_low, action_high: (A,) the action box, action units.

    Returns:
        The target, nats.

    Raises:
        ValueError: the target is above the uniform distribution's entropy (one line naming
            ``algo.target_entropy_scale``, its value, the target and the largest allowed).
    """
    num_actions = int(action_low.numel())
    target = -scale * num_actions
    most = float(torch.log((action_high - action_low).double()).sum())
    if target > most:
        raise ValueError(
            f"algo.target_entropy_scale={scale:g} sets a target entropy of {target:.4g} nats "
            f"(-scale x {num_actions} actions), above the entropy of the uniform distribution over "
            f"the action box (the most a policy in it can have), so the temperature would grow "
            f"without bound; expected a target <= {most:.4g} nats: algo.target_entropy_scale >= "
            f"{-most / num_actions:.4g}"
        )
    return target


def make(env: VecEnv, cfg: SACConfig, *, device: torch.device | str | None = None,
         runtime: RuntimeConfig | None = None, max_iterations: int | None = None) -> SAC:
    """The algorithm factory (:attr:`unilab_rl.registry.AlgorithmSpec.make_agent`). SAC has no
    schedule over the run, so ``max_iterations`` is not used."""
    return SAC(env, cfg, device, runtime)


__all__ = ["SAC", "checked_target_entropy", "make"]
