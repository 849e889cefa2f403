"""Velocity-tracking probe of an exported g1_walk_flat policy: hold fixed commands, measure.

One command, from the repository root (packages installed, or PYTHONPATH set to the four src dirs):

    python benchmarks/tracking_probe.py logs/sac/g1_walk_flat/RUN
    python benchmarks/tracking_probe.py logs/sac/g1_walk_flat/RUN --num-envs 16 --settle-s 2 --duration-s 8 --push
    python benchmarks/tracking_probe.py logs/sac/g1_walk_flat/RUN --cases stand,yaw+0.5,yaw-0.5 --json probe.json

It loads ``<run>/policy.onnx`` (onnxruntime, CPU) and ``<run>/run_config.json``, and rebuilds the
run's env through the same plugins as ``unilab play`` (:func:`unilab.deploy.loading.make_env`),
from the run's own env config with these changes: no observation noise (``--noise`` keeps it), no
pushes (``--push`` keeps them), no start offset in x/y or yaw, no standing draws, and the command
held fixed per case. No checkpoint (``model_*.pt``) is needed: the ONNX graph takes the **raw**
actor observation (the normalizer is in the graph; its metadata lists the columns: base_lin_vel,
base_ang_vel, projected_gravity, joint_pos, joint_vel, actions, command, then the gait clock's 4
columns when ``env.gait.enabled``) and returns actions in the env's units, exactly what
``env.step`` takes, as in :func:`unilab.deploy.loading.rollout`.

Fixing the command: each case sets the ``twist`` command's ranges
(:class:`unilab.envs.mdp.commands.UniformVelocityCommand`) to the single value (lo == hi),
standing_fraction 0 and a resampling time far beyond the rollout, then resets every row; a row
that falls and auto-resets draws the same command again. The gait clock reads the twist command
itself (stand when |cmd| < 0.01). The held command is checked at every step.

Per case, after ``--settle-s`` s, over ``--duration-s`` s and all rows (steps of a row that
ended in that step are left out, the robot view then shows the reset state), it prints:

* cmd vx vy wz: the command; vx vy wz: mean achieved base-frame linear velocity (m/s) and yaw
  rate (rad/s) of the pelvis (``env.robot.base_lin_vel_b``, ``base_ang_vel_b``, the reward's
  inputs);
* wxy2: mean |w_xy|^2, pelvis roll/pitch rate squared (rad^2/s^2);
* K_ang: the track_angular_velocity kernel exp(-((wz - cmd_wz)^2 + |w_xy|^2) / 0.5), mean, and
  its two factors averaged separately: K_yaw = exp(-(wz - cmd_wz)^2 / 0.5) and
  K_wxy = exp(-|w_xy|^2 / 0.5) (K_ang = K_yaw * K_wxy per step);
* K_lin: exp(-(|v_xy - cmd_xy|^2 + v_z^2) / 0.25), mean;
* falls: terminations other than time-outs over the whole case (settling included), rows.

The kernels are recomputed here and checked against the env's own reward functions
(:func:`unilab.envs.mdp.rewards.track_angular_velocity`, ``track_linear_velocity``). In the
run's TensorBoard units (``Episode_Reward/<term>`` = weight * mean kernel for a full episode),
the angular term of a case is ``2.0 * K_ang``.

Other cases and options: ``random`` keeps the run's own command distribution (resampled, standing
draws included; compare its ``2 * K_ang`` with the run's ``Episode_Reward/track_angular_velocity``);
``vx:vy:wz`` is a custom command; ``--explore-std S`` emulates SAC's stochastic collection
(:class:`ExploringPolicy`, pre-tanh noise; the ONNX graph has no std head, so S is a guess, e.g.
from ``Policy/entropy``); ``--mirror-policy`` rolls out the policy's mirror image M pi(M o) (with a
correct mirror, its vy and wz biases come out negated); ``--trace F.npz`` saves each case's
per-step base velocities for spectra.

``--mirror-check`` also reports how far the policy is from left/right equivariant on the
observations it saw: |pi(M o) - M pi(o)| with the env's mirror (:attr:`ManagerBasedRlEnv.mirror`).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch

from unilab_rl.vecenv import apply_mirror

CASES: dict[str, tuple[float, float, float]] = {
    "stand": (0.0, 0.0, 0.0),
    "fwd0.5": (0.5, 0.0, 0.0),
    "fwd1.0": (1.0, 0.0, 0.0),
    "back0.5": (-0.5, 0.0, 0.0),
    "left0.3": (0.0, 0.3, 0.0),
    "right0.3": (0.0, -0.3, 0.0),
    "yaw+0.5": (0.0, 0.0, 0.5),
    "yaw-0.5": (0.0, 0.0, -0.5),
    "yaw+1.0": (0.0, 0.0, 1.0),
    "yaw-1.0": (0.0, 0.0, -1.0),
    "fwd0.5_yaw+0.5": (0.5, 0.0, 0.5),
    "fwd0.5_yaw-0.5": (0.5, 0.0, -0.5),
    "fwd0.5_left0.3": (0.5, 0.3, 0.0),
}
"""Case name -> commanded (vx m/s, vy m/s, wz rad/s)."""

ANG_STD2 = 0.5  # g1_walk_flat: track_angular_velocity std = sqrt(0.5)
LIN_STD2 = 0.25  # track_linear_velocity std = sqrt(0.25)


def load_config(run_dir: Path, overrides: list[str]):
    """The run's config with ``overrides`` (not the play settings: the run's own command ranges
    stay), as a :class:`unilab.deploy.loading.LoadedRun` for
    :func:`unilab.deploy.loading.make_env` (which reads only ``cfg``, ``task`` and ``task_reg``);
    no checkpoint is loaded (``checkpoint`` names the ONNX file)."""
    from unilab.deploy.loading import run_config

    return run_config(run_dir, overrides, checkpoint=run_dir / "policy.onnx", play=False)


class MirroredPolicy:
    """The mirror image of ``policy``: o -> M_a(policy(M_o(o))) (a left/right swapped robot
    brain); with a correct mirror, its biases are ``policy``'s with vy and wz negated."""

    def __init__(self, policy, mirror) -> None:
        self.policy, self.mirror, self.dim = policy, mirror, policy.dim

    def __call__(self, obs: torch.Tensor) -> torch.Tensor:
        return apply_mirror(self.policy(apply_mirror(obs, self.mirror.obs["actor"])), self.mirror.actions)


class ExploringPolicy:
    """Emulates SAC's stochastic collection from a deterministic policy: with the action box's
    centre c and half-range h, u = atanh((a - c) / h) is the actor's mean, and the action is
    c + h * tanh(u + std * eps), eps ~ N(0, 1) per step and joint (one std for all joints; the
    ONNX graph has no log-std head, so std is a guess, e.g. from the run's Policy/entropy)."""

    def __init__(self, policy, low: torch.Tensor, high: torch.Tensor, std: float, seed: int = 0) -> None:
        self.policy, self.std, self.dim = policy, std, policy.dim
        self.centre, self.half = (high + low).cpu() / 2, (high - low).cpu() / 2
        self.gen = torch.Generator().manual_seed(seed)

    def __call__(self, obs: torch.Tensor) -> torch.Tensor:
        a = self.policy(obs)
        u = torch.atanh(((a - self.centre) / self.half).clamp(-1 + 1e-6, 1 - 1e-6))
        return self.centre + self.half * torch.tanh(u + self.std * torch.randn(u.shape, generator=self.gen))


class OnnxPolicy:
    """policy.onnx as a callable on (B, D) float32 torch tensors."""

    def __init__(self, path: Path, threads: int = 1) -> None:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        self.input = self.session.get_inputs()[0].name
        self.dim = self.session.get_inputs()[0].shape[1]

    def __call__(self, obs: torch.Tensor) -> torch.Tensor:
        out = self.session.run(None, {self.input: obs.detach().cpu().numpy().astype(np.float32)})[0]
        return torch.from_numpy(out)


def hold_command(env, cmd: tuple[float, float, float] | None, run_ranges=None) -> None:
    """Make the twist command ``cmd`` for every row, now and after any resample or reset; ``None``:
    the run's own command distribution ``run_ranges`` (``env.commands.*`` of the run config)."""
    from unilab.envs.mdp.commands import VelocityCommandRanges

    twist = env.commands["twist"]
    if cmd is None:
        r = run_ranges
        twist.ranges = VelocityCommandRanges(
            lin_vel_x=tuple(r.lin_vel_x), lin_vel_y=tuple(r.lin_vel_y), ang_vel_z=tuple(r.ang_vel_z),
            resampling_time_s=tuple(r.resampling_time_s), standing_fraction=r.standing_fraction,
        )
        return
    twist.ranges = VelocityCommandRanges(
        lin_vel_x=(cmd[0], cmd[0]), lin_vel_y=(cmd[1], cmd[1]), ang_vel_z=(cmd[2], cmd[2]),
        resampling_time_s=(1e9, 1e9), standing_fraction=0.0,
    )


@torch.no_grad()
def run_case(env, policy, name, cmd, settle_steps, measure_steps, mirror_check=False, trace=None,
             cmd_cols=slice(96, 99), run_ranges=None) -> dict:
    """Roll ``policy`` out under command ``cmd`` (None: the run's own command distribution) and
    return the case's row (see the module docstring)."""
    from unilab.envs.mdp import rewards as R

    hold_command(env, cmd, run_ranges)
    obs = env.reset()["actor"]
    want = None if cmd is None else torch.tensor(cmd, dtype=torch.float32)
    n = env.num_envs
    acc = {k: [] for k in ("vx", "vy", "vz", "wx", "wy", "wz", "cwz", "k_ang", "k_lin", "k_ang_env", "k_lin_env")}
    falls = 0
    fell_rows = torch.zeros(n, dtype=torch.bool)
    mirror_err, act_scale = [], []
    for t in range(settle_steps + measure_steps):
        if want is not None and not torch.allclose(env.commands["twist"].command.cpu(), want.expand(n, 3)):
            raise RuntimeError(f"{name}: the twist command moved off {cmd}")
        if want is not None and not torch.allclose(obs[:, cmd_cols].cpu(), want.expand(n, 3)):
            raise RuntimeError(f"{name}: the command columns of the observation are not {cmd}")
        actions = policy(obs)
        if mirror_check and t >= settle_steps:
            m = env.mirror
            mirrored = policy(apply_mirror(obs, m.obs["actor"]))
            mirror_err.append((mirrored - apply_mirror(actions, m.actions)).abs().mean(dim=1))
            act_scale.append(actions.abs().mean(dim=1))
        out, _, terminated, truncated, _ = env.step(actions.to(env.device))
        obs = out["actor"]
        term = terminated.cpu() & ~truncated.cpu()
        falls += int(term.sum())
        fell_rows |= term
        if t < settle_steps:
            continue
        ok = ~(terminated | truncated).cpu()
        v = env.robot.base_lin_vel_b.cpu()[ok]
        w = env.robot.base_ang_vel_b.cpu()[ok]
        c = env.commands["twist"].command.cpu()[ok]
        for i, k in enumerate(("vx", "vy", "vz")):
            acc[k].append(v[:, i])
        for i, k in enumerate(("wx", "wy", "wz")):
            acc[k].append(w[:, i])
        acc["cwz"].append(c[:, 2])
        acc["k_ang"].append(torch.exp(-((w[:, 2] - c[:, 2]) ** 2 + (w[:, :2] ** 2).sum(1)) / ANG_STD2))
        acc["k_lin"].append(torch.exp(-(((v[:, :2] - c[:, :2]) ** 2).sum(1) + v[:, 2] ** 2) / LIN_STD2))
        acc["k_ang_env"].append(R.track_angular_velocity(env, std=math.sqrt(ANG_STD2)).cpu()[ok])
        acc["k_lin_env"].append(R.track_linear_velocity(env, std=math.sqrt(LIN_STD2)).cpu()[ok])
        if trace is not None:  # (steps, N, 6) base-frame v, w of every row (NaN where it ended)
            vw = torch.cat((env.robot.base_lin_vel_b.cpu(), env.robot.base_ang_vel_b.cpu()), dim=1)
            vw[~ok] = float("nan")
            trace.append(vw.numpy())
    a = {k: torch.cat(v).double() for k, v in acc.items()}
    for mine, theirs in (("k_ang", "k_ang_env"), ("k_lin", "k_lin_env")):
        if not torch.allclose(a[mine], a[theirs], atol=1e-5):
            raise RuntimeError(f"{name}: {mine} differs from the env's reward function")
    wxy2 = a["wx"] ** 2 + a["wy"] ** 2
    yaw_err2 = (a["wz"] - a["cwz"]) ** 2
    row = {
        "case": name, "cmd": None if cmd is None else list(cmd),
        "vx": a["vx"].mean().item(), "vy": a["vy"].mean().item(), "wz": a["wz"].mean().item(),
        "wz_std": a["wz"].std().item(),
        "wx2": (a["wx"] ** 2).mean().item(), "wy2": (a["wy"] ** 2).mean().item(),
        "wxy2": wxy2.mean().item(), "yaw_err2": yaw_err2.mean().item(),
        "k_ang": a["k_ang"].mean().item(),
        "k_yaw": torch.exp(-yaw_err2 / ANG_STD2).mean().item(),
        "k_wxy": torch.exp(-wxy2 / ANG_STD2).mean().item(),
        "k_lin": a["k_lin"].mean().item(),
        "falls": falls, "rows_fell": int(fell_rows.sum()), "samples": int(a["vx"].numel()),
    }
    if mirror_err:
        row["mirror_err"] = torch.cat(mirror_err).mean().item()
        row["mean_abs_action"] = torch.cat(act_scale).mean().item()
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run", type=Path, help="run directory with policy.onnx and run_config.json")
    p.add_argument("--onnx", type=Path, default=None, help="ONNX file (default <run>/policy.onnx)")
    p.add_argument("--num-envs", type=int, default=16)
    p.add_argument("--threads", type=int, default=2, help="physics threads")
    p.add_argument("--settle-s", type=float, default=2.0, help="s after reset not measured")
    p.add_argument("--duration-s", type=float, default=8.0, help="s measured per case")
    p.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of: {', '.join(CASES)}; "
                   "vx:vy:wz for a custom command; 'random' for the run's own command distribution "
                   "(resampled as in training, standing draws included)")
    p.add_argument("--push", action="store_true", help="keep the run's pushes")
    p.add_argument("--noise", action="store_true", help="keep the run's observation noise")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--explore-std", type=float, default=0.0,
                   help="emulate SAC's stochastic collection: pre-tanh Gaussian noise of this std (ExploringPolicy)")
    p.add_argument("--mirror-check", action="store_true", help="also measure |pi(M o) - M pi(o)|")
    p.add_argument("--mirror-policy", action="store_true",
                   help="roll out the policy's mirror image M pi(M o) instead (a correct mirror flips its vy, wz biases)")
    p.add_argument("--json", type=Path, default=None, help="write the rows as JSON here")
    p.add_argument("--trace", type=Path, default=None,
                   help="write an .npz of each case's measured base-frame (vx, vy, vz, wx, wy, wz) per step and row")
    p.add_argument("overrides", nargs="*", default=[], help="extra key=value config overrides")
    args = p.parse_args(argv)

    torch.set_num_threads(1)
    from unilab.deploy.loading import make_env
    from unilab.deploy.export import read_metadata

    onnx_path = args.onnx or args.run / "policy.onnx"
    overrides = [
        f"env.observation_noise={'true' if args.noise else 'false'}",
        f"env.push.enabled={'true' if args.push else 'false'}",
        "env.reset_xy_m=0.0", "env.reset_yaw_rad=0.0",
        f"sim.nthread={args.threads}", f"training.seed={args.seed}", *args.overrides,
    ]
    loaded = load_config(args.run, overrides)
    env = make_env(loaded, args.num_envs)
    policy = OnnxPolicy(onnx_path)
    if args.mirror_policy:
        policy = MirroredPolicy(policy, env.mirror)
    if args.explore_std > 0:
        policy = ExploringPolicy(policy, env.action_low, env.action_high, args.explore_std, args.seed)
    run_ranges = loaded.cfg.env.commands
    meta = read_metadata(onnx_path)
    layout = [(t["name"], t["start"], t["stop"]) for t in meta["observation"]["terms"]]
    env_layout = env.observation_manager.layout["actor"]
    if [tuple(x) for x in env_layout] != layout or policy.dim != env.obs_dims["actor"]:
        raise SystemExit(f"observation layout of the ONNX {layout} != the env's {env_layout}")
    cmd_cols = next(slice(a, b) for n, a, b in layout if n == "command")
    if not meta.get("normalizer", {}).get("in_graph", False):
        raise SystemExit("this ONNX does not carry its normalizer; the probe feeds raw observations")
    print(f"run {args.run} | onnx iteration {meta['source'].get('iteration')} | obs {policy.dim} "
          f"({', '.join(n for n, _, _ in layout)}) | {args.num_envs} envs | push {args.push} | "
          f"noise {args.noise} | settle {args.settle_s:g} s, measure {args.duration_s:g} s")

    settle = int(round(args.settle_s / env.step_dt))
    measure = int(round(args.duration_s / env.step_dt))
    rows, traces = [], {}
    hdr = (f"{'case':<15} {'cmd vx':>6} {'vy':>5} {'wz':>5} | {'vx':>6} {'vy':>6} {'wz':>6} "
           f"| {'wxy2':>6} {'K_ang':>5} {'K_yaw':>5} {'K_wxy':>5} {'K_lin':>5} | falls")
    print(hdr + ("  mirr_err" if args.mirror_check else ""))
    print("-" * len(hdr))
    try:
        for name in args.cases.split(","):
            name = name.strip()
            if name == "random":
                cmd = None
            else:
                cmd = CASES[name] if name in CASES else tuple(float(x) for x in name.split(":"))
            t0 = time.perf_counter()
            trace = [] if args.trace else None
            r = run_case(env, policy, name, cmd, settle, measure, args.mirror_check, trace,
                         cmd_cols=cmd_cols, run_ranges=run_ranges)
            if trace is not None:
                traces[name] = np.stack(trace)
            r["wall_s"] = time.perf_counter() - t0
            rows.append(r)
            c = "   ---   ---   ---" if cmd is None else f"{cmd[0]:>6.2f} {cmd[1]:>5.2f} {cmd[2]:>5.2f}"
            line = (f"{name:<15} {c} | {r['vx']:>6.2f} {r['vy']:>6.2f} "
                    f"{r['wz']:>6.2f} | {r['wxy2']:>6.3f} {r['k_ang']:>5.2f} {r['k_yaw']:>5.2f} {r['k_wxy']:>5.2f} "
                    f"{r['k_lin']:>5.2f} | {r['falls']}")
            if args.mirror_check:
                line += f"  {r['mirror_err']:.3f}/{r['mean_abs_action']:.2f}"
            print(line, flush=True)
    finally:
        env.close()
    if args.trace:
        np.savez_compressed(args.trace, dt=env.step_dt, **traces)
    if args.json:
        args.json.write_text(json.dumps({"run": str(args.run), "overrides": overrides, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
