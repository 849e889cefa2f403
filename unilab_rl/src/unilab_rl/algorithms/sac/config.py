"""Settings of plain SAC.

Defaults are the project's recommendation for G1 (``shared/research/algorithms.md`` section 6,
"Plain SAC"): the textbook SAC core (Haarnoja et al. 2018, arXiv 1801.01290 and 1812.05905),
tuned with the numbers of FastSAC (Seo et al., arXiv 2512.01996; holosoma preset
``g1_29dof_fast_sac``, algorithms.md 2.2) and the UniLab SAC CPU-MuJoCo run (algorithms.md 3).
A stdlib dataclass on purpose: unilab_rl depends on torch only; the CLI validates it elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass
class SACConfig:
    """Hyperparameters of :class:`unilab_rl.algorithms.sac.SAC` and its runner loop."""

    # -- Scale ------------------------------------------------------------------------------
    num_envs: int = 1024
    """Parallel environments the env is built with (read by the caller that builds the env;
    the learner itself takes the env's ``num_envs``). algorithms.md 6: 1024-2048."""
    max_iterations: int = 1000
    """Iterations to train. One iteration = one env step of all envs + its gradient updates."""
    learning_starts: int = 10
    """Iterations of uniform-random actions at the start of training; gradient updates begin
    once the buffer holds ``learning_starts * num_envs`` transitions (FastTD3/FastSAC use 10)."""

    # -- Replay and updates -----------------------------------------------------------------
    buffer_size_per_env: int = 1024
    """Replay capacity per env; total capacity = ``buffer_size_per_env * num_envs``
    (FastSAC: 1024 per env, about 4.2 M at 4096 envs)."""
    batch_size: int = 8192
    """Transitions per gradient update (FastSAC, UniLab SAC: 8192)."""
    num_updates: int = 8
    """Critic updates per iteration (FastSAC: 8; replay ratio = ``num_updates * batch_size /
    num_envs``; keep it at 16-32 when ``num_envs`` changes, algorithms.md 6)."""
    policy_frequency: int = 4
    """Actor (and temperature) updated once every this many critic updates (FastSAC: 4, i.e. 2
    actor updates per 8 critic updates). Counted across iterations."""

    # -- Returns and targets ----------------------------------------------------------------
    gamma: float = 0.97
    """Discount (FastSAC, MJP and UniLab G1 at 50 Hz control: 0.97)."""
    tau: float = 0.125
    """Polyak rate of the target critics, ``target <- (1 - tau) target + tau online``, applied
    after every critic update (FastSAC: 0.125, validated with a C51 critic and mean-Q;
    algorithms.md 6 suggests 0.005-0.05 for a scalar min-Q critic: retune if it diverges)."""
    critic_reduction: Literal["min", "mean"] = "min"
    """How the two Q estimates are combined in the target and the actor loss: ``"min"``
    is the textbook clipped double-Q (Fujimoto et al. 2018, arXiv 1802.09477; SAC 1812.05905),
    ``"mean"`` is FastSAC's (algorithms.md 2.2: "no clipped double-Q ... the actor uses the mean")."""

    # -- Optimizers -------------------------------------------------------------------------
    actor_lr: float = 3e-4
    """AdamW learning rate of the actor (FastSAC: 3e-4)."""
    critic_lr: float = 3e-4
    """AdamW learning rate of the critics (FastSAC: 3e-4)."""
    alpha_lr: float = 3e-4
    """Adam learning rate of ``log_alpha`` (FastSAC: 3e-4)."""
    adam_betas: tuple[float, float] = (0.9, 0.95)
    """Adam(W) betas for all three optimizers (FastSAC: (0.9, 0.95))."""
    weight_decay: float = 1e-3
    """AdamW weight decay of the actor and critics (FastSAC: 1e-3). ``log_alpha`` gets none: decay
    would pull alpha towards 1."""
    max_grad_norm: float = 0.0
    """Clip the actor and critic gradient norms to this; 0 disables (FastSAC: off)."""

    # -- Networks ---------------------------------------------------------------------------
    actor_hidden: tuple[int, ...] = (512, 256, 128)
    """Actor MLP widths, each Linear -> LayerNorm -> SiLU (FastSAC: 512-256-128)."""
    critic_hidden: tuple[int, ...] = (768, 384, 192)
    """Widths of each of the two Q MLPs, each Linear -> LayerNorm -> SiLU (FastSAC: 768-384-192)."""
    log_std_min: float = -5.0
    """Lower bound of the actor's pre-tanh log std (FastSAC: -5)."""
    log_std_max: float = 0.0
    """Upper bound of the actor's pre-tanh log std (FastSAC: 0). With zero-initialized heads the
    initial log std is the midpoint (-2.5, std 0.08): a small initial sigma (algorithms.md 3)."""

    # -- Entropy ----------------------------------------------------------------------------
    init_alpha: float = 1e-3
    """Initial temperature alpha (FastSAC and UniLab SAC: 1e-3); tuned automatically after."""
    target_entropy_scale: float = 0.0
    """Target entropy is ``-target_entropy_scale * |A|`` in nats, with the log-probability of the
    action in the env's units (tanh and box Jacobians included). 1.0 is the textbook heuristic
    ``-dim(A)`` (Haarnoja et al. 2018, arXiv 1812.05905, section 5); 0.0 is FastSAC's choice
    (holosoma ``target_entropy_ratio = 0``, algorithms.md 2.2), which keeps more exploration
    for the small initial sigma. Default 0.0, since the other defaults are FastSAC's."""

    # -- Observations -----------------------------------------------------------------------
    obs_normalization: bool = True
    """Normalize actor and critic inputs with running mean/std (FastSAC: on)."""
    obs_norm_eps: float = 1e-2
    """Added to the running std (FastSAC: 1e-2)."""
    obs_clip: float = 5.0
    """Normalized observations are clamped to ``[-obs_clip, obs_clip]``."""

    # -- Symmetry ---------------------------------------------------------------------------
    symmetry: bool = False
    """Left/right symmetry augmentation (FastSAC, arXiv 2512.01996, and holosoma turn it on for
    the G1). Needs an env with a mirror specification (``env.mirror``,
    :class:`unilab_rl.vecenv.Mirror`); otherwise the learner raises ``ValueError``. Each sampled
    batch has its second half (rows ``batch_size // 2`` on) replaced by its mirror image:
    observations, next observations (both groups) and actions mirrored, rewards and
    ``terminated`` kept. The rows are uniform draws with replacement, so a fixed half is a random
    half, and no extra random numbers are drawn. Mirroring half keeps the cost of an update;
    holosoma (``fast_sac_agent.py``, ``_sample_and_prepare_batches``) instead concatenates the
    mirrored batch (2x batch size, about 2x update cost). Observations are mirrored raw (the
    replay stores them raw) and normalized after; the running observation statistics are
    updated with each observation and its mirror image, so they are symmetric and the mirrored
    half is normalized like the data it imitates. Off in code; the g1_walk_flat owner YAML turns it
    on (it halved the time to mean episode length 900 on the GPU machine, docs/benchmarks.md)."""

    # -- Execution --------------------------------------------------------------------------
    device: str = "auto"
    """Learner device: ``"auto"`` (cuda, xpu, mps, then cpu with a warning) or a name such as
    ``"cuda:1"``; a named device the machine lacks is an error."""
    use_compile: bool | Literal["auto"] = "auto"
    """``torch.compile`` the update steps: ``"auto"`` compiles on CUDA only and runs eagerly
    elsewhere; ``True`` compiles on any device; ``False`` never compiles."""
    compile_mode: Literal["default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"] = (
        "reduce-overhead"
    )
    """``torch.compile`` mode when compiling. ``"reduce-overhead"`` (FastTD3's choice) replays CUDA
    graphs, which removes the kernel-launch cost that dominates these small networks. Measured on
    one H200 (torch 2.11) at G1 sizes (obs 99/111, 29 actions, batch 8192, 8 critic + 2 actor
    updates): ``update()`` took 23-28 ms, against 42-62 ms with ``"default"`` and 40-55 ms
    eager; the first iterations spend 35-50 s compiling. Under ``cuda_graph`` (on by default on
    CUDA) the whole steps are graphs already, and a CUDA-graph mode runs as its graph-free twin."""
    cuda_graph: bool | Literal["auto"] = "auto"
    """Capture each whole gradient step as a CUDA graph and replay it: the critic step (replay
    sampling, mirroring, the critic objective, its backward pass, the AdamW step and the Polyak
    update) and the actor step (objective, backward, actor and temperature AdamW steps) become
    one graph each, so an update costs one launch instead of hundreds (PyTorch, "CUDA Graphs",
    whole-network capture). The objectives inside still go through ``torch.compile`` when
    ``use_compile`` says so, with ``compile_mode``'s CUDA-graph modes replaced by their
    graph-free twins (``"reduce-overhead"`` -> ``"default"``, ``"max-autotune"`` ->
    ``"max-autotune-no-cudagraphs"``). The first 3 steps of each kind run eagerly on a side
    stream (they initialize the optimizer state and compile), the 4th is captured. Rows are drawn
    on the device (:meth:`~unilab_rl.replay.ReplayBuffer.sample_capturable`), so the random
    stream differs from the eager path's. ``True`` needs a CUDA learner device and no
    data-parallel gradient sync; ``"auto"`` captures when both hold and runs eagerly otherwise;
    ``False`` never captures. The optimizers are built ``capturable`` whenever capture may happen
    (so also for a data-parallel CUDA run under ``"auto"``, which then runs them uncaptured).
    Measured on one H200 (docs/benchmarks.md, "Whole-step CUDA graphs", G1 sizes, batch 8192, 8
    critic + 2 actor updates per call): 11.5 ms per ``update()`` against 27.2 ms for
    ``"reduce-overhead"`` alone, and the same steps as the eager path to float tolerance; a default
    g1_walk_flat run with it reached the same walking scores as before."""

    # -- Runtime ----------------------------------------------------------------------------
    runtime: Literal["sync", "async"] = "sync"
    """``"sync"``: one process alternates collection and learning (debugging, tests).
    ``"async"``: a collector process steps the env continuously with a CPU copy of the actor while
    the learner updates (:class:`unilab_rl.async_runtime.AsyncOffPolicyRunner`). Needs a
    host-bridge (CPU) env built from a picklable factory. Default stays ``"sync"`` until measured
    on the GPU machine."""
    block_steps: int = 8
    """Async: env steps per shared-memory block (a block holds ``block_steps * num_envs``
    transitions and crosses to the learner in one copy)."""
    num_blocks: int = 4
    """Async: blocks in the shared-memory ring (>= 2). The collector runs at most this many blocks
    ahead of the learner, then waits (backpressure)."""
    sync_weights_every: int = 8
    """Async: critic updates between two broadcasts of the actor weights and the actor's
    observation normalizer to the collector."""
    num_collectors: int = 1
    """Async: collector processes. Each builds its own shard of ``num_envs / num_collectors`` envs
    (own seed, own physics pool of ``sim.nthread / num_collectors`` threads, own CPU actor copy),
    so one collector's Python overhead and policy inference overlap another's physics. One
    iteration is still one env step of all ``num_envs`` envs; ``num_envs`` must be divisible by
    it."""
    collector_shards: int = 1
    """Async: env shards per collector process, each stepped by its own thread (so
    ``num_envs / (num_collectors * collector_shards)`` envs each, own seed, own physics pool with
    the collector's physics threads). MuJoCo releases the GIL while it steps, so one shard's env
    code, policy and block writes run while another shard's physics does: the collector's Python
    work hides behind physics instead of adding to it. The pools oversubscribe the cores by this
    factor. Each shard draws its policy noise from its own seeded stream, so its data does not
    depend on thread order. With ``runtime="async"``, ``num_envs`` must be divisible by
    ``num_collectors * collector_shards``; the sync runtime ignores both."""
    collector_threads: int = 1
    """Async: torch intra-op threads of the collector's policy inference (the physics pool has
    its own threads, ``sim.nthread``)."""
    policy_device: Literal["cpu", "learner"] = "cpu"
    """Async: where each collector evaluates the exploration policy. ``"cpu"``: on its own
    ``collector_threads`` torch threads, with ``CUDA_VISIBLE_DEVICES`` emptied (no CUDA context).
    ``"learner"``: on the learner's device (e.g. ``cuda:0``; with several ranks each rank's own):
    the actor observations (N, Da) float32 go there and the actions (N, A) come back every env
    step, and the collector then creates its own CUDA context (about 0.5 GB of GPU memory).
    With a CPU learner both are the same. Measured on the GPU machine (docs/benchmarks.md,
    "Asynchronous runtime", session 7): the 1024-env forward takes 0.7 ms on the H200 against
    4.9 ms on one CPU thread, and one collector stepped 17 % faster with ``"learner"``, so the SAC
    owner YAMLs set it. The code default stays ``"cpu"``: no other accelerator was measured."""
    learner_threads: int = 0
    """Async: torch intra-op threads of the learner process; 0 = automatic (1 on an accelerator,
    the cores left after physics and collector on the CPU, at least 1)."""
    resume: str | None = None
    """Resume training: ``"latest"`` (newest run of this algo and task under
    ``training.log_dir``), a run directory or a ``.pt`` checkpoint. Restores networks, optimizers,
    temperature, normalizers, RNG states and the iteration count; training continues to
    ``max_iterations``. The replay buffer starts empty."""

    def __post_init__(self) -> None:
        """Check value ranges.

        Raises:
            ValueError: naming the first field out of range and its value.
        """
        positive = ("num_envs", "max_iterations", "buffer_size_per_env", "batch_size", "num_updates",
                    "policy_frequency", "block_steps", "sync_weights_every", "collector_threads",
                    "num_collectors", "collector_shards")
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"SACConfig.{name} must be >= 1, got {getattr(self, name)!r}")
        nonnegative = ("learning_starts", "weight_decay", "max_grad_norm", "target_entropy_scale",
                       "learner_threads")
        for name in nonnegative:
            if getattr(self, name) < 0:
                raise ValueError(f"SACConfig.{name} must be >= 0, got {getattr(self, name)!r}")
        for name in ("actor_lr", "critic_lr", "alpha_lr", "init_alpha", "obs_norm_eps", "obs_clip"):
            if not getattr(self, name) > 0:
                raise ValueError(f"SACConfig.{name} must be > 0, got {getattr(self, name)!r}")
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"SACConfig.gamma must be in [0, 1], got {self.gamma!r}")
        if not 0.0 < self.tau <= 1.0:
            raise ValueError(f"SACConfig.tau must be in (0, 1], got {self.tau!r}")
        if not self.log_std_min < self.log_std_max:
            raise ValueError(
                f"SACConfig.log_std_min must be < log_std_max, got {self.log_std_min!r} >= {self.log_std_max!r}"
            )
        if self.runtime not in ("sync", "async"):
            raise ValueError(f"SACConfig.runtime must be 'sync' or 'async', got {self.runtime!r}")
        if self.policy_device not in ("cpu", "learner"):
            raise ValueError(f"SACConfig.policy_device must be 'cpu' or 'learner', got {self.policy_device!r}")
        if self.runtime == "async" and self.num_envs % (self.num_collectors * self.collector_shards):
            raise ValueError(
                f"SACConfig.num_envs must be divisible by SACConfig.num_collectors * SACConfig.collector_shards, got "
                f"num_envs={self.num_envs}, num_collectors={self.num_collectors} and "
                f"collector_shards={self.collector_shards}"
            )
        if self.num_blocks < 2:
            raise ValueError(f"SACConfig.num_blocks must be >= 2, got {self.num_blocks!r}")
        if self.critic_reduction not in ("min", "mean"):
            raise ValueError(f"SACConfig.critic_reduction must be 'min' or 'mean', got {self.critic_reduction!r}")
        if self.cuda_graph not in (True, False, "auto"):
            raise ValueError(f"SACConfig.cuda_graph must be true, false or 'auto', got {self.cuda_graph!r}")
        if self.use_compile not in (True, False, "auto"):
            raise ValueError(f"SACConfig.use_compile must be True, False or 'auto', got {self.use_compile!r}")
        modes = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
        if self.compile_mode not in modes:
            raise ValueError(f"SACConfig.compile_mode must be one of {modes}, got {self.compile_mode!r}")
        if len(self.adam_betas) != 2 or not all(0.0 <= b < 1.0 for b in self.adam_betas):
            raise ValueError(f"SACConfig.adam_betas must be two values in [0, 1), got {self.adam_betas!r}")
        for name in ("actor_hidden", "critic_hidden"):
            widths = getattr(self, name)
            if len(widths) == 0 or any(w < 1 for w in widths):
                raise ValueError(f"SACConfig.{name} must be a non-empty tuple of widths >= 1, got {widths!r}")


__all__ = ["SACConfig"]
