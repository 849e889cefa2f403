"""Manager-based RL envs on unisim backends."""

from unilab.envs.manager_based_rl_env import EnvCfg, ManagerBasedRlEnv

__all__ = ["EnvCfg", "ManagerBasedRlEnv"]
