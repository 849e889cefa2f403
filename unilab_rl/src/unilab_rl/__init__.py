"""unilab_rl: off-policy learners (SAC, FlashSAC) with a replay buffer on the learner device.

Depends on torch only. Trains on any object satisfying :class:`unilab_rl.vecenv.VecEnv`.
"""

from unilab_rl.algorithms.flashsac import FlashSAC, FlashSACConfig
from unilab_rl.algorithms.sac import SAC, SACConfig
from unilab_rl.async_runtime import AsyncOffPolicyRunner, CollectorDied
from unilab_rl.device import DeviceUnavailableError, available_devices, resolve_device
from unilab_rl.learner import Learner
from unilab_rl.normalizer import RunningMeanStd
from unilab_rl.replay import Batch, ReplayBuffer
from unilab_rl.runner import LearnSummary, OffPolicyRunner, RunnerHooks, StopTraining, make_runner
from unilab_rl.runtime import RuntimeConfig
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
    "Learner",
    "Mirror",
    "OffPolicyRunner",
    "ReplayBuffer",
    "RunnerHooks",
    "RunningMeanStd",
    "RuntimeConfig",
    "SAC",
    "SACConfig",
    "StopTraining",
    "VecEnv",
    "__version__",
    "available_devices",
    "make_runner",
    "resolve_device",
]
