"""Video of a g1_walk_flat run's exported policy following a script of velocity commands.

One command, from the repository root (packages installed; offscreen OpenGL: EGL or OSMesa):

    python benchmarks/onnx_video.py logs/sac/g1_walk_flat/RUN --out walk.mp4 --strip walk.png

Unlike ``unilab play`` it needs no checkpoint: it rolls out ``<run>/policy.onnx`` (onnxruntime,
CPU) in one world of the run's env (rebuilt from ``run_config.json`` with no observation noise, no
pushes and no start offset; the policy is :class:`unilab.eval.policy.OnnxPolicy`), holds each
command of ``--script`` for its duration (:func:`unilab.eval.walking.hold_command`), and
renders world 0 with :func:`unilab.deploy.video.render_video` (camera tracking the pelvis).
``--strip`` also writes a row of evenly spaced frames as a PNG. It prints the frames, the falls
and the distance the base travelled.

``--script`` is ``vx:vy:wz@seconds`` items separated by commas (m/s, m/s, rad/s, s); the default
stands, walks forward at 0.5 and 1.0 m/s, turns while walking, steps sideways, walks back, stands.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

DEFAULT_SCRIPT = "0:0:0@1.5,0.5:0:0@3,1:0:0@3,0.5:0:0.8@3,0:0.3:0@2,-0.5:0:0@2.5,0:0:0@1.5"


def parse_script(text: str) -> list[tuple[tuple[float, float, float], float]]:
    """``"vx:vy:wz@s,..."`` -> ``[((vx, vy, wz), seconds), ...]``.

    Raises:
        ValueError: an item is not three numbers and a positive duration, naming the item.
    """
    script = []
    for item in filter(None, (x.strip() for x in text.split(","))):
        try:
            cmd, secs = item.split("@")
            vx, vy, wz = (float(v) for v in cmd.split(":"))
            seconds = float(secs)
        except ValueError:
            raise ValueError(f"--script item {item!r}: expected vx:vy:wz@seconds, e.g. 0.5:0:0@3") from None
        if seconds <= 0:
            raise ValueError(f"--script item {item!r}: the duration must be > 0 s, got {seconds:g}")
        script.append(((vx, vy, wz), seconds))
    if not script:
        raise ValueError("--script is empty: expected vx:vy:wz@seconds items")
    return script


@torch.no_grad()
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run", type=Path, help="run directory with policy.onnx and run_config.json")
    p.add_argument("--out", type=Path, required=True, help="mp4 to write")
    p.add_argument("--strip", type=Path, default=None, help="also write this PNG of evenly spaced frames")
    p.add_argument("--strip-frames", type=int, default=6)
    p.add_argument("--script", default=DEFAULT_SCRIPT, help="vx:vy:wz@seconds items, comma-separated")
    p.add_argument("--stride", type=int, default=2, help="render every stride-th env step")
    p.add_argument("--size", default="480x360", help="frame WIDTHxHEIGHT, pixels")
    args = p.parse_args(argv)
    script = parse_script(args.script)
    width, height = (int(v) for v in args.size.split("x"))

    torch.set_num_threads(1)
    from unilab.deploy.loading import make_env, run_config
    from unilab.deploy.video import render_video
    from unilab.eval.policy import OnnxPolicy
    from unilab.eval.walking import hold_command

    loaded = run_config(args.run, [
        "env.observation_noise=false", "env.push.enabled=false", "env.reset_xy_m=0.0",
        "env.reset_yaw_rad=0.0", "sim.nthread=1", "training.seed=0",
    ], checkpoint=args.run / "policy.onnx", play=False)
    env = make_env(loaded, 1)
    policy = OnnxPolicy(args.run / "policy.onnx")
    obs, qpos, falls, step = env.reset(), [], 0, 0
    for cmd, seconds in script:
        hold_command(env, cmd)  # from this step on
        for _ in range(round(seconds / env.step_dt)):
            obs, _, terminated, _, _ = env.step(policy(obs["actor"]))
            falls += int(terminated.sum())
            if step % args.stride == 0:
                qpos.append(env.backend.qpos[0].double().numpy().copy())
            step += 1
    frames = np.stack(qpos)
    result = render_video(env.cfg.mjcf, frames, args.out, fps=1.0 / (env.step_dt * args.stride),
                          width=width, height=height)
    print(f"{result.frames} frames, {result.fps:g} fps, {result.gl}; {step} env steps, falls {falls}, "
          f"base travelled {np.linalg.norm(frames[-1, :2] - frames[0, :2]):.2f} m (start to end)")
    if args.strip:
        import av
        from PIL import Image

        with av.open(str(args.out)) as container:
            decoded = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
        picks = np.linspace(0, len(decoded) - 1, args.strip_frames + 2).round().astype(int)[1:-1]
        Image.fromarray(np.concatenate([decoded[i] for i in picks], axis=1)).save(args.strip)
        print(f"strip: {args.strip} (frames {', '.join(map(str, picks))})")
    env.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
