"""unisim-mjstep: a MuJoCo backend that steps each world with a plain Python loop over
``mujoco.mj_step``. The slow, obviously-correct reference; an example of a third-party backend."""

from unisim_mjstep.backend import MjStepBackend

__version__ = "0.1.0"
__all__ = ["MjStepBackend", "__version__"]
