"""G1 physics throughput: mjbatch_uni's host bridge vs bare mujoco.batch and the per-core limit.

One command, from the repository root (packages installed, editable or from wheels):

    python benchmarks/physics.py --out physics.json

Default grid: nworld 256, 1024, 4096 x threads 1, 2, 4, 8, 16, decimation 4 (an env step is 4
``mj_step``), about 4-6 minutes on 16 cores. What it measures, per (nworld, threads) cell:

* ``limit``: the per-core limit: one ``mj_step(m, d, K)`` C call on one MjData from the same
  settled state, as env-steps/s per core (K substeps / 4 / seconds). Measured in every round of
  every cell, interleaved with the others, so host phases affect both alike. With
  ``--limit-mode concurrent`` (the default) ``threads`` such loops run at once, one per Python
  thread (``mj_step`` releases the GIL), and the limit is their median per-loop rate: the per-core
  speed when that many cores are busy (all-core clocks, shared caches and memory bandwidth), which
  is what a batch of that many threads can reach at best. ``--limit-mode single`` runs one loop
  alone (the first GPU-machine tables): single-core turbo makes limit x threads unreachable.
* ``bare``: ``mujoco.batch.Batch`` (non-persistent, stage NONE): write ctrl into the bound view,
  ``step(nstep=4)``. Physics only, no bridge: the reference for the >= 95 % target.
* ``bare_env``: ``bare`` on the model ``uni`` compiles (the plain G1 plus the sensors the
  backend adds for the tracked bodies): the same physics work as ``uni``, so ``uni / bare_env``
  is the bridge's own cost, while ``uni / bare`` (the 95 % target) also counts those sensors,
  which ``mj_step`` evaluates at every substep. Not in the default list: ``--variants
  bare,bare_env,uni``.
* ``uni``: ``unisim.backends.mujoco.MujocoBackend`` (mjbatch_uni with the packed host bridge,
  default options: derived="last_substep", MuJoCo's mj_step semantics for sensors and tracked
  bodies, qpos/qvel current): ``backend.step(ctrl)``
  with a float32 torch tensor, every tensor refreshed (packed pull), with what the G1 walking
  task reads: qpos, qvel, sensors, 4 tracked bodies (pelvis, torso, feet) and the feet's
  contact forces.
* ``uni_current``: the same with ``options={"derived": "current"}`` (the position and velocity
  stages recomputed after each step, so every tensor describes the new state).
* ``uni_persist``: the same with ``options={"persistent": True}`` (one MjData per world:
  derived="current" without recomputing the stages, at ~370 KB per world).
* ``rollout``: ``mujoco.rollout.Rollout`` (persistent pool, preallocated arrays, skip_checks),
  carrying the FULLPHYSICS state from call to call (cold solver warm start every call).
* ``pyloop``: a Python loop over per-world MjData, ``d.ctrl[:] = u; mj_step(m, d, 4)``.
  The slow ones (rollout, pyloop) run only at small sizes (``--slow-nworld``, ``--slow-threads``;
  pyloop is single-threaded by nature, so only at 1 thread).

Ratios: ``%bare`` is the median over rounds of (variant / bare) measured back to back (with
``--interleave``, alternating step by step within one sample: the host's speed drifts by tens of
percent within seconds on shared machines, and this cancels it; the variants then share the caches,
so absolute rates, and ``%lim``, come out lower); ``%lim`` is
env-steps/s / (limit x threads). The G1 is the project's model (``unilab.robots.g1``: primitive
collision, dt 0.005) with its position gains (kp) x10, which holds it standing on both feet
(28 contacts) without a policy; every sample starts from the same settled standing state (keyframe
``knees_bent``, then 300 steps) and holds the keyframe controls. Peak RSS: a separate process
builds 4096 worlds through MujocoBackend, randomizes friction, body masses, CoM offsets and
actuator gains in every world (``set_model_field``: ``expand`` + ``set_const``), and steps.

``--mjcf FILE`` measures a user's model instead (e.g. a Menagerie ``scene.xml`` with meshes), built
as training builds it (:func:`unilab.robots.scene.build_scene`: the task's sensors, sites,
options and keyframes added; drives per ``--actuators``, default ``project``), with the same kp
scale and settling. Run the same grid with and without it to compare with the built-in model, e.g.
``--nworld 1024 --threads 1,16 --variants bare,uni --memory-nworld 0 --bridge-nworld 0``.
``--feet`` builds the feet as ``robot.feet`` does: ``project`` (default, as training) the G1
description's seven sole capsules per foot (on the built-in model, its own feet), ``model`` the
file's own foot geoms (e.g. a user's ``--mjcf`` as written), ``spheres`` four sole spheres per foot.

The compact table is printed last; ``--out`` writes everything as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from typing import Callable

import mujoco
import numpy as np

NSTEP = 4  # decimation
SETTLE_STEPS = 300
KP_SCALE = 10.0
DR_FIELDS = ("geom_friction", "body_mass", "body_ipos", "actuator_gainprm", "actuator_biasprm")
VARIANTS = ("bare", "bare_env", "uni", "uni_current", "uni_persist", "rollout", "pyloop")
SLOW = ("rollout", "pyloop")


# ---------------------------------------------------------------------------- model and state
def g1_xml(mjcf: str | None = None, actuators: str = "project", kp_scale: float = KP_SCALE,
           feet: str = "project") -> str:
    """The G1 scene (the project's model, or the user's ``mjcf`` built as training builds it) with
    position gains x ``kp_scale`` (stands without a policy).

    Raises:
        unilab.robots.RobotModelError: a user file that cannot serve (one line).
    """
    from unilab.robots.g1 import G1
    from unilab.robots.scene import build_scene

    spec = build_scene(G1, mjcf=mjcf, actuators=actuators, feet=feet).spec
    for act in spec.actuators:
        act.gainprm[0] *= kp_scale  # kp
        act.biasprm[1] *= kp_scale  # -kp (position actuator); kv (biasprm[2]) unchanged
    spec.compile()
    return spec.to_xml()


def tracked_bodies() -> tuple[str, ...]:
    from unilab.robots.g1 import FOOT_BODIES, PELVIS_BODY, TORSO_BODY

    return (PELVIS_BODY, TORSO_BODY, *FOOT_BODIES)  # as the g1_walk_flat task


def settled(model: mujoco.MjModel, kp_scale: float = KP_SCALE) -> tuple[np.ndarray, np.ndarray, dict]:
    """(INTEGRATION state, FULLPHYSICS state, facts) after settling from keyframe 0."""
    d = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, d, 0)
    mujoco.mj_forward(model, d)
    mujoco.mj_step(model, d, SETTLE_STEPS)
    states = []
    for spec in (mujoco.mjtState.mjSTATE_INTEGRATION, mujoco.mjtState.mjSTATE_FULLPHYSICS):
        s = np.empty(mujoco.mj_stateSize(model, spec))
        mujoco.mj_getState(model, d, s, spec)
        states.append(s)
    facts = {"pelvis_z": float(d.qpos[2]), "ncon": int(d.ncon), "nefc": int(d.nefc),
             "settle_steps": SETTLE_STEPS, "kp_scale": kp_scale, "nmesh": int(model.nmesh),
             "ngeom": int(model.ngeom)}
    return states[0], states[1], facts


# ---------------------------------------------------------------------------- timing helpers
_CLK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _cpu_busy() -> float | None:
    """Seconds of CPU time all processes have used (Linux /proc/stat), or None."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:9]]
    except OSError:
        return None
    return (sum(v) - v[3] - v[4]) / _CLK


def _own() -> float:
    t = os.times()
    return t.user + t.system


CLOCK = {"wall": time.perf_counter, "cpu": time.process_time}
"""wall: elapsed time (the default: throughput). cpu: CPU time of this process, all threads: the
work per env-step, insensitive to other processes taking the cores; meaningful at 1 thread only
(with more, idle and spinning threads count too)."""


class Sample:
    """Times ``fn`` (one env-step of N worlds) for at least ``window`` s and ``min_steps`` calls;
    records env-steps/s and the CPU other processes used meanwhile (foreign cores)."""

    def __init__(self, fn: Callable[[], None], nworld: int, window: float, min_steps: int = 2,
                 clock: str = "wall"):
        busy0, own0 = _cpu_busy(), _own()
        tick = CLOCK[clock]
        t0, w0 = tick(), time.perf_counter()
        k = 0
        while True:
            fn()
            k += 1
            wall = time.perf_counter() - w0
            if wall >= window and k >= min_steps:
                break
        spent = tick() - t0
        busy1, own1 = _cpu_busy(), _own()
        self.rate = nworld * k / spent
        self.foreign = None
        if busy0 is not None and busy1 is not None:
            self.foreign = max(0.0, ((busy1 - busy0) - (own1 - own0)) / wall)


def interleaved_sample(objs: dict, order: list[str], nworld: int, window: float, min_steps: int,
                       clock: str = "wall") -> dict[str, float]:
    """One env step of each variant in turn (``order``, after a restart and one untimed step
    each), until every variant has run ``window`` s and ``min_steps`` steps; returns env-steps/s
    per variant. Each variant's steps are timed alone, but the variants alternate step by step,
    so a host that speeds up or slows down over a second slows all of them alike (the paired ratio
    of :class:`Sample`s taken one after the other carries that drift)."""
    tick = CLOCK[clock]
    for v in order:
        objs[v].restart()
        objs[v].step()  # warm up
    spent = dict.fromkeys(order, 0.0)
    steps = dict.fromkeys(order, 0)
    while min(spent.values()) < window or min(steps.values()) < min_steps:
        for v in order:
            t0 = tick()
            objs[v].step()
            spent[v] += tick() - t0
            steps[v] += 1
    return {v: nworld * steps[v] / spent[v] for v in order}


def limit_sample(model, state, window: float, clock: str = "wall") -> tuple[float, float | None]:
    """Per-core limit: env-steps/s of one mj_step(m, d, K) C call from ``state``."""
    d = mujoco.MjData(model)
    spec = mujoco.mjtState.mjSTATE_INTEGRATION
    mujoco.mj_setState(model, d, state, spec)
    mujoco.mj_step(model, d, 8)  # warm caches
    mujoco.mj_setState(model, d, state, spec)
    k = max(40, int(window / 70e-6))
    busy0, own0 = _cpu_busy(), _own()
    tick = CLOCK[clock]
    t0, w0 = tick(), time.perf_counter()
    mujoco.mj_step(model, d, k)
    spent, wall = tick() - t0, time.perf_counter() - w0
    busy1, own1 = _cpu_busy(), _own()
    foreign = None if busy0 is None else max(0.0, ((busy1 - busy0) - (own1 - own0)) / wall)
    return k / NSTEP / spent, foreign


def limit_sample_concurrent(model, state, window: float, threads: int,
                            clock: str = "wall") -> tuple[float, float | None]:
    """Per-core limit with ``threads`` cores busy: ``threads`` independent mj_step(m, d, K) loops
    started together on their own MjData (one Python thread each; mj_step releases the GIL).
    Returns the median per-loop env-steps/s and None (no foreign-load estimate)."""
    if threads <= 1:
        return limit_sample(model, state, window, clock)
    import threading

    spec = mujoco.mjtState.mjSTATE_INTEGRATION
    k = max(40, int(window / 70e-6))
    tick = time.thread_time if clock == "cpu" else time.perf_counter
    rates = [0.0] * threads
    start = threading.Barrier(threads)

    def loop(i: int) -> None:
        d = mujoco.MjData(model)
        mujoco.mj_setState(model, d, state, spec)
        mujoco.mj_step(model, d, 8)  # warm caches
        mujoco.mj_setState(model, d, state, spec)
        start.wait()
        t0 = tick()
        mujoco.mj_step(model, d, k)
        rates[i] = k / NSTEP / (tick() - t0)

    workers = [threading.Thread(target=loop, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return statistics.median(rates), None


# ---------------------------------------------------------------------------- the variants
class Bare:
    def __init__(self, model, n, t, s_int, s_full, ctrl):
        from mujoco import batch as mjb

        self.b = mjb.Batch(model, n, t)
        self.ctrl = self.b.bind("ctrl")
        self.u = np.tile(ctrl, (n, 1))
        self.s = s_int

    def restart(self):
        self.b.state[:] = self.s
        self.b.forward()

    def step(self):
        self.ctrl[:] = self.u
        self.b.step(None, NSTEP)

    def close(self):
        self.b = self.ctrl = None


class BareEnv(Bare):
    def __init__(self, xml, n, t, s_int, s_full, ctrl):
        from unisim import SimSpec
        from unisim.backends.mujoco import MujocoBackend

        probe = MujocoBackend(SimSpec(mjcf=xml, num_envs=1, nthread=1, decimation=NSTEP,
                                      tracked_bodies=tracked_bodies()))
        self.model = probe.batch.model  # kept alive: the batch below steps it
        probe.close()
        super().__init__(self.model, n, t, s_int, s_full, ctrl)


class Uni:
    def __init__(self, xml, n, t, s_int, s_full, ctrl, options=None):
        import torch

        from unisim import SimSpec
        from unisim.backends.mujoco import MujocoBackend

        from unilab.robots.g1 import FOOT_BODIES

        self.be = MujocoBackend(SimSpec(mjcf=xml, num_envs=n, nthread=t, decimation=NSTEP,
                                        tracked_bodies=tracked_bodies(), options=options or {}))
        for foot in FOOT_BODIES:  # what a walking env reads: the feet's contact forces
            self.be.contact_force(foot)
        self.u = torch.from_numpy(np.tile(ctrl, (n, 1)).astype(np.float32))
        self.s = np.tile(s_int, (n, 1))

    def restart(self):
        self.be.batch.set_state(None, state=self.s)  # + mj_forward
        self.be._bridge.pull()

    def step(self):
        self.be.step(self.u)

    def close(self):
        self.be.close()


class UniCurrent(Uni):
    def __init__(self, *args):
        super().__init__(*args, options={"derived": "current"})


class UniPersist(Uni):
    def __init__(self, *args):
        super().__init__(*args, options={"persistent": True})


class Rollout:
    def __init__(self, model, n, t, s_int, s_full, ctrl):
        from mujoco import rollout

        self.r = rollout.Rollout(nthread=t)
        self.models = [model] * n
        self.datas = [mujoco.MjData(model) for _ in range(t)]
        self.s = s_full
        self.init = np.tile(s_full, (n, 1))
        self.control = np.ascontiguousarray(np.broadcast_to(ctrl, (n, NSTEP, model.nu)))
        self.state = np.empty((n, NSTEP, len(s_full)))
        self.sens = np.empty((n, NSTEP, model.nsensordata))

    def restart(self):
        self.init[:] = self.s

    def step(self):
        self.r.rollout(self.models, self.datas, self.init, self.control, skip_checks=True,
                       nstep=NSTEP, state=self.state, sensordata=self.sens)
        self.init[:] = self.state[:, -1]

    def close(self):
        self.r.close()


class PyLoop:
    def __init__(self, model, n, t, s_int, s_full, ctrl):
        self.m = model
        self.datas = [mujoco.MjData(model) for _ in range(n)]
        self.u = np.tile(ctrl, (n, 1))
        self.s = s_int

    def restart(self):
        for d in self.datas:
            mujoco.mj_setState(self.m, d, self.s, mujoco.mjtState.mjSTATE_INTEGRATION)

    def step(self):
        m = self.m
        for d, u in zip(self.datas, self.u):
            d.ctrl[:] = u
            mujoco.mj_step(m, d, NSTEP)

    def close(self):
        self.datas = []


MAKERS = {"bare": Bare, "bare_env": BareEnv, "uni": Uni, "uni_current": UniCurrent, "uni_persist": UniPersist,
          "rollout": Rollout, "pyloop": PyLoop}


# ---------------------------------------------------------------------------- checks
def check_bit_identical(xml: str, nworld: int = 4, steps: int = 6) -> dict:
    """The bridge path reproduces a plain mj_step loop on the G1 (float32 cast, exactly)."""
    import torch

    from unisim import SimSpec
    from unisim.backends.mujoco import MujocoBackend

    out = {}
    for derived in ("current", "last_substep"):
        be = MujocoBackend(SimSpec(mjcf=xml, num_envs=nworld, nthread=2, decimation=NSTEP,
                                   tracked_bodies=tracked_bodies(),
                                   options={"derived": derived}))
        m = be.model
        datas = []
        for _ in range(nworld):
            d = mujoco.MjData(m)
            mujoco.mj_resetDataKeyframe(m, d, 0)
            mujoco.mj_forward(m, d)
            datas.append(d)
        rng = np.random.default_rng(0)
        same = True
        for _ in range(steps):
            u = (m.key_ctrl[0] + rng.normal(0, 0.1, (nworld, m.nu))).astype(np.float32)
            be.step(torch.from_numpy(u))
            for d, ui in zip(datas, u):
                d.ctrl[:] = ui
                mujoco.mj_step(m, d, NSTEP)
            ref = np.stack([np.concatenate([d.qpos, d.qvel]) for d in datas]).astype(np.float32)
            got = torch.cat([be.qpos, be.qvel], dim=1).numpy()
            same &= bool(np.array_equal(got, ref))
        be.close()
        out[derived] = same
    return out


def bridge_costs(xml: str, nworlds: list[int], reps: int = 15) -> list[dict]:
    """Host-side cost of one step boundary, no physics: the packed bridge (ctrl in + pull) vs
    the previous per-field bridge (8 copies + the velocity shift in numpy, re-implemented here as
    it was; contact forces of every body), both with every body's contact forces, and the packed
    bridge with the feet's only (what the walking env reads); and the transfer of the packed
    buffer to CUDA when there is one. Warm: repeated on the same data; cold: after evicting the
    caches (after a physics step the truth lies between)."""
    import torch

    import mjbatch_uni
    from unisim import SimSpec
    from unisim.backends.mujoco import MujocoBackend

    from unilab.robots.g1 import FOOT_BODIES

    rows = []
    for n in nworlds:
        model = mujoco.MjModel.from_xml_string(xml)
        every = [model.body(i).name for i in range(model.nbody)]
        be = MujocoBackend(SimSpec(mjcf=xml, num_envs=n, nthread=1, decimation=NSTEP,
                                   tracked_bodies=tracked_bodies(),
                                   options={"contact_bodies": every}))
        feet = MujocoBackend(SimSpec(mjcf=xml, num_envs=n, nthread=1, decimation=NSTEP,
                                     tracked_bodies=tracked_bodies()))
        for foot in FOOT_BODIES:  # read once: copied from then on
            feet.contact_force(foot)
        m, body_ids = be.model, np.array([be.model.body(b).id for b in tracked_bodies()])
        old = mjbatch_uni.Batch(m, n, nthread=1)  # binds xpos, xquat, cvel, subtree_com, cfrc_ext
        old.reset()
        old.step(None, 1)
        nb = len(body_ids)
        bufs = [np.zeros(s, np.float32) for s in
                ((n, m.nq), (n, m.nv), (n, m.nsensordata), (n, nb, 3), (n, nb, 4), (n, nb, 3),
                 (n, nb, 3), (n, m.nbody, 3))]
        roots = m.body_rootid[body_ids]

        def old_pull():
            np.copyto(bufs[0], old.qpos, casting="same_kind")
            np.copyto(bufs[1], old.qvel, casting="same_kind")
            np.copyto(bufs[2], old.sensordata, casting="same_kind")
            xpos = old.xpos[:, body_ids]
            cvel = old.cvel[:, body_ids]
            ang = cvel[..., :3]
            lin = cvel[..., 3:] + np.cross(ang, xpos - old.subtree_com[:, roots])
            np.copyto(bufs[3], xpos, casting="same_kind")
            np.copyto(bufs[4], old.xquat[:, body_ids], casting="same_kind")
            np.copyto(bufs[5], lin, casting="same_kind")
            np.copyto(bufs[6], ang, casting="same_kind")
            np.copyto(bufs[7], old.cfrc_ext[:, :, 3:], casting="same_kind")

        u = torch.zeros(n, m.nu)
        un = u.numpy()

        def new_boundary():
            be.batch._write_ctrl(un)
            be._bridge.pull()

        def feet_boundary():
            feet.batch._write_ctrl(un)
            feet._bridge.pull()

        def old_boundary():
            np.copyto(old._ctrl, un)
            old_pull()

        scratch = np.empty(2**25)  # 256 MB, written between cold repetitions to evict caches

        def timed(fn, cold=False):
            fn()
            ts = []
            for _ in range(reps):
                if cold:
                    scratch.fill(1.0)
                t0 = time.perf_counter()
                fn()
                ts.append(time.perf_counter() - t0)
            return statistics.median(ts) * 1e3

        row = {"nworld": n, "old_ms": timed(old_boundary), "new_ms": timed(new_boundary),
               "feet_ms": timed(feet_boundary), "old_cold_ms": timed(old_boundary, True),
               "new_cold_ms": timed(new_boundary, True), "feet_cold_ms": timed(feet_boundary, True),
               "old_copies": 9, "new_copies": be.transfer_stats["copies_per_step"],
               "feet_copies": feet.transfer_stats["copies_per_step"],
               "packed_bytes": be.packed.numel() * 4, "width": be.packed.shape[1]}
        if torch.cuda.is_available():
            for pinned in (False, True):
                src = torch.zeros_like(be.packed).pin_memory() if pinned else be.packed

                def h2d():
                    src.to("cuda", non_blocking=True)
                    torch.cuda.synchronize()

                row["h2d_pinned_ms" if pinned else "h2d_ms"] = timed(h2d)
        rows.append(row)
        be.close()
        feet.close()
        old.close()
    return rows


# ---------------------------------------------------------------------------- memory probe
def memory_probe(nworld: int, persistent: bool, model: tuple = ()) -> dict:
    """Run in a fresh process: RSS of nworld G1 worlds through MujocoBackend, with per-world
    friction, masses, CoM offsets and actuator gains, after stepping. ``model``: the arguments of
    :func:`g1_xml`."""
    import torch

    from unisim import SimSpec
    from unisim.backends.mujoco import MujocoBackend

    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    def peak():  # VmHWM: this process's peak RSS (ru_maxrss keeps the parent's across exec)
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM")) / 1024

    xml = g1_xml(*model)
    base = rss()
    be = MujocoBackend(SimSpec(mjcf=xml, num_envs=nworld, nthread=0, decimation=NSTEP,
                               tracked_bodies=tracked_bodies(),
                               options={"persistent": persistent}))
    built = rss()
    g = torch.Generator().manual_seed(0)
    ids = torch.arange(nworld)
    for name in ("geom_friction", "body_mass", "body_ipos"):
        values = be.model_field(name)
        scale = 0.8 + 0.4 * torch.rand((nworld,) + (1,) * (values.dim() - 1), generator=g)
        be.set_model_field(name, ids, values * scale)
    gain = 0.8 + 0.4 * torch.rand((nworld, 1, 1), generator=g)  # kp and kv of each world
    for name in ("actuator_gainprm", "actuator_biasprm"):
        be.set_model_field(name, ids, be.model_field(name) * gain)
    u = torch.from_numpy(np.tile(be.model.key_ctrl[0], (nworld, 1)).astype(np.float32))
    for _ in range(3):
        be.step(u)
    expanded = sum(np.asarray(be.batch.model_values(f)).nbytes for f in DR_FIELDS) / 2**20
    return {
        "nworld": nworld, "persistent": persistent, "rss_after_imports_mb": round(base, 1),
        "rss_built_mb": round(built, 1), "rss_after_dr_and_steps_mb": round(rss(), 1),
        "peak_rss_mb": round(peak(), 1),
        "dr_fields_mb": round(expanded, 1), "model_mb": round(be.model.nbuffer / 2**20, 2),
        "nthread": be.batch.nthread,
    }


def run_memory_probe(nworld: int, persistent: bool, args) -> dict | None:
    cmd = [sys.executable, os.path.abspath(__file__), "--memory-probe", str(nworld),
           "--actuators", args.actuators, "--kp-scale", str(args.kp_scale), "--feet", args.feet]
    if args.mjcf:
        cmd += ["--mjcf", args.mjcf]
    if persistent:
        cmd.append("--probe-persistent")
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
        return json.loads(res.stdout.strip().splitlines()[-1])
    except Exception as e:  # noqa: BLE001 - report, don't lose the benchmark
        return {"error": f"{type(e).__name__}: {e}"}


# ---------------------------------------------------------------------------- the run
def machine() -> dict:
    import mjbatch_uni

    info = {"python": platform.python_version(), "mujoco": mujoco.__version__,
            "numpy": np.__version__, "cpus": os.cpu_count(),
            "available_cores": mjbatch_uni.available_cores(), "platform": platform.platform()}
    try:
        import torch

        info["torch"] = torch.__version__
        info["cuda"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except ImportError:
        pass
    try:
        with open("/proc/cpuinfo") as f:
            info["cpu"] = next(line.split(":", 1)[1].strip() for line in f
                               if line.startswith("model name"))
    except (OSError, StopIteration):
        info["cpu"] = platform.processor()
    try:
        info["git"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                     text=True, timeout=5).stdout.strip() or None
    except Exception:  # noqa: BLE001
        info["git"] = None
    return info


def run_cell(xml, model, n, t, variants, args, s_int, s_full, ctrl, log):
    objs = {}
    for v in variants:
        maker = MAKERS[v]
        src = xml if v.startswith("uni") or v == "bare_env" else model
        objs[v] = maker(src, n, t, s_int, s_full, ctrl)
    samples = {v: [] for v in variants}
    limits, foreign = [], []
    order = list(variants)
    for r in range(args.rounds):
        if args.limit_mode == "concurrent":
            lim, fr = limit_sample_concurrent(model, s_int, args.limit_window, t, args.clock)
        else:
            lim, fr = limit_sample(model, s_int, args.limit_window, args.clock)
        limits.append(lim)
        foreign.append(fr)
        if args.interleave:
            for v, rate in interleaved_sample(objs, order, n, args.window, args.min_steps, args.clock).items():
                samples[v].append(rate)
        else:
            for v in order:
                o = objs[v]
                o.restart()
                o.step()  # warm up
                s = Sample(o.step, n, args.window, min_steps=args.min_steps, clock=args.clock)
                samples[v].append(s.rate)
                foreign.append(s.foreign)
        order = order[1:] + order[:1]  # rotate, so no variant always follows the reference
    for o in objs.values():
        o.close()
    limit = statistics.median(limits)
    rates = {v: statistics.median(x) for v, x in samples.items()}
    cell = {"nworld": n, "threads": t, "limit_per_core": limit, "limit_samples": limits,
            "limit_mode": args.limit_mode,
            "rates": rates, "samples": samples,
            "pct_limit": {v: 100 * rates[v] / (limit * t) for v in variants},
            "foreign_cores_max": max((f for f in foreign if f is not None), default=None)}
    def paired(ref: str, of: list[str]) -> dict[str, float]:  # median over rounds of v / ref, %
        return {v: 100 * statistics.median(a / b for a, b in zip(samples[v], samples[ref])) for v in of}

    if "bare" in variants:
        cell["pct_bare"] = paired("bare", variants)
    if "bare_env" in variants:
        cell["pct_bare_env"] = paired("bare_env", [v for v in variants if v.startswith("uni")])
    log(f"  nworld={n:5d} threads={t:2d}  limit/core {limit:8.0f}  " + "  ".join(
        f"{v} {rates[v]:8.0f}" + (f" ({cell['pct_bare'][v]:.1f} % of bare, paired median)"
                                  if v != "bare" and "pct_bare" in cell else "")
        for v in variants)
        + "".join(f"  {v}/bare_env {x:.1f} %" for v, x in cell.get("pct_bare_env", {}).items()))
    return cell


def fmt_table(cells, variants, mem, bridge, checks, facts, info, elapsed, clock="wall") -> str:
    lines = []
    model = facts.get("model", "unilab.robots.g1")
    lines.append(f"G1 ({model}, {facts['nmesh']} meshes, kp x{facts['kp_scale']:g}, settled: pelvis z "
                 f"{facts['pelvis_z']:.3f} m, {facts['ncon']} contacts), decimation {NSTEP}; "
                 f"{info.get('cpu')} ({info['available_cores']} cores), mujoco {info['mujoco']}, "
                 f"python {info['python']}, torch {info.get('torch')}; {elapsed:.0f} s")
    unit = "env-steps/s" if clock == "wall" else "env-steps per CPU-second"
    lines.append(f"{unit} (median); %lim = / (per-core limit x threads; limit measured "
                 f"{cells[0].get('limit_mode', 'single') if cells else 'single'}); "
                 "%bare = paired ratio to bare mujoco.batch; '-' = not run "
                 f"({', '.join(SLOW)} only at small sizes: see --slow-*)")
    def col(v, c=None):
        width = 14 if v == "bare" else 20
        if c is None:  # header
            text = f"{v:>8} {'%lim':>4}" + (f" {'%bare':>5}" if v != "bare" else "")
        elif v not in c["rates"]:
            text = "-"
        else:
            text = f"{c['rates'][v]:>8,.0f} {c['pct_limit'][v]:>4.0f}"
            if v != "bare":
                pb = c.get("pct_bare", {}).get(v)
                text += f" {pb:>5.1f}" if pb is not None else f" {'':>5}"
        return f" {text:>{width - 1}} |"

    lines.append(f"{'nworld':>6} {'thr':>3} {'limit/core':>10} |"
                 + "".join(col(v) for v in variants) + " load")
    for c in cells:
        fc = c["foreign_cores_max"]
        lines.append(f"{c['nworld']:>6} {c['threads']:>3} {c['limit_per_core']:>10,.0f} |"
                     + "".join(col(v, c) for v in variants)
                     + (f" {fc:.2f}" if fc is not None else " -"))
    if bridge:
        lines.append("step-boundary host cost, no physics (ctrl in + tensors out), ms warm/cold "
                     "cache: "
                     + "; ".join(
                         f"N={b['nworld']}: {b['old_copies']} copies+math "
                         f"{b['old_ms']:.2f}/{b['old_cold_ms']:.2f} -> {b['new_copies']} copies "
                         f"{b['new_ms']:.2f}/{b['new_cold_ms']:.2f}; feet contacts only: "
                         f"{b['feet_copies']} copies {b['feet_ms']:.2f}/{b['feet_cold_ms']:.2f}"
                         + (f", H2D {b['h2d_ms']:.3f} (pinned {b['h2d_pinned_ms']:.3f})"
                            if "h2d_ms" in b else "") for b in bridge))
    if checks:
        lines.append("bit-identical to a plain mj_step loop (G1, qpos|qvel float32): "
                     + ", ".join(f"{k}: {'yes' if v else 'NO'}" for k, v in checks.items()))
    for m in mem:
        if "error" in m:
            lines.append(f"memory probe failed: {m['error']}")
            continue
        worlds = m["peak_rss_mb"] - m["rss_after_imports_mb"]
        lines.append(
            f"memory, {m['nworld']} G1 worlds through MujocoBackend (persistent={m['persistent']}),"
            f" DR fields expanded ({m['dr_fields_mb']} MB) and stepped: peak RSS "
            f"{m['peak_rss_mb']:.0f} MB, {worlds:.0f} MB over the imports (Python, torch, MuJoCo: "
            f"{m['rss_after_imports_mb']:.0f} MB)"
            + (f" -> worlds {'< 1 GB: PASS' if worlds < 1024 else '>= 1 GB: FAIL'}"
               if not m["persistent"] else ""))
    # targets
    for v in ("uni", "uni_current", "uni_persist"):
        vals = [(c["pct_bare"][v], c["nworld"], c["threads"]) for c in cells
                if v in c.get("pct_bare", {})]
        if vals:
            worst = min(vals)
            lines.append(f"target {v} >= 95 % of bare at every size: worst {worst[0]:.1f} % "
                         f"(nworld {worst[1]}, threads {worst[2]}) -> "
                         f"{'PASS' if worst[0] >= 95 else 'FAIL'}")
    for v in ("uni", "uni_current", "uni_persist"):
        vals = [(c["pct_bare_env"][v], c["nworld"], c["threads"]) for c in cells
                if v in c.get("pct_bare_env", {})]
        if vals:
            lines.append(f"{v} / bare_env (same model, the bridge's own cost), paired medians: "
                         + ", ".join(f"{n}x{t} {x:.1f} %" for x, n, t in vals)
                         + f"; worst {min(vals)[0]:.1f} %")
    tmax = max((c["threads"] for c in cells), default=0)
    for v in ("bare", "uni", "uni_current", "uni_persist"):
        vals = [c["pct_limit"][v] for c in cells if c["threads"] == tmax and v in c["rates"]]
        if vals and tmax >= 16:
            lines.append(f"target {v} >= 90 % of limit x {tmax} at {tmax} threads: "
                         f"{', '.join(f'{x:.0f} %' for x in vals)} -> "
                         f"{'PASS' if min(vals) >= 90 else 'FAIL'}")
    return "\n".join(lines)


def _write_json(path: str, result: dict) -> None:
    """Write ``result`` to ``path`` through a temporary file, so a kill mid-write leaves the
    previous complete version."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=1)
    os.replace(tmp, path)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    ints = lambda s: [int(x) for x in s.split(",") if x]  # noqa: E731
    p.add_argument("--nworld", type=ints, default=[256, 1024, 4096])
    p.add_argument("--threads", type=ints, default=[1, 2, 4, 8, 16])
    p.add_argument("--variants", type=lambda s: s.split(","),
                   default=[v for v in VARIANTS if v != "bare_env"],
                   help=f"comma-separated, of {', '.join(VARIANTS)} (default: all but bare_env)")
    p.add_argument("--slow-nworld", type=ints, default=[256],
                   help="nworld at which rollout and pyloop run (default 256)")
    p.add_argument("--slow-threads", type=ints, default=[1, 2, 16],
                   help="threads at which rollout runs (pyloop: 1 only; default 1,2,16)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--window", type=float, default=0.5, help="s per timed sample (>= --min-steps steps)")
    p.add_argument("--interleave", action="store_true",
                   help="alternate the variants step by step within one sample per round (against host-speed "
                        "drift between back-to-back samples); default: one sample per variant in turn")
    p.add_argument("--min-steps", type=int, default=2,
                   help="env steps per timed sample at least (large nworld x few threads: 0.5 s holds only "
                        "2-3 steps, so one slow step moves the paired ratio; e.g. 6)")
    p.add_argument("--limit-window", type=float, default=0.15, help="s per limit sample")
    p.add_argument("--limit-mode", choices=("concurrent", "single"), default="concurrent",
                   help="per-core limit measured with as many loops at once as the cell's threads "
                        "(default), or one loop alone")
    p.add_argument("--memory-nworld", type=int, default=4096, help="0: skip the memory probe")
    p.add_argument("--no-memory-persistent", dest="memory_persistent", action="store_false",
                   help="skip the comparison probe with persistent=True (one MjData per world)")
    p.add_argument("--bridge-nworld", type=ints, default=[256, 1024, 4096],
                   help="sizes of the host-cost measurement (0: skip)")
    p.add_argument("--clock", choices=tuple(CLOCK), default="wall",
                   help="wall (default): throughput; cpu: CPU time of this process, for noisy "
                        "shared machines at 1 thread")
    p.add_argument("--out", default=None, help="write all results as JSON here")
    p.add_argument("--mjcf", default=None,
                   help="a user G1 MJCF (robot file or scene including it) instead of the built-in model")
    p.add_argument("--actuators", choices=("project", "file"), default="project",
                   help="drives of --mjcf: the project's (default) or the file's, as robot.actuators")
    p.add_argument("--kp-scale", type=float, default=KP_SCALE,
                   help=f"position gains x this, so the robot stands without a policy (default {KP_SCALE:g})")
    p.add_argument("--feet", choices=("project", "model", "spheres"), default="project",
                   help="foot collision as robot.feet: project (default, as training): the G1 description's sole "
                        "capsules; model: the model's own geoms; spheres: four sole spheres per foot")
    p.add_argument("--memory-probe", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--probe-persistent", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.mjcf:
        args.mjcf = os.path.abspath(args.mjcf)
    model_args = (args.mjcf, args.actuators, args.kp_scale, args.feet)
    if args.memory_probe is not None:
        print(json.dumps(memory_probe(args.memory_probe, args.probe_persistent, model_args)))
        return 0
    bad = [v for v in args.variants if v not in MAKERS]
    if bad:
        p.error(f"unknown variants {bad}; valid: {', '.join(VARIANTS)}")
    if args.min_steps < 1:
        p.error(f"--min-steps must be >= 1, got {args.min_steps}")

    t_start = time.perf_counter()
    log = lambda s: print(s, flush=True)  # noqa: E731
    info = machine()
    log(f"machine: {json.dumps(info)}")
    from unilab.robots.scene import RobotModelError

    try:
        xml = g1_xml(*model_args)
    except RobotModelError as exc:
        p.error(str(exc))  # one line, exit 2
    model = mujoco.MjModel.from_xml_string(xml)
    s_int, s_full, facts = settled(model, args.kp_scale)
    facts["model"] = f"{args.mjcf}, actuators={args.actuators}" if args.mjcf else "unilab.robots.g1"
    if args.feet != "model":
        facts["model"] += f", feet={args.feet}"
    from unisim import SimSpec
    from unisim.backends.mujoco import MujocoBackend

    probe = MujocoBackend(SimSpec(mjcf=xml, num_envs=1, nthread=1, tracked_bodies=tracked_bodies()))
    if probe.batch.raw.nstate != len(s_int):  # the added sensors must not change the state
        raise SystemExit("the backend's model has another state size than the plain G1")
    probe.close()
    ctrl = model.key_ctrl[0].copy()
    log(f"G1 settled: {json.dumps(facts)}; nq {model.nq} nv {model.nv} nu {model.nu} "
        f"nbody {model.nbody} nsensordata {model.nsensordata}")
    checks = check_bit_identical(xml)
    log(f"bit-identical to a plain mj_step loop: {checks}")

    cells = []
    for n in args.nworld:
        for t in args.threads:
            variants = []
            for v in args.variants:
                if v in SLOW and n not in args.slow_nworld:
                    continue
                if v == "rollout" and t not in args.slow_threads:
                    continue
                if v == "pyloop" and t != 1:
                    continue
                variants.append(v)
            cells.append(run_cell(xml, model, n, t, variants, args, s_int, s_full, ctrl,
                                  log))
            if args.out:  # after every cell: a run stopped by a time limit keeps what it measured
                _write_json(args.out, {"machine": info, "model": facts, "args": vars(args),
                                       "checks": checks, "cells": cells, "partial": True})
    sizes = [n for n in args.bridge_nworld if n > 0]
    bridge = bridge_costs(xml, sizes) if sizes else []
    for b in bridge:
        log(f"  bridge: {json.dumps(b)}")
    mem = []
    if args.memory_nworld:
        mem.append(run_memory_probe(args.memory_nworld, False, args))
        if args.memory_persistent:
            mem.append(run_memory_probe(args.memory_nworld, True, args))
        for m in mem:
            log(f"  memory: {json.dumps(m)}")
    elapsed = time.perf_counter() - t_start
    shown = [v for v in VARIANTS if v in args.variants]
    table = fmt_table(cells, shown, mem, bridge, checks, facts, info, elapsed, args.clock)
    if args.out:
        result = {"machine": info, "model": facts, "args": vars(args), "checks": checks,
                  "cells": cells, "bridge": bridge, "memory": mem, "elapsed_s": elapsed,
                  "table": table.splitlines()}
        _write_json(args.out, result)
    print()
    print(table, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
