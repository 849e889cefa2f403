"""FlashSAC (arXiv 2604.04539): SAC with normalized residual networks and categorical critics
(see :mod:`.config` for every setting and its source)."""

from unilab_rl.algorithms.flashsac.agent import FlashSAC, make
from unilab_rl.algorithms.flashsac.config import FlashSACConfig
from unilab_rl.algorithms.flashsac.networks import CategoricalCritic, DeterministicPolicy, FlashActor

__all__ = ["CategoricalCritic", "DeterministicPolicy", "FlashActor", "FlashSAC", "FlashSACConfig", "make"]
