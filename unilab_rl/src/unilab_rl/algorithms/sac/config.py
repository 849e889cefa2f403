"""Settings of plain SAC.

Defaults: the textbook SAC core (Haarnoja et al. 2018, arXiv 1801.01290 and 1812.05905), tuned
with the numbers of FastSAC (Seo et al., arXiv 2512.01996; holosoma 0.0.3 preset
``g1_29dof_fast_sac``, ``config_values/algo.py``) and UniLab's SAC on CPU MuJoCo
(``unilabsim/UniLab`` ``conf/offpolicy/algo/sac.yaml``).
A stdlib dataclass on purpose: unilab_rl depends on torch only; the CLI validates it elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass
class SACConfig:
    """Hyperparameters of :class:`unilab_rl.algorithms.sac.SAC` and its runner loop."""

    # -- Warm-up --------------------------------------------------------------------------
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
    num_envs``; keep it at 16-32, FastSAC's and UniLab SAC's, when ``num_envs`` changes)."""
    actor_update_period: int = 4
    """Actor (and temperature) updated once every this many critic updates (FastSAC: 4, i.e. 2
    actor updates per 8 critic updates; CleanRL calls it ``policy_frequency``). Counted across
    iterations."""

    # -- Returns and targets ----------------------------------------------------------------
    gamma: float = 0.97
    """Discount (FastSAC, MJP and UniLab G1 at 50 Hz control: 0.97)."""
    tau: float = 0.125
    """Polyak rate of the target critics, ``target <- (1 - tau) target + tau online``, applied
    after every critic update (FastSAC: 0.125, validated with a C51 critic and mean-Q; scalar
    min-Q critics usually take 0.005-0.05, e.g. Stable-Baselines3 0.005: retune if it diverges)."""
    critic_reduction: Literal["min", "mean"] = "min"
    """How the two Q estimates are combined in the target and the actor loss: ``"min"``
    is the textbook clipped double-Q (Fujimoto et al. 2018, arXiv 1802.09477; SAC 1812.05905),
    ``"mean"`` is FastSAC's (holosoma ``agents/fast_sac/``: no clipped double-Q, the actor uses the
    mean of the two Q values)."""

    # -- Optimizers -------------------------------------------------------------------------
    actor_lr: float = 3e-4
    """AdamW learning rate of the actor (FastSAC: 3e-4)."""
    critic_lr: float = 3e-4
    """AdamW learning rate of the critics (FastSAC: 3e-4)."""
    temperature_lr: float = 3e-4
    """Adam learning rate of the log temperature ``log_alpha`` (FastSAC: 3e-4)."""
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
    # The actor's pre-tanh log std is bounded to [-5, 0] (FastSAC); with zero-initialized heads
    # the initial log std is the midpoint (-2.5, std 0.08): a small initial sigma
    # (:class:`unilab_rl.algorithms.sac.networks.Actor`).

    # -- Entropy ----------------------------------------------------------------------------
    init_temperature: float = 1e-3
    """Initial temperature alpha (FastSAC: 1e-3); tuned automatically after towards the entropy
    target."""
    target_entropy_scale: float = 0.0
    """Target entropy is ``-target_entropy_scale * |A|`` in nats, with the log-probability of the
    action in the env's units (tanh and box Jacobians included). 1.0 is the textbook heuristic
    ``-dim(A)`` (Haarnoja et al. 2018, arXiv 1812.05905, section 5); 0.0 is FastSAC's choice
    (holosoma ``config_values/algo.py``, ``target_entropy_ratio = 0``), which keeps more exploration
    for the small initial sigma. Default 0.0, since the other defaults are FastSAC's. A negative
    scale sets a positive target: alpha then rises whenever the entropy falls below
    ``|scale| * |A|`` nats, which holds exploration up (the entropy of the uniform distribution
    over the action box is the most a target can ask; above it alpha would grow without bound,
    so the agent refuses such a target with ``ValueError``:
    :func:`unilab_rl.algorithms.sac.agent.checked_target_entropy`)."""

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
    on (what it gave on the GPU machine: docs/benchmarks.md)."""
    equivariant_actor: bool = False
    """Make the actor left/right equivariant by construction (needs ``symmetry``): its Gaussian's
    mean and log std are averaged over the observation and its mirror image
    (:class:`unilab_rl.algorithms.sac.networks.Actor`), so ``pi(M o) = M pi(o)`` exactly and no
    side is favoured. Mirrored replay rows alone do not give that: the critic learns the value
    of the current policy, asymmetric or not, on the mirrored states too, so an asymmetric policy
    (a gait that drifts one way) is still a fixed point of the update. Costs one actor pass over
    twice the rows; the exported ONNX graph holds both passes. Off by default."""

    # -- Deployed policy --------------------------------------------------------------------
    actor_ema: float = 0.0
    """Rate of an exponential moving average of the actor's parameters,
    ``average <- (1 - actor_ema) average + actor_ema actor``, taken after every actor update; 0
    turns it off. When on, the deterministic policy (play, evaluation, export,
    ``act(deterministic=True)``) is the average, while collection keeps exploring with the online
    actor. An off-policy actor keeps moving between updates; the average is the centre of where it
    has recently been (Polyak-Ruppert averaging, Polyak & Juditsky 1992, SIAM J. Control Optim.
    30(4); for deep RL policies, Nikishin et al. 2018, "Improving Stability in Deep Reinforcement
    Learning with Weight Averaging"). The average is taken per actor update, so its memory is
    about ``1 / actor_ema`` actor updates: 0.005 covers about the last 200, i.e. 100 iterations
    at 8 critic updates per iteration and an actor update every 4th, but 800 iterations at 1
    and 4 (the ``laptop`` presets), where a short run's average is still mostly its start."""

    def __post_init__(self) -> None:
        """Check value ranges.

        Raises:
            ValueError: naming the first field out of range and its value.
        """
        positive = ("buffer_size_per_env", "batch_size", "num_updates", "actor_update_period")
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"SACConfig.{name} must be >= 1, got {getattr(self, name)!r}")
        nonnegative = ("learning_starts", "weight_decay", "max_grad_norm")
        for name in nonnegative:
            if getattr(self, name) < 0:
                raise ValueError(f"SACConfig.{name} must be >= 0, got {getattr(self, name)!r}")
        for name in ("actor_lr", "critic_lr", "temperature_lr", "init_temperature", "obs_norm_eps", "obs_clip"):
            if not getattr(self, name) > 0:
                raise ValueError(f"SACConfig.{name} must be > 0, got {getattr(self, name)!r}")
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"SACConfig.gamma must be in [0, 1], got {self.gamma!r}")
        if not 0.0 < self.tau <= 1.0:
            raise ValueError(f"SACConfig.tau must be in (0, 1], got {self.tau!r}")
        if not 0.0 <= self.actor_ema <= 1.0:
            raise ValueError(f"SACConfig.actor_ema must be in [0, 1] (0: off), got {self.actor_ema!r}")
        if self.equivariant_actor and not self.symmetry:
            raise ValueError("SACConfig.equivariant_actor=true needs SACConfig.symmetry=true (the env's mirror, "
                             "and observation statistics that commute with it), got SACConfig.symmetry=false")
        if self.critic_reduction not in ("min", "mean"):
            raise ValueError(f"SACConfig.critic_reduction must be 'min' or 'mean', got {self.critic_reduction!r}")
        if len(self.adam_betas) != 2 or not all(0.0 <= b < 1.0 for b in self.adam_betas):
            raise ValueError(f"SACConfig.adam_betas must be two values in [0, 1), got {self.adam_betas!r}")
        for name in ("actor_hidden", "critic_hidden"):
            widths = getattr(self, name)
            if len(widths) == 0 or any(w < 1 for w in widths):
                raise ValueError(f"SACConfig.{name} must be a non-empty tuple of widths >= 1, got {widths!r}")


__all__ = ["SACConfig"]
