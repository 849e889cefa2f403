"""Soft Actor-Critic: textbook core with FastSAC's scale settings (see :mod:`.config`)."""

from unilab_rl.algorithms.sac.agent import SAC, make
from unilab_rl.algorithms.sac.config import SACConfig
from unilab_rl.algorithms.sac.networks import Actor, Critic, DeterministicPolicy

__all__ = ["SAC", "Actor", "Critic", "DeterministicPolicy", "SACConfig", "make"]
