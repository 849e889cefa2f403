"""MuJoCo's cost per env step on the states a policy visits, for solver and foot variants.

From the repository root (packages installed), e.g. with a trained walking policy and the
exploration-sized noise of training:

    python benchmarks/solver_cost.py --policy RUN/policy.onnx --noise 0.3

Two phases, one process, one thread:

1. **Record.** g1_walk_flat (the shipped recipe of ``env_overhead.py``) with ``--num-envs`` envs
   runs ``--steps`` env steps; the actions are the policy's deterministic actions (``--policy``,
   an exported ``policy.onnx``; without it, the default pose's joint targets) plus Gaussian noise
   of std ``--noise`` action units, each draw held for 1-7 env steps, as exploration holds it.
   Before every physics call the full integration state (``mjSTATE_INTEGRATION``: qpos, qvel,
   act, warm start, ...) and ctrl of every env are recorded; the first ``--skip`` steps are
   dropped (reset transients).
2. **Time.** ``--samples`` recorded states are drawn; for each, every variant's model is set to
   that state and stepped ``decimation`` (4) times with ``mj_step``, the variants in alternating
   order, so that a change of host speed hits them alike. Per variant: env steps/s on one core,
   its ratio to ``default``, and the mean constraint count, contact count and solver iterations.
   For ``default`` the per-stage timers of MuJoCo (``mjData.timer``) follow.

Variants (``--variants``, comma separated; each is the project's G1 scene of
:func:`unilab.robots.scene.build_scene` with one change): ``default`` (the built-in model, feet
``project``), ``tol1e-5`` (``opt.tolerance`` 1e-5), ``ls8`` (``opt.ls_iterations`` 8), ``it4``
(``opt.iterations`` 4), ``it3ls5`` (3 and 5), ``sparse`` (``opt.jacobian`` sparse), ``cg``
(``opt.solver`` CG), ``spheres`` (``robot.feet=spheres``: four sole spheres per foot). Every
variant changes the physics (the solver's answer or the feet), so each is a candidate only if the
policy learns as well with it (``unilab eval`` over seeds); this script measures cost, not
learning.

Needs ``onnxruntime`` for ``--policy``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import mujoco
import numpy as np
import torch

VARIANTS = {
    "default": {},
    "tol1e-5": {"tolerance": 1e-5},
    "ls8": {"ls_iterations": 8},
    "it4": {"iterations": 4},
    "it3ls5": {"iterations": 3, "ls_iterations": 5},
    "sparse": {"jacobian": int(mujoco.mjtJacobian.mjJAC_SPARSE)},
    "cg": {"solver": int(mujoco.mjtSolver.mjSOL_CG)},
    "spheres": "spheres",
}
STATE = int(mujoco.mjtState.mjSTATE_INTEGRATION)


def record(num_envs: int, steps: int, skip: int, policy: str | None, noise: float, seed: int):
    """(states (k, state size) float64, ctrl (k, nu) float64, decimation) over the env steps after
    ``skip``, every env's row at every step."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from env_overhead import build

    env = build(num_envs, 1, seed)
    backend = env.backend
    states, ctrls = [], []
    inner = backend.step

    def recording_step(ctrl, nstep=None):
        states.append(backend.batch.get_state(spec=STATE))
        ctrls.append(ctrl.detach().numpy().astype(np.float64))
        inner(ctrl, nstep)

    backend.step = recording_step
    session = None
    if policy is not None:
        import onnxruntime as ort

        session = ort.InferenceSession(policy)
    rng = np.random.default_rng(seed)
    held = np.zeros((num_envs, env.num_actions), np.float32)
    left = np.zeros(num_envs, int)
    obs = env.reset()
    for _ in range(steps):
        if session is not None:
            actions = session.run(None, {"obs": obs["actor"].numpy().astype(np.float32)})[0]
        else:
            actions = np.zeros((num_envs, env.num_actions), np.float32)
        redraw = left <= 0
        held[redraw] = rng.normal(0.0, noise, (int(redraw.sum()), env.num_actions))
        left[redraw] = rng.integers(1, 8, int(redraw.sum()))
        left -= 1
        obs = env.step(torch.from_numpy(actions + held))[0]
    backend.step = inner
    decimation = env.cfg.decimation
    env.close()
    return np.concatenate(states[skip:]), np.concatenate(ctrls[skip:]), decimation


def model_for(change) -> mujoco.MjModel:
    """The project's G1 scene with one variant's change."""
    from unilab.robots.g1 import G1
    from unilab.robots.scene import build_scene

    feet = change if isinstance(change, str) else "project"
    model = build_scene(G1, feet=feet).spec.compile()
    for key, value in ({} if isinstance(change, str) else change).items():
        setattr(model.opt, key, value)
    return model


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--policy", default=None, help="an exported policy.onnx of g1_walk_flat")
    p.add_argument("--noise", type=float, default=0.3, help="std of the held action noise (action units)")
    p.add_argument("--num-envs", type=int, default=64)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--skip", type=int, default=50, help="first env steps not sampled")
    p.add_argument("--samples", type=int, default=3000)
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="write the results as JSON here")
    args = p.parse_args(argv)
    names = [v.strip() for v in args.variants.split(",") if v.strip()]
    bad = [v for v in names if v not in VARIANTS]
    if bad or "default" not in names:
        p.error(f"--variants: expected names from {', '.join(VARIANTS)} including default, got {args.variants!r}")
    for name in ("num_envs", "steps", "samples"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if not 0 <= args.skip < args.steps:
        p.error(f"--skip must be in [0, --steps={args.steps}), got {args.skip}")
    if args.noise < 0:
        p.error(f"--noise must be >= 0, got {args.noise}")

    states, ctrls, decimation = record(args.num_envs, args.steps, args.skip, args.policy, args.noise, args.seed)
    models = {name: model_for(VARIANTS[name]) for name in names}
    for name, model in models.items():
        if mujoco.mj_stateSize(model, STATE) != states.shape[1]:
            raise SystemExit(f"error: variant {name}: state size {mujoco.mj_stateSize(model, STATE)}, "
                             f"recorded {states.shape[1]}; expected the env's G1")
    datas = {name: mujoco.MjData(model) for name, model in models.items()}
    picks = np.random.default_rng(args.seed + 1).choice(len(states), min(args.samples, len(states)), replace=False)
    seconds = dict.fromkeys(names, 0.0)
    counts = {name: np.zeros(3) for name in names}  # nefc, ncon, solver iterations (summed per mj_step)
    for j, i in enumerate(picks):
        for name in names if j % 2 == 0 else names[::-1]:
            model, data = models[name], datas[name]
            mujoco.mj_setState(model, data, states[i], STATE)
            data.ctrl[:] = ctrls[i]
            t0 = time.perf_counter()
            for _ in range(decimation):
                mujoco.mj_step(model, data)
            seconds[name] += time.perf_counter() - t0
            counts[name] += (data.nefc, data.ncon, data.solver_niter[0])  # the last substep's
    n = len(picks)
    print(f"{n} states from {args.num_envs} envs x {args.steps - args.skip} env steps "
          f"({'policy ' + args.policy if args.policy else 'default pose'} + noise {args.noise}), "
          f"{decimation} mj_step per env step, one thread")
    print(f"{'variant':10s} {'env steps/s':>12s} {'x default':>10s} {'nefc':>7s} {'ncon':>6s} {'solver it.':>10s}")
    results = {}
    for name in names:
        nefc, ncon, nit = counts[name] / n
        results[name] = {"env_steps_per_s": n / seconds[name], "ratio": seconds["default"] / seconds[name],
                         "nefc": nefc, "ncon": ncon, "solver_iterations": nit}
        r = results[name]
        print(f"{name:10s} {r['env_steps_per_s']:12.0f} {r['ratio']:10.3f} {nefc:7.1f} {ncon:6.1f} {nit:10.2f}")
    model, data = models["default"], datas["default"]
    mujoco.mj_resetData(model, data)
    for i in picks[: min(n, 1000)]:
        mujoco.mj_setState(model, data, states[i], STATE)
        data.ctrl[:] = ctrls[i]
        for _ in range(decimation):
            mujoco.mj_step(model, data)
    steps = max(int(data.timer[int(mujoco.mjtTimer.mjTIMER_STEP)].number), 1)
    stages = {mujoco.mjtTimer(t).name.removeprefix("mjTIMER_").lower(): data.timer[t].duration / steps * 1e6
              for t in range(len(data.timer)) if data.timer[t].number}
    print("default, microseconds per mj_step:", ", ".join(f"{k} {v:.1f}" for k, v in stages.items()))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"args": vars(args), "variants": results, "default_stages_us": stages}, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
