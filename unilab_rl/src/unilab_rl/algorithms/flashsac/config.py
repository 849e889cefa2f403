"""Settings of FlashSAC.

FlashSAC: Kim, Lee et al., "FlashSAC" (2026, arXiv 2604.04539), official code
``Holiday-Robot/FlashSAC`` (``configs/agent/flashSAC.yaml``, ``flash_rl/agents/flashSAC/``).
Facts and defaults are taken from ``shared/research/algorithms.md`` section 1 (what the paper and
its code do) and section 6 (the project's recommendation for G1 on CPU MuJoCo: keep the paper's
GPU-benchmark defaults, gamma 0.97 for 50 Hz joystick-style G1). A stdlib dataclass on purpose:
unilab_rl depends on torch only; the CLI validates it elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

CompileMode = Literal["auto", "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"]


@dataclass
class FlashSACConfig:
    """Hyperparameters of :class:`unilab_rl.algorithms.flashsac.FlashSAC` and its runner loop."""

    # -- Scale ------------------------------------------------------------------------------
    num_envs: int = 1024
    """Parallel environments the env is built with (the learner takes the env's ``num_envs``).
    algorithms.md 1.3 and 6: 1024 in the GPU-sim benchmark."""
    max_iterations: int = 1000
    """Iterations to train. One iteration = one env step of all envs + its gradient updates. Also
    the horizon of the cosine learning-rate schedule (:attr:`lr_end`)."""
    learning_starts: int = 100
    """Iterations of uniform-random actions at the start; gradient updates begin once the buffer
    holds ``learning_starts * num_envs`` transitions. 100 at 1024 envs is the paper's 100 k
    minimum buffer size (algorithms.md 1.3, ``buffer_min_length``)."""

    # -- Replay and updates -----------------------------------------------------------------
    buffer_size_per_env: int = 10240
    """Replay capacity per env; total ``buffer_size_per_env * num_envs``: 10.5 M at 1024 envs, the
    paper's 10 M (a 1 M buffer lost 2-5 points, 0.1 M collapsed; algorithms.md 1.4). Observations
    are stored twice (s and s'), so at G1 sizes (actor 99, critic 111, 29 actions) a transition
    takes about 1.8 kB: about 19 GB of learner memory at 10.5 M."""
    batch_size: int = 2048
    """Transitions per gradient update (paper: 2048; 4 k-8 k gave about the same, algorithms.md 1.4)."""
    num_updates: int = 2
    """Critic updates per iteration. The paper's sweet spot is 2 per 1024 env steps (replay ratio
    ``num_updates * batch_size / num_envs`` = 4); scale it with ``num_envs`` (algorithms.md 6)."""
    actor_update_period: int = 2
    """The actor and temperature are updated on every ``actor_update_period``-th critic update,
    starting with the first (``actor_update_period`` in ``configs/agent/flashSAC.yaml``: 2)."""

    # -- Returns and targets ----------------------------------------------------------------
    gamma: float = 0.97
    """Discount: 0.97 for 50 Hz joystick-style G1 (MuJoCo Playground G1/T1 and UniLab runs;
    algorithms.md 1.3 and 6); the IsaacLab benchmark used 0.99 with 3-step returns."""
    tau: float = 0.01
    """EMA rate of the target critic after every critic update (paper: 0.01)."""

    # -- Categorical critic and reward scaling ----------------------------------------------
    num_bins: int = 101
    """Atoms of each categorical critic (paper: 101)."""
    v_min: float = -5.0
    """Lowest atom of the support (paper: ``linspace(-5, 5)``, i.e. -``normalized_G_max``)."""
    v_max: float = 5.0
    """Highest atom of the support (paper: 5)."""
    reward_normalization: bool = True
    """Scale rewards so that discounted returns fit the support (paper: on;
    ``flash_rl/agents/utils/reward_normalization.py``): ``r / max(sqrt(Var G + eps), G_abs_max /
    normalized_g_max)`` with ``G`` the running discounted return per env."""
    normalized_g_max: float = 5.0
    """Largest absolute scaled return the scaling aims for (paper: ``normalized_G_max`` = 5)."""

    # -- Optimizers -------------------------------------------------------------------------
    lr: float = 3e-4
    """Peak Adam learning rate of the actor, critic and temperature (paper: 3e-4)."""
    lr_end: float = 1.5e-4
    """Learning rate at the end of the run; cosine decay from :attr:`lr` over all the run's
    gradient updates, no warmup (paper: 1.5e-4; its warmup is 1e-6 of the run, algorithms.md 1.2).
    Set equal to :attr:`lr` for a constant rate."""
    weight_normalization: bool = True
    """Project every linear weight row onto the unit sphere (and norm-layer scales onto radius
    sqrt(d)) after each optimizer step (paper: always; off only to ablate). No weight decay and no
    gradient clipping are used: the projection bounds the norms (algorithms.md 1.2)."""

    # -- Networks ---------------------------------------------------------------------------
    actor_num_blocks: int = 2
    """Inverted residual blocks of the actor (paper: 2)."""
    actor_hidden_dim: int = 128
    """Actor width h (paper: 128)."""
    critic_num_blocks: int = 2
    """Inverted residual blocks of each critic (paper: 2)."""
    critic_hidden_dim: int = 256
    """Critic width h (paper: 256; 512 helped on rough terrain at higher cost)."""
    expansion: int = 4
    """Width multiplier inside a block, h -> expansion * h -> h (paper: 4)."""
    bn_momentum: float = 0.01
    """Running-statistics rate of the batch norms (official code: 0.01). The input batch norm's
    running statistics are the deployed observation normalizer."""
    log_std_min: float = -10.0
    """Lower bound of the actor's pre-tanh log std (paper: -10)."""
    log_std_max: float = 2.0
    """Upper bound of the actor's pre-tanh log std (paper: 2)."""

    # -- Entropy and exploration -------------------------------------------------------------
    init_temperature: float = 0.01
    """Initial temperature alpha (paper: 0.01); tuned automatically after."""
    temperature_lr_scale: float = 1.0
    """The temperature's learning rate as a multiple of the actor's (paper: 1). Adam moves
    ``log alpha`` by about one learning rate per actor update, so over 6,000 iterations of the
    default schedule alpha can fall by at most about e^1.6; the paper's 50 M-step runs have about
    8 x more updates. Measured on g1_walk_flat: alpha 0.01 -> 0.0035 while the entropy stayed
    15-68 nats above its target (docs/benchmarks.md, "FlashSAC's entropy and temperature")."""
    target_sigma: float = 0.15
    """Unified entropy target: the entropy of a Gaussian with this std in every action dimension,
    ``0.5 |A| log(2 pi e sigma^2)`` (paper: 0.15, -13.87 nats for 29 DoF), in the units of
    :attr:`entropy_units`."""
    entropy_units: Literal["action", "squashed"] = "action"
    """Units of the policy's log-probability, and so of its entropy, the target and the soft
    return's ``-alpha log pi``.

    * ``"action"`` (default): the env's action units. The log-probability includes the
      Jacobian of the squash onto the box, ``-sum_i log(half_range_i)``, so sigma is in action
      units. This is the FlashSAC authors' G1 port (``Holiday-Robot/rsl_rl_flashsac``,
      ``flash_sac.py``: "std temp_target_sigma per action dimension, fixed in PHYSICAL action
      space"). Its velocity and tracking configs squash onto +-1 and +-3 action units, its
      DreamWaQ configs onto the joint limits (see :attr:`action_bound`).
    * ``"squashed"``: the ``[-1, 1]`` units of ``tanh(u)``, so sigma is in half-widths of the box.
      This is the original code (``flash_rl``), whose box is the env's ``[-1, 1]`` action range;
      on our joint-limit box (4.8 action units per side, geometric mean, for the G1) 0.15 is
      about 0.7 action units.

    The temperature's equilibrium is the same in both units up to the choice of sigma's unit. The
    soft return differs: in action units every step adds a constant ``alpha sum_i log(half_range_i)``
    (45.6 alpha for the G1). Measured on the GPU machine (docs/benchmarks.md, "FlashSAC's entropy
    and temperature"): on the whole joint-limit box neither walks in 6,000 iterations."""
    action_bound: float | None = None
    """Squash into the env's action box intersected with ``[-action_bound, action_bound]`` (action
    units) instead of the whole box. ``None``: the whole box, which for the G1 is the joint limits,
    0.6-21.7 action units per side (geometric mean 4.8). The authors' G1 port
    (``Holiday-Robot/rsl_rl_flashsac``, ``isaaclab_flashsac/rl_cfg.py``) uses this choice,
    ``action_bound="scalar"``, as its runner default: +-1 for the velocity tasks, +-3 for G1
    motion tracking (``G1FlatTrackingFlashSACCfg``); only its DreamWaQ tasks squash onto the joint
    limits. One G1 action unit is 0.075-0.55 rad (``0.25 effort / kp``), so walking knees need
    about 3. g1_motion_tracking's owner YAML sets 3; measured there (docs/benchmarks.md, "Motion
    tracking on the GPU machine"): the 5,000-iteration default and a second seed stopped at 4,913
    both track the whole default clip. The
    box shrinks only the policy's actions: the env's own bounds and the exported metadata stay as
    they are."""
    noise_repeat: bool = True
    """Hold the exploration noise for a Zeta-distributed number of env steps (paper: on; off cost
    about 3-7 points on Isaac G1, algorithms.md 1.4). Off: fresh noise every step."""
    zeta_exponent: float = 2.0
    """Exponent s of the truncated Zeta law ``P(k) ~ k^-s`` of the repeat length (paper: 2)."""
    zeta_max: int = 16
    """Largest repeat length; k is drawn from {1, ..., zeta_max} (paper: 16)."""

    # -- Symmetry ---------------------------------------------------------------------------
    symmetry: bool = False
    """Left/right symmetry augmentation, as :attr:`unilab_rl.algorithms.sac.SACConfig.symmetry`:
    the second half of each sampled batch is replaced by its mirror image (``env.mirror``). The
    raw observations are mirrored before the networks' input batch norms, whose batch statistics
    then come from a half-mirrored batch. Not part of the FlashSAC paper; default off."""

    # -- Execution --------------------------------------------------------------------------
    device: str = "auto"
    """Learner device: ``"auto"`` (cuda, xpu, mps, then cpu with a warning) or a name such as
    ``"cuda:1"``; a named device the machine lacks is an error."""
    mixed_precision: bool | Literal["auto"] = "auto"
    """bfloat16 autocast of the forward passes: ``"auto"`` on CUDA only. Parameters, optimizer
    state, losses, the categorical target and the batch-norm statistics stay float32. The paper
    uses float16 with a GradScaler on GPU simulators; bfloat16 needs no scaler (algorithms.md 6)."""
    use_compile: bool | Literal["auto"] = "auto"
    """``torch.compile`` the critic and actor objectives: ``"auto"`` compiles on CUDA only and runs
    eagerly elsewhere; ``True`` compiles on any device; ``False`` never compiles."""
    compile_mode: CompileMode = "auto"
    """``torch.compile`` mode. ``"auto"``: ``"default"`` on torch >= 2.9, ``"reduce-overhead"``
    before. The official code uses ``"max-autotune"`` on torch >= 2.9 because "reduce-overhead
    causes 5-10x slowdowns after PyTorch 2.8" (algorithms.md 1.2); on the H200 machine its
    autotuning held the first update for more than 5 min, so ``"auto"`` avoids both. The update
    speed of ``"default"`` against ``"max-autotune"`` is not measured yet."""

    # -- Runtime ----------------------------------------------------------------------------
    runtime: Literal["sync", "async"] = "sync"
    """``"sync"``: one process alternates collection and learning. ``"async"``: collector processes
    step the env continuously with a CPU copy of the actor while the learner updates
    (:class:`unilab_rl.async_runtime.AsyncOffPolicyRunner`, as for SAC); the held exploration noise
    is drawn and held inside each collector, the batch-norm running statistics travel with the
    actor weights, the reward scaling stays on the learner. Needs a host-bridge (CPU) env built
    from a picklable factory. Default ``"sync"`` until measured on the GPU machine."""
    block_steps: int = 8
    """Async: env steps per shared-memory block (as :attr:`unilab_rl.algorithms.sac.SACConfig.block_steps`)."""
    num_blocks: int = 4
    """Async: blocks in the shared-memory ring (>= 2); the collector runs at most this many blocks
    ahead of the learner, then waits."""
    sync_weights_every: int = 8
    """Async: critic updates between two broadcasts of the actor (weights and batch-norm running
    statistics) to the collectors."""
    num_collectors: int = 1
    """Async: collector processes, each stepping its own shard of ``num_envs / num_collectors``
    envs (and holding its own exploration noise); ``num_envs`` must be divisible by it."""
    collector_shards: int = 1
    """Async: env shards per collector process, each stepped by its own thread with its own policy
    copy (and held noise); as :attr:`unilab_rl.algorithms.sac.SACConfig.collector_shards`.
    With ``runtime="async"``, ``num_envs`` must be divisible by ``num_collectors * collector_shards``."""
    collector_threads: int = 1
    """Async: torch intra-op threads of each collector's policy inference."""
    policy_device: Literal["cpu", "learner"] = "cpu"
    """Async: where each collector evaluates the exploration policy (and draws the held noise):
    ``"cpu"`` on its own torch threads, ``"learner"`` on the learner's device, the collector then
    holding its own CUDA context (about 0.5 GB); as
    :attr:`unilab_rl.algorithms.sac.SACConfig.policy_device`. Default ``"cpu"``: SAC's actor was
    faster on the learner's GPU (docs/benchmarks.md), FlashSAC's collector policy has not run on
    CUDA yet."""
    learner_threads: int = 0
    """Async: torch intra-op threads of the learner process; 0 = automatic (as for SAC)."""

    def __post_init__(self) -> None:
        """Check value ranges.

        Raises:
            ValueError: naming the first field out of range and its value.
        """
        at_least_one = ("num_envs", "max_iterations", "buffer_size_per_env", "batch_size", "num_updates",
                        "actor_update_period", "actor_num_blocks", "actor_hidden_dim", "critic_num_blocks",
                        "critic_hidden_dim", "expansion", "zeta_max", "block_steps", "sync_weights_every",
                        "num_collectors", "collector_shards", "collector_threads")
        for name in at_least_one:
            if getattr(self, name) < 1:
                raise ValueError(f"FlashSACConfig.{name} must be >= 1, got {getattr(self, name)!r}")
        for name in ("learning_starts", "learner_threads"):
            if getattr(self, name) < 0:
                raise ValueError(f"FlashSACConfig.{name} must be >= 0, got {getattr(self, name)!r}")
        if self.runtime not in ("sync", "async"):
            raise ValueError(f"FlashSACConfig.runtime must be 'sync' or 'async', got {self.runtime!r}")
        if self.policy_device not in ("cpu", "learner"):
            raise ValueError(
                f"FlashSACConfig.policy_device must be 'cpu' or 'learner', got {self.policy_device!r}"
            )
        if self.num_blocks < 2:
            raise ValueError(f"FlashSACConfig.num_blocks must be >= 2, got {self.num_blocks!r}")
        if self.runtime == "async" and self.num_envs % (self.num_collectors * self.collector_shards):  # both >= 1
            raise ValueError(
                f"FlashSACConfig.num_envs must be divisible by FlashSACConfig.num_collectors * "
                f"FlashSACConfig.collector_shards, got num_envs={self.num_envs}, num_collectors={self.num_collectors} "
                f"and collector_shards={self.collector_shards}"
            )
        if self.num_bins < 2:
            raise ValueError(f"FlashSACConfig.num_bins must be >= 2, got {self.num_bins!r}")
        for name in ("lr", "lr_end", "init_temperature", "temperature_lr_scale", "target_sigma", "normalized_g_max", "zeta_exponent"):
            if not getattr(self, name) > 0:
                raise ValueError(f"FlashSACConfig.{name} must be > 0, got {getattr(self, name)!r}")
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"FlashSACConfig.gamma must be in [0, 1], got {self.gamma!r}")
        for name in ("tau", "bn_momentum"):
            if not 0.0 < getattr(self, name) <= 1.0:
                raise ValueError(f"FlashSACConfig.{name} must be in (0, 1], got {getattr(self, name)!r}")
        if not self.v_min < self.v_max:
            raise ValueError(f"FlashSACConfig.v_min must be < v_max, got {self.v_min!r} >= {self.v_max!r}")
        if not self.log_std_min < self.log_std_max:
            raise ValueError(
                f"FlashSACConfig.log_std_min must be < log_std_max, got {self.log_std_min!r} >= {self.log_std_max!r}"
            )
        for name in ("mixed_precision", "use_compile"):
            if getattr(self, name) not in (True, False, "auto"):
                raise ValueError(f"FlashSACConfig.{name} must be True, False or 'auto', got {getattr(self, name)!r}")
        if self.action_bound is not None and not self.action_bound > 0:
            raise ValueError(
                f"FlashSACConfig.action_bound must be null (the whole box) or > 0, got {self.action_bound!r}"
            )
        if self.entropy_units not in ("action", "squashed"):
            raise ValueError(
                f"FlashSACConfig.entropy_units must be 'action' or 'squashed', got {self.entropy_units!r}"
            )
        modes = ("auto", "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
        if self.compile_mode not in modes:
            raise ValueError(f"FlashSACConfig.compile_mode must be one of {modes}, got {self.compile_mode!r}")


__all__ = ["FlashSACConfig"]
