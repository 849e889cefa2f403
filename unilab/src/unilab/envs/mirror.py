"""Left/right mirror of a bilateral robot's observations and actions (symmetry augmentation).

The mirror reflects the whole scene through a vertical plane (world ``y -> -y``). A state and its
mirror image are equally valid states of a left/right symmetric robot, and the task's rewards are
the same for both, so a learner may train on mirrored transitions as well (FastSAC and holosoma
turn this on for the G1). Each observation term says how it maps with a :class:`MirrorRule` on
its :class:`~unilab.envs.managers.ObsTerm` (``mirror=``); :func:`observation_mirror` assembles
the rules, in the order the observation manager concatenates the terms, into one ``(perm, sign)``
pair per group, with ``mirrored = x[..., perm] * sign``. A term without a rule cannot be mirrored
and makes the whole mirror fail with an error naming it (a new term is never mirrored by guess).

Conventions (vectors in the base frame or the world frame, both reflected the same way):

- polar vectors (linear velocity, positions, forces, gravity): ``(x, -y, z)``;
- axial vectors (angular velocity): ``(-x, y, -z)``;
- a base velocity command ``(vx, vy, yaw_rate)``: ``(vx, -vy, -yaw_rate)``;
- joints (:func:`joint_mirror`): ``left_*`` and ``right_*`` swap; a joint whose name ends in
  ``_roll`` or ``_yaw`` (before ``_joint``) changes sign, waist roll and yaw included; pitch
  joints, knees and elbows keep theirs. This holds for models whose left and right joint axes are
  mirror images with the same axis vector (the G1: x for roll, y for pitch, z for yaw).
- per-side quantities (feet): the entries of ``left_*`` and ``right_*`` names swap, and each
  entry's components take the given signs (e.g. a force ``(1, -1, 1)``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Sequence

import torch

if TYPE_CHECKING:
    from unilab.envs.managers import ObsTerm

_SIDES = {"left": "right", "right": "left"}


def mirror_name(name: str) -> str:
    """The name of the mirror-image part: ``left`` and ``right`` tokens (between underscores)
    swap; a name without one is its own mirror (``waist_yaw_joint``)."""
    return "_".join(_SIDES.get(token, token) for token in name.split("_"))


def _sided_perm(names: Sequence[str], what: str) -> list[int]:
    """Index of each name's mirror image in ``names``.

    Raises:
        ValueError: a name's mirror image is not in ``names``.
    """
    index = {n: i for i, n in enumerate(names)}
    perm = []
    for n in names:
        m = mirror_name(n)
        if m not in index:
            raise ValueError(f"{what}: {n!r} has no mirror image {m!r} among {list(names)}")
        perm.append(index[m])
    return perm


def joint_sign(name: str) -> float:
    """-1.0 for a roll or yaw joint (name ending ``_roll`` or ``_yaw``, with or without
    ``_joint``), else +1.0 (pitch, knee, elbow)."""
    base = name[: -len("_joint")] if name.endswith("_joint") else name
    return -1.0 if base.endswith(("_roll", "_yaw")) else 1.0


def joint_mirror(joint_names: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """Mirror of a per-joint vector (positions, velocities, actions) from the joint names.

    Args:
        joint_names: the J joints in vector order.

    Returns:
        (perm, sign): (J,) int64 and (J,) float32; ``mirrored = x[..., perm] * sign``.

    Raises:
        ValueError: a ``left_``/``right_`` joint has no counterpart on the other side.
    """
    perm = _sided_perm(joint_names, "joint mirror")
    sign = [joint_sign(joint_names[p]) for p in perm]
    return torch.tensor(perm, dtype=torch.long), torch.tensor(sign, dtype=torch.float32)


@dataclass(frozen=True)
class MirrorRule:
    """How one observation term maps to its mirror image. Build it with the class methods.

    Attributes:
        kind: ``"signs"`` (fixed width, no permutation), ``"invariant"`` (any width, unchanged),
            ``"joints"`` (one column per controlled joint, :func:`joint_mirror`) or ``"sided"``
            (one block of ``len(signs)`` columns per name in ``names``).
        signs: per-column signs (``"signs"``) or per-component signs of each block (``"sided"``).
        names: the block names of a ``"sided"`` term, in column order.
    """

    kind: Literal["signs", "invariant", "joints", "sided"]
    signs: tuple[float, ...] = ()
    names: tuple[str, ...] = ()

    @classmethod
    def fixed(cls, *signs: float) -> "MirrorRule":
        """A term of ``len(signs)`` columns whose column ``i`` is multiplied by ``signs[i]``."""
        return cls("signs", tuple(float(s) for s in signs))

    @classmethod
    def invariant(cls) -> "MirrorRule":
        """A term that is its own mirror image (e.g. a height or a speed)."""
        return cls("invariant")

    @classmethod
    def joints(cls) -> "MirrorRule":
        """A per-joint term in action order (joint positions, velocities, last actions)."""
        return cls("joints")

    @classmethod
    def sided(cls, names: Sequence[str], signs: Sequence[float] = (1.0,)) -> "MirrorRule":
        """A term of one block of ``len(signs)`` columns per name (e.g. per foot, ``names`` the
        foot sensors or bodies in column order): blocks of mirror-image names swap, and the
        components of every block take ``signs``."""
        return cls("sided", tuple(float(s) for s in signs), tuple(names))

    def build(self, width: int, joint_names: Sequence[str], what: str) -> tuple[torch.Tensor, torch.Tensor]:
        """(perm, sign) of this term: (width,) int64 and (width,) float32, term-local indices.

        Args:
            width: the term's column count (as the observation manager measured it).
            joint_names: the env's controlled joints, in action order.
            what: the term's description for error messages.

        Raises:
            ValueError: the rule does not fit ``width`` or the names do not pair up.
        """
        if self.kind == "invariant":
            return torch.arange(width), torch.ones(width)
        if self.kind == "signs":
            if len(self.signs) != width:
                raise ValueError(f"{what}: mirror rule has {len(self.signs)} signs for {width} columns")
            return torch.arange(width), torch.tensor(self.signs, dtype=torch.float32)
        if self.kind == "joints":
            if len(joint_names) != width:
                raise ValueError(f"{what}: per-joint mirror rule for {len(joint_names)} joints, term has {width} columns")
            return joint_mirror(joint_names)
        if self.kind == "sided":
            k = len(self.signs)
            if k == 0 or len(self.names) * k != width:
                raise ValueError(f"{what}: mirror rule of {len(self.names)} sides x {k} components for {width} columns")
            block = _sided_perm(self.names, what)
            perm = [block[i] * k + c for i in range(len(self.names)) for c in range(k)]
            return torch.tensor(perm, dtype=torch.long), torch.tensor(self.signs * len(self.names), dtype=torch.float32)
        raise ValueError(f"{what}: unknown mirror rule kind {self.kind!r}")


VECTOR = MirrorRule.fixed(1.0, -1.0, 1.0)
"""A polar 3-vector (linear velocity, position, force, gravity direction): ``(x, -y, z)``."""
AXIAL_VECTOR = MirrorRule.fixed(-1.0, 1.0, -1.0)
"""An axial 3-vector (angular velocity, angular momentum): ``(-x, y, -z)``."""
VELOCITY_COMMAND = MirrorRule.fixed(1.0, -1.0, -1.0)
"""A base velocity command ``(vx, vy, yaw_rate)``: ``(vx, -vy, -yaw_rate)``."""


def observation_mirror(
    groups: dict[str, dict[str, "ObsTerm"]],
    layout: dict[str, list[tuple[str, int, int]]],
    joint_names: Sequence[str],
) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """One ``(perm, sign)`` per observation group from the terms' :class:`MirrorRule`.

    Args:
        groups: group -> term name -> ObsTerm (``EnvCfg.observations``).
        layout: group -> [(term name, start, stop)] in concatenation order
            (:attr:`ObservationManager.layout <unilab.envs.managers.ObservationManager.layout>`).
        joint_names: the controlled joints, in action order.

    Returns:
        group -> (perm (d,) int64, sign (d,) float32) over the group's d columns.

    Raises:
        ValueError: a term has no mirror rule, or its rule does not fit; naming group and term.
    """
    out = {}
    for group, columns in layout.items():
        perms, signs = [], []
        for name, start, stop in columns:
            what = f"observation term {name!r} of group {group!r}"
            rule = groups[group][name].mirror
            if rule is None:
                raise ValueError(
                    f"{what} has no mirror rule (ObsTerm.mirror), so the observations cannot be mirrored; "
                    f"give it one (unilab.envs.mirror.MirrorRule)"
                )
            perm, sign = rule.build(stop - start, joint_names, what)
            perms.append(perm + start)
            signs.append(sign)
        out[group] = (torch.cat(perms) if perms else torch.zeros(0, dtype=torch.long),
                      torch.cat(signs) if signs else torch.zeros(0))
    return out


def check_symmetric_joint_setup(
    joint_names: Sequence[str],
    default_pos: torch.Tensor,
    action_scale: torch.Tensor,
    action_low: torch.Tensor,
    action_high: torch.Tensor,
    atol: float = 1e-5,
) -> None:
    """Check that mirroring actions (offsets from the default pose, in units of the action scale)
    and joint positions relative to the default pose is consistent: the default pose is its own
    mirror image, mirror-image joints share their action scale, and the action box maps onto
    itself.

    Args:
        joint_names: J joints in action order.
        default_pos, action_scale, action_low, action_high: (J,) float.
        atol: absolute tolerance, rad (or action units).

    Raises:
        ValueError: naming the first joint that breaks one of these.
    """
    perm, sign = joint_mirror(joint_names)
    checks = (
        ("default pose", default_pos, default_pos[perm] * sign),
        ("action scale", action_scale, action_scale[perm]),
        ("action bounds", action_low, torch.where(sign > 0, action_low[perm], -action_high[perm])),
        ("action bounds", action_high, torch.where(sign > 0, action_high[perm], -action_low[perm])),
    )
    for what, value, mirrored in checks:
        bad = ((value.cpu().float() - mirrored.cpu().float()).abs() > atol).nonzero().flatten()
        if len(bad):
            j = int(bad[0])
            raise ValueError(
                f"the {what} is not left/right symmetric at joint {joint_names[j]!r} "
                f"({float(value[j]):.6g} vs {float(mirrored[j]):.6g} from {joint_names[int(perm[j])]!r}), "
                f"so actions and joint observations cannot be mirrored"
            )


__all__ = [
    "AXIAL_VECTOR",
    "MirrorRule",
    "VECTOR",
    "VELOCITY_COMMAND",
    "check_symmetric_joint_setup",
    "joint_mirror",
    "joint_sign",
    "mirror_name",
    "observation_mirror",
]
