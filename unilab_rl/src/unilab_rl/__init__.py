"""unilab_rl: off-policy learners (SAC, FlashSAC) with a replay buffer on the learner device.

Depends on torch only. Trains on any object satisfying :class:`unilab_rl.vecenv.VecEnv`.
"""

from unilab_rl.algorithms.flashsac import FlashSAC, FlashSACConfig
from unilab_rl.algorithms.sac import SAC, SACConfig
from unilab_rl.async_runtime import AsyncOffPolicyRunner, CollectorDied
from unilab_rl.device import DeviceUnavailableError, available_devices, resolve_device
from unilab_rl.normalizer import RunningMeanStd
from unilab_rl.replay import Batch, ReplayBuffer
from unilab_rl.runner import LearnSummary, OffPolicyRunner
from unilab_rl.vecenv import Mirror, VecEnv

__version__ = "0.1.0"

__all__ = [
    "AsyncOffPolicyRunner",
    "CollectorDied",
    "Batch",
    "DeviceUnavailableError",
    "FlashSAC",
    "FlashSACConfig",
    "LearnSummary",
    "Mirror",
    "OffPolicyRunner",
    "ReplayBuffer",
    "RunningMeanStd",
    "SAC",
    "SACConfig",
    "VecEnv",
    "__version__",
    "available_devices",
    "resolve_device",
]
