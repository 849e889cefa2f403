"""g1_walk_flat: the Unitree G1 tracks commanded base velocities on flat ground."""

from unilab.tasks.g1_walk_flat.config import G1WalkFlatConfig
from unilab.tasks.g1_walk_flat.env_cfg import make_env, make_env_cfg

__all__ = ["G1WalkFlatConfig", "make_env", "make_env_cfg"]
