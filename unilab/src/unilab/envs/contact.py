"""Contact sensing through MuJoCo ``contact`` sensors, read with ``SimBackend.sensor``.

The backend contract has no contact-pair query; it does not need one. MuJoCo (>= 3.2) has a
``contact`` sensor that matches contacts between two sets of geoms (a body, a subtree or a geom
on each side) and reduces them to a count and a force. The task adds these sensors to the scene
MJCF (:func:`add_contact_sensors`) and the env reads them like any other sensor, so every
backend that runs the MJCF supports them, with no per-contact Python loop: MuJoCo evaluates them
in C inside the physics step (``mj_sensorAcc``).

What a slot reports (one MuJoCo sensor per primary subtree, ``data="found force"``, ``num=1``):
``found``, the number of matching contacts, and a force, N, reduced as configured:

- ``"netforce"``: the vector sum of the matching contact forces, world frame. On flat ground a
  standing foot reads ``f_z`` of about minus its weight share (MuJoCo's sign convention).
- ``"maxforce"``: the force of the strongest matching contact, contact frame (normal first);
  its norm is what a threshold compares.

Timing: contact sensors are acceleration-stage sensors, so after an env step they describe the
last physics substep (see :mod:`unisim.backends.mujoco`); after a reset, the reset state.

Source: mjlab ``ContactSensorCfg`` (``mjlab/sensor/contact_sensor.py``; G1 ``feet_ground_contact``
and ``self_collision`` in ``tasks/velocity/config/g1/env_cfgs.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import mujoco
import torch

if TYPE_CHECKING:
    from unilab.envs.manager_based_rl_env import ManagerBasedRlEnv

_FOUND_AND_FORCE = (1 << int(mujoco.mjtConDataField.mjCONDATA_FOUND)) | (
    1 << int(mujoco.mjtConDataField.mjCONDATA_FORCE)
)
_REDUCE = {"mindist": 1, "maxforce": 2, "netforce": 3}  # MuJoCo's contact-sensor reduce codes


@dataclass(frozen=True)
class ContactSensorCfg:
    """Contacts between each primary subtree and one secondary set; one slot per primary.

    Attributes:
        primary_subtrees: root bodies of the primary subtrees, one slot each (e.g. the two
            ankle-roll links for the feet).
        secondary_body: a body whose own geoms are the other side (``"world"``: the floor and any
            other static geom); or None.
        secondary_subtree: a subtree root as the other side (``"pelvis"`` with primary
            ``("pelvis",)`` matches every robot-robot contact: self-collisions); or None.
        reduce: ``"netforce"`` or ``"maxforce"`` (see the module docstring).
        track_air_time: keep per-slot air and contact timers (feet).
    """

    primary_subtrees: tuple[str, ...]
    secondary_body: str | None = None
    secondary_subtree: str | None = None
    reduce: Literal["netforce", "maxforce"] = "netforce"
    track_air_time: bool = False

    def __post_init__(self) -> None:
        if (self.secondary_body is None) == (self.secondary_subtree is None):
            raise ValueError("ContactSensorCfg needs exactly one of secondary_body, secondary_subtree")
        if self.reduce not in ("netforce", "maxforce"):
            raise ValueError(f"reduce must be 'netforce' or 'maxforce', got {self.reduce!r}")

    def mujoco_names(self, name: str) -> tuple[str, ...]:
        """Names of the MuJoCo sensors of sensor ``name``, one per slot: ``<name>/<primary>``."""
        return tuple(f"{name}/{body}" for body in self.primary_subtrees)


def add_contact_sensors(spec: mujoco.MjSpec, sensors: dict[str, ContactSensorCfg]) -> None:
    """Add one MuJoCo ``contact`` sensor per slot of each sensor in ``sensors`` to ``spec``.

    Each is ``data="found force" reduce=<reduce> num="1"``, 4 floats: found, force (3).

    Raises:
        ValueError: a named body is not in ``spec``.
    """
    known = {b.name for b in spec.bodies} | {"world"}
    for name, cfg in sensors.items():
        other = cfg.secondary_body if cfg.secondary_body is not None else cfg.secondary_subtree
        missing = [b for b in (*cfg.primary_subtrees, other) if b not in known]
        if missing:
            raise ValueError(f"contact sensor {name!r}: bodies {missing} are not in the model")
        for body, sensor_name in zip(cfg.primary_subtrees, cfg.mujoco_names(name)):
            s = spec.add_sensor()
            s.name = sensor_name
            s.type = mujoco.mjtSensor.mjSENS_CONTACT
            s.objtype = mujoco.mjtObj.mjOBJ_XBODY  # subtree
            s.objname = body
            if cfg.secondary_body is not None:
                s.reftype, s.refname = mujoco.mjtObj.mjOBJ_BODY, cfg.secondary_body
            else:
                s.reftype, s.refname = mujoco.mjtObj.mjOBJ_XBODY, cfg.secondary_subtree
            s.intprm = [_FOUND_AND_FORCE, _REDUCE[cfg.reduce], 1]


class ContactSensor:
    """Batched view of one :class:`ContactSensorCfg` on a running env, refreshed every env step.

    Attributes (float32 on the env device unless stated; S = number of slots):
        found: (N, S) number of matching contacts.
        force: (N, S, 3) reduced contact force, N (frame per ``reduce``).
        in_contact: (N, S) bool, ``found > 0``.
        current_air_time: (N, S) s since the slot last touched (0 while in contact).
        current_contact_time: (N, S) s since the slot last left contact (0 while in the air).
        last_air_time: (N, S) length of the slot's last completed flight, s.
        The three timers exist only with ``track_air_time``; they advance by the env step dt
        (mjlab ``ContactSensor`` with ``track_air_time``).
    """

    def __init__(self, env: "ManagerBasedRlEnv", name: str, cfg: ContactSensorCfg) -> None:
        self.env = env
        self.name = name
        self.cfg = cfg
        self._names = cfg.mujoco_names(name)
        for n in self._names:
            if n not in env.backend.sensor_names:
                raise KeyError(
                    f"contact sensor {name!r}: the scene lacks MuJoCo sensor {n!r}; "
                    "build the MJCF with unilab.envs.contact.add_contact_sensors"
                )
        # the slots' (found, force xyz) as one (N, S, 4) view when their MuJoCo sensors are
        # consecutive in sensordata (add_contact_sensors adds them so), else per-slot reads
        self._block = None
        first = env.backend.sensor(self._names[0])
        views = [env.backend.sensor(n) for n in self._names]
        if first.stride(1) == 1 and all(v.shape[1] == 4 for v in views) and all(
            v.data_ptr() == first.data_ptr() + 4 * i * first.element_size()
            for i, v in enumerate(views)
        ):
            self._block = first.as_strided(
                (first.shape[0], len(views), 4), (first.stride(0), 4 * first.stride(1), first.stride(1))
            )
        num, s = env.num_envs, len(self._names)
        self.found = torch.zeros(num, s, device=env.device)
        self.force = torch.zeros(num, s, 3, device=env.device)
        self.in_contact = torch.zeros(num, s, dtype=torch.bool, device=env.device)
        if cfg.track_air_time:
            self.current_air_time = torch.zeros(num, s, device=env.device)
            self.current_contact_time = torch.zeros(num, s, device=env.device)
            self.last_air_time = torch.zeros(num, s, device=env.device)
        self.refresh()

    @property
    def num_slots(self) -> int:
        return len(self._names)

    def refresh(self) -> None:
        """Re-read found and force from the backend (no timer update)."""
        if self._block is not None and self._block.data_ptr() == self.env.backend.sensor(
            self._names[0]
        ).data_ptr():
            block = self._block  # (N, S, 4): found, force xyz
            self.found.copy_(block[:, :, 0])
            self.force.copy_(block[:, :, 1:4])
            torch.gt(self.found, 0.0, out=self.in_contact)
            return
        for i, n in enumerate(self._names):
            data = self.env.backend.sensor(n)  # (N, 4): found, force xyz
            self.found[:, i] = data[:, 0]
            self.force[:, i] = data[:, 1:4]
        torch.gt(self.found, 0.0, out=self.in_contact)

    def update(self, dt: float) -> None:
        """Refresh after a physics step and advance the timers by ``dt`` s."""
        self.refresh()
        if not self.cfg.track_air_time:
            return
        landed = self.in_contact & (self.current_air_time > 0.0)
        self.last_air_time = torch.where(landed, self.current_air_time, self.last_air_time)
        # zero the air timers of slots in contact and the contact timers of slots in the air
        self.current_air_time.add_(dt).masked_fill_(self.in_contact, 0.0)
        self.current_contact_time.add_(dt).masked_fill_(~self.in_contact, 0.0)

    def first_contact(self, dt: float) -> torch.Tensor:
        """(N, S) bool: slots that touched down within the last ``dt`` s."""
        return (self.current_contact_time > 0.0) & (self.current_contact_time < dt + 1.0e-8)

    def reset(self, env_ids: torch.Tensor) -> None:
        """Zero the timers of ``env_ids`` and re-read the (reset) contacts."""
        if self.cfg.track_air_time:
            self.current_air_time[env_ids] = 0.0
            self.current_contact_time[env_ids] = 0.0
            self.last_air_time[env_ids] = 0.0
        self.refresh()


__all__ = ["ContactSensor", "ContactSensorCfg", "add_contact_sensors"]
