"""Can the tasks use this robot? :func:`check_robot` answers for a robot plugin's author.

Run it from the plugin's tests (``examples/unilab-robot-g1-home/tests``)::

    from unilab.robots.conformance import check_robot
    check_robot("my_robot")            # raises RobotConformanceError listing every failure

Checks, each named in the result:

1. ``description``: :meth:`RobotDescription.problems` is empty (drives for every joint, positive
   gains, keyframes naming known joints, an involutive mirror map, an absolute model path).
2. ``mirror``: the description's mirror map equals the name-based one the env mirrors with
   (:func:`unilab.envs.mirror.joint_mirror`; left/right tokens swap, roll and yaw flip).
3. ``scene``: the task scene builds with ``robot.actuators=project`` (joints, bodies, IMU body and
   foot collision geoms found by name; one servo per joint with the description's gains).
4. ``default_pose``: keyframe 0 is inside the joint ranges, its own mirror image, and stands on the
   floor: the lowest foot collision point within [-0.01, 0.05] m of the floor.
5. ``physics``: 1 s from keyframe 0 holding its targets stays finite, with no MuJoCo warning
   (e.g. a diverged solve, too many contacts).
6. ``task:<name>``: each task in ``tasks`` builds its env on the mujoco backend with the robot
   (default task settings, domain randomization included), resets, steps random actions with
   finite observations and rewards, and builds its left/right mirror.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import mujoco
import numpy as np

from unilab.robots.description import RobotDescription, name_mirror
from unilab.robots.scene import FOOT_SITES, RobotScene, _collision_geoms, build_scene


class RobotConformanceError(AssertionError):
    """A robot that fails :func:`check_robot`; the message lists every failed check, one a line."""


@dataclass
class ConformanceResult:
    """Outcome of :func:`check_robot`.

    Attributes:
        robot: the description's name.
        passed: names of the checks that passed, in order.
        failed: check name -> reason (one line), in order.
    """

    robot: str
    passed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failed

    def __str__(self) -> str:
        lines = [f"robot {self.robot!r}: {len(self.passed)} checks passed, {len(self.failed)} failed"]
        lines += [f"  FAIL {name}: {why}" for name, why in self.failed.items()]
        return "\n".join(lines)


def _check_default_pose(scene: RobotScene, model: mujoco.MjModel) -> None:
    robot = scene.robot
    pose = robot.default_pose
    for j in robot.joint_names:
        lo, hi = model.jnt_range[model.joint(j).id]
        q = pose.joint_pos.get(j, 0.0)
        if not lo <= q <= hi:
            raise ValueError(f"joint {j!r} at {q:g} rad is outside its range [{lo:g}, {hi:g}]")
    mirror = robot.joint_mirror()
    for j in robot.joint_names:
        other, sign = mirror[j]
        a, b = pose.joint_pos.get(j, 0.0), sign * pose.joint_pos.get(other, 0.0)
        if abs(a - b) > 1e-6:
            raise ValueError(f"the default pose is not its own mirror image at {j!r} ({a:g} vs {b:g} from {other!r})")
    d = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, d, 0)
    mujoco.mj_forward(model, d)
    lowest = np.inf
    for body in robot.feet:
        for g in _collision_geoms(model, model.body(body).id):
            # lowest point of the geom's bounding box in the world (geom_aabb: centre, half sizes)
            centre, half = model.geom_aabb[g, :3], model.geom_aabb[g, 3:]
            rot = d.geom_xmat[g].reshape(3, 3)
            z = d.geom_xpos[g][2] + rot[2] @ centre - np.abs(rot[2]) @ half
            lowest = min(lowest, float(z))
    if not -0.01 <= lowest <= 0.05:
        raise ValueError(f"at keyframe 0 the lowest foot point is {lowest:+.3f} m from the floor "
                         f"(expected -0.01 to 0.05 m: set the keyframe's base height)")


def _check_physics(model: mujoco.MjModel) -> None:
    d = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, d, 0)
    for _ in range(int(round(1.0 / model.opt.timestep))):
        mujoco.mj_step(model, d)
    if not (np.isfinite(d.qpos).all() and np.isfinite(d.qvel).all()):
        raise ValueError("the state is not finite after 1 s holding keyframe 0")
    warned = [mujoco.mjtWarning(i).name for i in range(len(d.warning)) if d.warning[i].number]
    if warned:
        raise ValueError(f"MuJoCo warned while holding keyframe 0: {', '.join(warned)}")


def _check_task(task: str, robot_cfg, num_envs: int, steps: int, seed: int) -> None:
    import torch

    from unilab.plugins import TASKS
    from unisim.backends.mujoco import MujocoBackend

    spec = TASKS.get(task).item
    env = spec.make_env(spec.config_cls(), backend_cls=MujocoBackend, num_envs=num_envs, nthread=1,
                        cpu_ids=None, robot=robot_cfg, seed=seed)
    try:
        obs = env.reset()
        gen = torch.Generator().manual_seed(seed)
        low, high = env.action_low.cpu(), env.action_high.cpu()
        for _ in range(steps):
            action = low + (high - low) * torch.rand(num_envs, env.num_actions, generator=gen)
            obs, reward, *_ = env.step(action.to(env.device))
            bad = [g for g, o in obs.items() if not torch.isfinite(o).all()]
            if bad or not torch.isfinite(reward).all():
                raise ValueError(f"non-finite {'observations ' + str(bad) if bad else 'rewards'} after a step")
        env.mirror  # noqa: B018 - builds (and checks) the left/right mirror
    finally:
        env.close()


def check_robot(
    robot: RobotDescription | str,
    *,
    mjcf: str | None = None,
    feet: str = "project",
    tasks: tuple[str, ...] = ("g1_walk_flat",),
    num_envs: int = 2,
    steps: int = 5,
    seed: int = 0,
    raise_on_failure: bool = True,
) -> ConformanceResult:
    """Run the checks of the module docstring on ``robot``.

    Args:
        robot: a description, or the name of a registered one (``robot.name``).
        mjcf: check this model file instead of the description's model.
        feet: the feet to build it with, as ``robot.feet`` (default ``project``, as training's).
        tasks: tasks whose env must build and step with the robot (registered task names).
        num_envs, steps, seed: size of each task rollout.
        raise_on_failure: raise instead of returning a result with failures.

    Returns:
        :class:`ConformanceResult`.

    Raises:
        RobotConformanceError: with ``raise_on_failure``, listing every failed check.
    """
    if isinstance(robot, str):
        from unilab.robots import get_robot

        robot = get_robot(robot)
    result = ConformanceResult(robot.name)

    def run(name, fn):
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - a check's failure is its reason
            result.failed[name] = " ".join(str(exc).split()) or type(exc).__name__
        else:
            result.passed.append(name)

    def description():
        problems = robot.problems()
        if problems:
            raise ValueError("; ".join(problems))

    def mirror():
        expected = name_mirror(robot.joint_names)
        got = robot.joint_mirror()
        diff = [j for j in robot.joint_names if tuple(got[j]) != tuple(expected[j])]
        if diff:
            j = diff[0]
            raise ValueError(f"joint {j!r} mirrors to {got[j]} but the env mirrors it by name to {expected[j]}")

    run("description", description)
    run("mirror", mirror)
    scene: list[RobotScene] = []
    run("scene", lambda: scene.append(build_scene(robot, mjcf=mjcf, actuators="project", feet=feet)))
    if scene:
        model = scene[0].compile()
        run("default_pose", lambda: _check_default_pose(scene[0], model))
        run("physics", lambda: _check_physics(model))
        missing = [s for s in FOOT_SITES if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, s) < 0]
        if missing:  # the builder adds them; a missing one is a builder defect worth naming
            result.failed["scene"] = f"foot sites {missing} missing"
    for task in tasks:
        cfg = SimpleNamespace(name=robot.name, mjcf=mjcf, actuators="project", feet=feet, description=robot)
        run(f"task:{task}", lambda t=task: _check_task(t, cfg, num_envs, steps, seed))
    if raise_on_failure and not result.ok:
        raise RobotConformanceError(str(result))
    return result


__all__ = ["ConformanceResult", "RobotConformanceError", "check_robot"]
