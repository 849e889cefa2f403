"""Settings of FlashSAC.

FlashSAC: Kim, Lee et al., "FlashSAC" (2026, arXiv 2604.04539), official code
``Holiday-Robot/FlashSAC`` at 87edc90 (``configs/agent/flashSAC.yaml``,
``flash_rl/agents/flashSAC/``, ``scripts/run_*.sh``). Defaults are the paper's GPU-benchmark settings, with gamma 0.97 as its
MuJoCo Playground G1/T1 runs use for 50 Hz joystick control. A stdlib dataclass on purpose:
unilab_rl depends on torch only; the CLI validates it elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass
class FlashSACConfig:
    """Hyperparameters of :class:`unilab_rl.algorithms.flashsac.FlashSAC` and its runner loop."""

    # -- Warm-up --------------------------------------------------------------------------
    learning_starts: int = 100
    """Iterations of uniform-random actions at the start; gradient updates begin once the buffer
    holds ``learning_starts * num_envs`` transitions. 100 at 1024 envs is the paper's 100 k
    minimum buffer size (``buffer_min_length``, ``scripts/run_isaaclab.sh``)."""

    # -- Replay and updates -----------------------------------------------------------------
    buffer_size_per_env: int = 10240
    """Replay capacity per env; total ``buffer_size_per_env * num_envs``: 10.5 M at 1024 envs, the
    paper's 10 M (in its ablation a 1 M buffer lost 2-5 points, 0.1 M collapsed;
    ``results/ablation_*``). Observations
    are stored twice (s and s'), so at G1 sizes (actor 99, critic 111, 29 actions) a transition
    takes about 1.8 kB: about 19 GB of learner memory at 10.5 M."""
    batch_size: int = 2048
    """Transitions per gradient update (paper: 2048; 4 k-8 k gave about the same in its
    ablation)."""
    num_updates: int = 2
    """Critic updates per iteration. The paper's sweet spot is 2 per 1024 env steps (replay ratio
    ``num_updates * batch_size / num_envs`` = 4); scale it with ``num_envs`` to keep that ratio."""
    actor_update_period: int = 2
    """The actor and temperature are updated on every ``actor_update_period``-th critic update,
    starting with the first (``configs/agent/flashSAC.yaml``: 2)."""

    # -- Returns and targets ----------------------------------------------------------------
    gamma: float = 0.97
    """Discount: 0.97 for 50 Hz joystick-style G1 (the official MuJoCo Playground G1/T1 runs,
    ``scripts/run_mujoco_playground.sh``); the IsaacLab benchmark and the authors' G1 port
    (``Holiday-Robot/rsl_rl_flashsac``, ``isaaclab_flashsac/rl_cfg.py``) use 0.99 with
    ``n_step=3``."""
    n_step: int = 1
    """Env steps folded into one stored transition (n-step returns, aggregated as transitions are
    stored: :class:`~unilab_rl.algorithms.flashsac.nstep.NStepWindow`); the critic's bootstrap is
    discounted by ``gamma ** n_step``. 1: one-step targets (the official CPU-simulator and
    MuJoCo Playground runs); 3: the IsaacLab benchmark and the authors' G1 port. Updates start
    ``n_step - 1`` iterations later, since the newest steps wait in the window."""
    tau: float = 0.01
    """EMA rate of the target critic after every critic update (paper: 0.01)."""

    # -- Critic kind -----------------------------------------------------------------------
    critic: Literal["categorical", "mlp", "trunk"] = "categorical"
    """Which twin critic the learner trains.

    * ``"categorical"`` (default, the paper's): two distributional critics on FlashSAC trunks
      (:class:`~unilab_rl.algorithms.flashsac.networks.CategoricalCritic`), cross-entropy to the
      projected soft TD target, rewards scaled by :attr:`reward_normalization`, weights projected
      onto the unit sphere (:attr:`weight_normalization`).
    * ``"mlp"``: SAC's scalar critic instead
      (:class:`~unilab_rl.algorithms.flashsac.networks.MLPCritic`): an input batch norm on the raw
      ``concat(s, a)`` (the observation normalizer, as the first layer of FlashSAC's trunk), then
      two ``Linear -> LayerNorm -> SiLU`` MLPs of widths :attr:`critic_mlp_hidden` with a linear
      scalar head each, trained on the mean squared soft TD error with clipped double Q
      (Haarnoja et al. 2018, arXiv 1812.05905; Fujimoto et al. 2018, arXiv 1802.09477;
      :func:`~unilab_rl.algorithms.flashsac.update.scalar_critic_objective`). Not part of the
      FlashSAC paper: an ablation toward :class:`unilab_rl.algorithms.sac.SAC`'s critic, with
      everything else (actor, temperature, entropy target, n-step, held noise, target rate
      :attr:`tau`, optimizers) FlashSAC's. Its Q-values are in raw reward units: rewards are
      never scaled (:attr:`reward_normalization` is ignored, ``Policy/reward_scale`` logs 1),
      and its weights are never projected (:attr:`weight_normalization` applies to the actor
      only). :attr:`num_bins`, :attr:`normalized_g_max`, :attr:`critic_num_blocks` and
      :attr:`critic_hidden_dim` are unused.
    * ``"trunk"``: FlashSAC's trunks with a scalar head each
      (:class:`~unilab_rl.algorithms.flashsac.networks.TrunkCritic`), trained as ``"mlp"`` is (raw
      rewards, the mean squared soft TD error, :attr:`reward_normalization` ignored). The trunks'
      weights are projected as the categorical critic's (:attr:`weight_normalization`); the
      scalar heads are not. Not part of the FlashSAC paper: it keeps the paper's critic network
      and drops only its categorical head and cross-entropy loss, to tell which of the two a
      difference from ``"mlp"`` comes from; unilab's g1_walk_flat recipe uses it, since the
      categorical head does not learn that task's forward commands. Uses
      :attr:`critic_hidden_dim` and :attr:`critic_num_blocks`; :attr:`num_bins`,
      :attr:`normalized_g_max`, :attr:`categorical_target` and :attr:`critic_mlp_hidden` are
      unused.

    Checkpoints record the kind; loading one into a learner of another kind raises
    ``ValueError``."""
    critic_mlp_hidden: tuple[int, ...] = (768, 384, 192)
    """Widths of each of the two Q MLPs with ``critic="mlp"``, each ``Linear -> LayerNorm ->
    SiLU`` (:attr:`unilab_rl.algorithms.sac.SACConfig.critic_hidden`'s default, FastSAC's
    768-384-192). Unused with the categorical critic."""

    # -- Actor kind -------------------------------------------------------------------------
    actor: Literal["residual", "mlp"] = "residual"
    """Which actor the learner trains.

    * ``"residual"`` (default, the paper's): the tanh-Gaussian policy on a FlashSAC trunk
      (:class:`~unilab_rl.algorithms.flashsac.networks.FlashActor`: input batch norm, inverted
      residual blocks of width :attr:`actor_hidden_dim`, weights projected onto the unit sphere).
    * ``"mlp"``: SAC's actor instead
      (:class:`~unilab_rl.algorithms.flashsac.networks.MLPActor`): an input batch norm on the raw
      observation, then ``Linear -> LayerNorm -> SiLU`` of widths :attr:`actor_mlp_hidden`,
      zero-initialized mean and log-std heads, pre-tanh log std in [-5, 0]
      (:class:`unilab_rl.algorithms.sac.SAC`'s; FastSAC, arXiv 2512.01996). Not part of the
      FlashSAC paper: an ablation toward SAC, with everything else (critic, temperature, entropy
      target, n-step, held noise, optimizers and their schedule) as set. Its weights are never
      projected (:attr:`weight_normalization` then applies to the categorical critic only);
      :attr:`actor_hidden_dim` and :attr:`actor_num_blocks` are unused.

    Checkpoints record the kind; loading one into a learner of the other kind raises
    ``ValueError``."""
    actor_mlp_hidden: tuple[int, ...] = (512, 256, 128)
    """Widths of the actor MLP with ``actor="mlp"`` (:attr:`unilab_rl.algorithms.sac.SACConfig.actor_hidden`'s
    default, FastSAC's 512-256-128). Unused with the residual actor."""

    # -- Categorical critic and reward scaling ----------------------------------------------
    num_bins: int = 101
    """Atoms of each categorical critic (paper: 101)."""
    reward_normalization: bool = True
    """Scale rewards so that discounted returns fit the support (paper: on;
    ``flash_rl/agents/utils/reward_normalization.py``): ``r / max(sqrt(Var G + eps), G_abs_max /
    normalized_g_max)`` with ``G`` the running discounted return per env. Categorical critic
    only: with ``critic="mlp"`` or ``"trunk"`` it is ignored and rewards stay raw."""
    normalized_g_max: float = 5.0
    """Largest absolute scaled return the scaling aims for, and so the half-width of the critic's
    support, ``linspace(-normalized_g_max, normalized_g_max, num_bins)`` (paper:
    ``normalized_G_max`` = 5 and ``linspace(-5, 5)``)."""
    categorical_target: Literal["projected", "hl_gauss"] = "projected"
    """What the categorical critic's cross-entropy is taken against.

    * ``"projected"`` (default, the paper's): the target critic's distribution at ``(s', a')``,
      shifted by the soft Bellman backup and projected onto the atoms (C51, Bellemare et al. 2017,
      arXiv 1707.06887; :func:`~unilab_rl.algorithms.flashsac.update.categorical_td_target`).
    * ``"hl_gauss"``: a Gaussian histogram of standard deviation :attr:`hl_gauss_sigma` bin widths
      around the scalar soft TD target ``r + gamma^n (1 - terminated) (E[Z'] - alpha log pi')``
      (HL-Gauss: Imani & White 2018, ICML; Farebrother et al. 2024, arXiv 2403.03950;
      :func:`~unilab_rl.algorithms.flashsac.update.hl_gauss_target`). The critic learns the
      expected return as a classification, not the return's distribution. Not part of the
      FlashSAC paper.

    Unused with ``critic="mlp"`` or ``"trunk"``."""
    hl_gauss_sigma: float = 0.75
    """Standard deviation of the HL-Gauss target in bin widths (Farebrother et al. 2024's
    recommendation: 0.75). Used only with ``categorical_target="hl_gauss"``."""

    # -- Optimizers -------------------------------------------------------------------------
    lr: float = 3e-4
    """Peak Adam learning rate of the actor, critic and temperature (paper: 3e-4)."""
    lr_end: float = 1.5e-4
    """Learning rate at the end of the run; cosine decay from :attr:`lr` over all the run's
    gradient updates, no warmup (paper: 1.5e-4; its warmup is 1e-6 of the run,
    ``flash_rl/agents/utils/scheduler.py``).
    Set equal to :attr:`lr` for a constant rate."""
    weight_normalization: bool = True
    """Project every linear weight row onto the unit sphere (and norm-layer scales onto radius
    sqrt(d)) after each optimizer step (paper: always; off only to ablate). No weight decay and no
    gradient clipping are used: the projection bounds the norms
    (``flash_rl/agents/flashSAC/update.py``)."""

    # -- Networks ---------------------------------------------------------------------------
    actor_num_blocks: int = 2
    """Inverted residual blocks of the actor (paper: 2)."""
    actor_hidden_dim: int = 128
    """Actor width h (paper: 128)."""
    critic_num_blocks: int = 2
    """Inverted residual blocks of each critic (paper: 2)."""
    critic_hidden_dim: int = 256
    """Critic width h (paper: 256; 512 helped on rough terrain at higher cost)."""
    # Fixed by the paper and kept as constants in :mod:`unilab_rl.algorithms.flashsac.networks`:
    # block expansion 4 (h -> 4h -> h), batch-norm momentum 0.01, pre-tanh log std in [-10, 2].

    # -- Entropy and exploration -------------------------------------------------------------
    init_temperature: float = 0.01
    """Initial temperature alpha (paper: 0.01); tuned automatically after."""
    temperature_lr_scale: float = 1.0
    """The temperature's learning rate as a multiple of the actor's (paper: 1). Adam moves
    ``log alpha`` by about one learning rate per actor update, so over 6,000 iterations of the
    default schedule alpha can fall by at most about e^1.6; the paper's 50 M-step runs have about
    8 x more updates. Raising it lets alpha follow the target within a short run
    (docs/flashsac.md)."""
    target_sigma: float = 0.15
    """Unified entropy target: the entropy of a Gaussian with this std in every action dimension,
    ``0.5 |A| log(2 pi e sigma^2)`` (paper: 0.15, -13.87 nats for 29 DoF), in the units of
    :attr:`entropy_units`."""
    entropy_units: Literal["action", "squashed"] = "action"
    """Units of the policy's log-probability, and so of its entropy, the target and the soft
    return's ``-alpha log pi``.

    * ``"action"`` (default): the env's action units. The log-probability includes the
      Jacobian of the squash onto the box, ``-sum_i log(half_range_i)``, so sigma is in action
      units. The authors' G1 port (``Holiday-Robot/rsl_rl_flashsac`` at 58ea910) describes this
      choice ("std temp_target_sigma per action dimension, fixed in PHYSICAL action space",
      ``flash_sac.py``; ``rl_cfg.py``) but its code does not apply it: its policy head returns
      the log-density of ``tanh(u)`` (``modules/flash_sac_layers.py``, ``NormalTanhPolicy.forward``)
      and the ``log_action_scale`` it stores is never read, so its entropy is in squashed units.
    * ``"squashed"``: the ``[-1, 1]`` units of ``tanh(u)``, so sigma is in half-widths of the box.
      What both public implementations compute: the original code (``flash_rl``), whose box is
      the env's ``[-1, 1]`` range, and the G1 port, whose box is +-1 (velocity) or +-3 (tracking)
      action units. On a +-1 box the two units are the same. On our joint-limit box (4.8 action
      units per side, geometric mean, for the G1) 0.15 is about 0.7 action units.

    The temperature's equilibrium is the same in both units up to the choice of sigma's unit. The
    soft return differs: in action units every step adds a constant ``alpha sum_i log(half_range_i)``
    (45.6 alpha for the G1's joint-limit box, 31.9 alpha on +-3). The comparison with the official
    code, and what each choice gave on the G1: docs/flashsac.md."""
    action_bound: float | None = None
    """Squash into the env's action box intersected with ``[-action_bound, action_bound]`` (action
    units) instead of the whole box. ``None``: the whole box, which for the G1 is the joint limits,
    0.6-21.7 action units per side (geometric mean 4.8). The authors' G1 port
    (``Holiday-Robot/rsl_rl_flashsac``, ``isaaclab_flashsac/rl_cfg.py``) uses this choice,
    ``action_bound="scalar"``, as its runner default: +-1 for the velocity tasks, +-3 for G1
    motion tracking (``G1FlatTrackingFlashSACCfg``); only its DreamWaQ tasks squash onto the joint
    limits. One G1 action unit is 0.075-0.55 rad (``0.25 effort / kp``), so walking knees need
    about 3. Neither G1 owner YAML sets it (the whole box; docs/flashsac.md says what +-3 gave on
    tracking). The box shrinks only the policy's actions: the env's own bounds and the exported
    metadata stay as they are."""
    noise_repeat: bool = True
    """Hold the exploration noise for a Zeta-distributed number of env steps (paper: on; off cost
    about 3-7 points on Isaac G1 in its ablation). Off: fresh noise every step."""
    # The repeat length k is drawn from a truncated Zeta law P(k) ~ k^-2 on {1, ..., 16} (paper;
    # constants of :mod:`unilab_rl.algorithms.flashsac.exploration`).

    # -- Symmetry ---------------------------------------------------------------------------
    symmetry: bool = False
    """Left/right symmetry augmentation, as :attr:`unilab_rl.algorithms.sac.SACConfig.symmetry`:
    the second half of each sampled batch is replaced by its mirror image (``env.mirror``). The
    raw observations are mirrored before the networks' input batch norms, whose batch statistics
    then come from a half-mirrored batch. Not part of the FlashSAC paper; default off."""
    equivariant_actor: bool = False
    """Make the actor left/right equivariant by construction (needs ``symmetry``), as
    :attr:`unilab_rl.algorithms.sac.SACConfig.equivariant_actor`: the Gaussian's mean and log std
    are averaged over the observation and its mirror image, both run through the trunk as one
    batch (:class:`unilab_rl.algorithms.flashsac.networks.FlashActor`), so ``pi(M o) = M pi(o)``
    exactly, with batch or running statistics alike. Costs one actor pass over twice the rows.
    Not part of the FlashSAC paper; default off."""

    # -- Deployed policy --------------------------------------------------------------------
    actor_ema: float = 0.0
    """Rate of a moving average of the actor, taken after every actor update (its parameters and
    its batch norms' running statistics), as :attr:`unilab_rl.algorithms.sac.SACConfig.actor_ema`:
    when > 0 the deterministic policy (play, evaluation, export) is the average and collection
    keeps the online actor; 0 is off. Not part of the FlashSAC paper; default off."""

    def __post_init__(self) -> None:
        """Check value ranges.

        Raises:
            ValueError: naming the first field out of range (or ``critic`` not ``"categorical"``
                or ``"mlp"``, ``actor`` not ``"residual"`` or ``"mlp"``, ``categorical_target`` not
                ``"projected"`` or ``"hl_gauss"``) and its value.
        """
        at_least_one = ("buffer_size_per_env", "batch_size", "num_updates", "actor_update_period",
                        "actor_num_blocks", "actor_hidden_dim", "critic_num_blocks", "critic_hidden_dim")
        for name in at_least_one:
            if getattr(self, name) < 1:
                raise ValueError(f"FlashSACConfig.{name} must be >= 1, got {getattr(self, name)!r}")
        if self.learning_starts < 0:
            raise ValueError(f"FlashSACConfig.learning_starts must be >= 0, got {self.learning_starts!r}")
        if self.n_step < 1:
            raise ValueError(f"FlashSACConfig.n_step must be >= 1, got {self.n_step!r}")
        if self.n_step > 1 and self.learning_starts < self.n_step:
            raise ValueError(
                f"FlashSACConfig.learning_starts={self.learning_starts!r} must be >= n_step={self.n_step!r}: "
                "the first stored transition needs n_step env steps"
            )
        if self.num_bins < 2:
            raise ValueError(f"FlashSACConfig.num_bins must be >= 2, got {self.num_bins!r}")
        for name in ("lr", "lr_end", "init_temperature", "temperature_lr_scale", "target_sigma", "normalized_g_max",
                     "hl_gauss_sigma"):
            if not getattr(self, name) > 0:
                raise ValueError(f"FlashSACConfig.{name} must be > 0, got {getattr(self, name)!r}")
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"FlashSACConfig.gamma must be in [0, 1], got {self.gamma!r}")
        if not 0.0 < self.tau <= 1.0:
            raise ValueError(f"FlashSACConfig.tau must be in (0, 1], got {self.tau!r}")
        if not 0.0 <= self.actor_ema <= 1.0:
            raise ValueError(f"FlashSACConfig.actor_ema must be in [0, 1] (0: off), got {self.actor_ema!r}")
        if self.action_bound is not None and not self.action_bound > 0:
            raise ValueError(
                f"FlashSACConfig.action_bound must be null (the whole box) or > 0, got {self.action_bound!r}"
            )
        if self.equivariant_actor and not self.symmetry:
            raise ValueError("FlashSACConfig.equivariant_actor=true needs FlashSACConfig.symmetry=true (the env's "
                             "mirror), got FlashSACConfig.symmetry=false")
        if self.critic not in ("categorical", "mlp", "trunk"):
            raise ValueError(f"FlashSACConfig.critic must be 'categorical', 'mlp' or 'trunk', got {self.critic!r}")
        if self.categorical_target not in ("projected", "hl_gauss"):
            raise ValueError(
                f"FlashSACConfig.categorical_target must be 'projected' or 'hl_gauss', got {self.categorical_target!r}"
            )
        if self.actor not in ("residual", "mlp"):
            raise ValueError(f"FlashSACConfig.actor must be 'residual' or 'mlp', got {self.actor!r}")
        for name in ("critic_mlp_hidden", "actor_mlp_hidden"):
            widths = getattr(self, name)
            if len(widths) == 0 or any(w < 1 for w in widths):
                raise ValueError(f"FlashSACConfig.{name} must be a non-empty tuple of widths >= 1, got {widths!r}")
        if self.entropy_units not in ("action", "squashed"):
            raise ValueError(
                f"FlashSACConfig.entropy_units must be 'action' or 'squashed', got {self.entropy_units!r}"
            )


__all__ = ["FlashSACConfig"]
