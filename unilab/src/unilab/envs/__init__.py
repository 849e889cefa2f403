"""Manager-based RL envs on unisim backends."""

from unilab.envs.contact import ContactSensor, ContactSensorCfg, add_contact_sensors
from unilab.envs.manager_based_rl_env import EnvCfg, ManagerBasedRlEnv

__all__ = ["ContactSensor", "ContactSensorCfg", "EnvCfg", "ManagerBasedRlEnv", "add_contact_sensors"]
