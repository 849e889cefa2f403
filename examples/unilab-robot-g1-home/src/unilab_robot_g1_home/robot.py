"""``g1_home``: the built-in G1 with another default pose and stiffer drives.

- Default pose: the G1's ``home`` keyframe (knees 0.3 rad, elbows 1.28 rad, pelvis at
  0.783675 m), then ``knees_bent`` as a second keyframe.
- Drives: the G1 recipe (kp = I*omega^2, kd = 2*zeta*I*omega with I the joint armature, zeta 2;
  mjlab 1.6.0 ``g1_constants.py``) at a natural frequency of 12 Hz instead of 10 Hz: kp x1.44,
  kd x1.2. The action scale 0.25 * effort / kp follows from them.

Everything else (joints, bodies, feet, IMU, the model) is the built-in G1's.
"""

from __future__ import annotations

import dataclasses
import math

from unilab.robots import JointDrive
from unilab.robots.g1 import G1

NATURAL_FREQUENCY_HZ = 12.0
DAMPING_RATIO = 2.0


def _drive(base: JointDrive) -> JointDrive:
    omega = 2.0 * math.pi * NATURAL_FREQUENCY_HZ
    return dataclasses.replace(base, kp=base.armature * omega**2, kd=2.0 * DAMPING_RATIO * base.armature * omega)


G1_HOME = dataclasses.replace(
    G1,
    name="g1_home",
    keyframes={"home": G1.keyframes["home"], "knees_bent": G1.keyframes["knees_bent"]},
    drives={j: _drive(d) for j, d in G1.drives.items()},
    description="G1 with the 'home' default pose and 12 Hz drives (example plugin)",
)
