"""The tracking suite: does the deterministic policy play every clip of the motion set?

Each clip is played from its first frame (one row: with the evaluation settings, no noise, no
pushes, no domain randomization and the exact reference state, that rollout is deterministic)
and from ``num_envs`` random start frames (each leaving at least ``random_min_s`` of the clip).
A row completes when it reaches the clip's last frame; it fails when the env terminates it: the
suite's settings set the task's failure terms to the thresholds BeyondMimic-style trackers count
(anchor height error > 0.25 m; anchor orientation: |g_z - g_z_ref| > 0.8 of the anchor's
projected gravity, BeyondMimic ``bad_anchor_ori``, which is about 78 deg of tilt off an upright
reference) and leave the others (end-effector height) out.

Per clip and start (measured on the steps a row played, before it ended):

- body position error, m: mean over the tracked bodies of |p_b - p_b^ref| with the reference
  moved onto the robot's anchor (xy and yaw; ``anchor-relative``) and in the world frame;
- joint position error, rad: mean over joints of |q_j - q_j^ref|;
- body orientation error, rad: mean over bodies of the angle between the body and the
  anchor-relative reference body;
- each tracking kernel of the task (its ``motion_*`` reward terms, exp(-error / std^2) in [0, 1]).

The env's motion command is read through a small interface: ``clip_names`` and
``clip_num_frames`` (one entry per clip; absent: one clip of ``num_frames`` frames), ``start_at(
env_ids, frames, clip_ids)`` to place rows, and the reference tensors of
:class:`unilab.tasks.g1_motion_tracking.mdp.MotionCommand` (``joint_pos``, ``body_pos_w``,
``body_pos_relative_w``, ``body_quat_relative_w``). Clips are played in rounds of ``1 + num_envs``
rows, one clip per round, in the one env.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from unilab.eval.suite import EvalContext, EvalSuite, Plan, Policy, SuiteResult, check_num_envs, select_cases
from unilab.utils.math import quat_error_magnitude

ERRORS = ("body_pos_error_rel_m", "body_pos_error_world_m", "joint_pos_error_rad", "body_ori_error_rad")
"""The error figures of a tracking record, in table order."""


def clips_of(command, fallback_name: str) -> list[tuple[str, int]]:
    """(name, frames) of each clip a motion command holds: its ``clip_names`` and
    ``clip_num_frames``, or one clip ``fallback_name`` of ``num_frames`` frames."""
    names = getattr(command, "clip_names", None)
    frames = getattr(command, "clip_num_frames", None)
    if names is not None and frames is not None:
        return [(str(n), int(f)) for n, f in zip(names, frames)]
    return [(fallback_name, int(command.num_frames))]


@dataclass(frozen=True)
class TrackingSuite(EvalSuite):
    """Every clip of the motion set, from frame 0 and from random frames (module docstring).

    Attributes:
        command: name of the env's motion command term.
        eval_overrides: ``key=value`` evaluation settings of the task (no noise, pushes, domain
            randomization or reset noise; starts at frame 0; no time-out within a clip; the
            failure thresholds).
        clip_name_key: config key of the motion file, whose stem names a single clip.
        random_min_s: a random start leaves at least this much of the clip, s.
        completion_bar: share of clips completed from frame 0 the suite needs to pass.
        kernel_prefix: reward terms whose names start with it are reported as kernels.
        body_pos_kernel: the kernel the bar reads; every clip completed from frame 0 needs its
            mean at least ``body_pos_kernel_bar``.
    """

    name: str = "tracking"
    description: str = "every clip from its first frame and from random frames: completion, errors, kernels"
    command: str = "motion"
    eval_overrides: tuple[str, ...] = ()
    clip_name_key: str = "env.motion.file"
    random_min_s: float = 1.0
    completion_bar: float = 0.95
    kernel_prefix: str = "motion_"
    body_pos_kernel: str = "motion_body_pos"
    body_pos_kernel_bar: float = 0.9
    default_num_envs: int = 4
    training_num_envs: int = 1

    def plan(self, cfg, cases: list[str] | None, num_envs: int | None) -> Plan:
        n = check_num_envs(num_envs, self.default_num_envs)
        return Plan(rows=1 + n, overrides=tuple(self.eval_overrides), cases=tuple(cases or ()), num_envs=n)

    def _fallback_name(self, cfg) -> str:
        value = cfg
        for part in self.clip_name_key.split("."):
            value = getattr(value, part, None)
        return Path(str(value)).stem if value else "default"

    @torch.no_grad()
    def run(self, env, policy: Policy, ctx: EvalContext) -> SuiteResult:
        from unilab.errors import UserError

        cmd = getattr(env, "commands", {}).get(self.command)
        if cmd is None or not hasattr(cmd, "start_at"):
            raise UserError(f"the {self.name} suite needs a motion command {self.command!r} with start_at(env_ids, "
                            f"frames, clip_ids) (env.commands)")
        clips = clips_of(cmd, self._fallback_name(ctx.cfg))
        names = [c[0] for c in clips]
        chosen = select_cases(list(ctx.plan.cases), names, what="clip")
        n = ctx.plan.num_envs
        min_steps = max(1, int(round(self.random_min_s / env.step_dt)))
        terms = [name for name in getattr(env.cfg, "rewards", {}) if name.startswith(self.kernel_prefix)]
        gen = torch.Generator().manual_seed(ctx.seed)
        total_steps = sum(frames - 1 for name, frames in clips if name in chosen)
        done_steps, steps = 0, 0
        records = []
        for clip_id, (name, frames) in enumerate(clips):
            if name not in chosen:
                continue
            hi = max(0, frames - 1 - min_steps)
            starts = torch.cat((torch.zeros(1, dtype=torch.long), torch.randint(0, hi + 1, (n,), generator=gen)))
            rows = self._play(env, policy, ctx, cmd, clip_id, frames, starts, terms,
                              lambda k: ctx.progress(done_steps + k, total_steps) if ctx.progress else None)
            done_steps += frames - 1
            steps += rows.pop("steps")
            records.append(self._record(name, frames, env.step_dt, starts, rows, terms))
        completed = sum(r["from_start"]["completed"] for r in records)
        kernel_ok = all(
            r["from_start"]["kernels"].get(self.body_pos_kernel) is None
            or r["from_start"]["kernels"][self.body_pos_kernel] >= self.body_pos_kernel_bar
            for r in records if r["from_start"]["completed"]
        )
        share = completed / len(records)
        return SuiteResult(
            suite=self.name,
            headline=share,
            headline_text=f"{completed}/{len(records)} clips completed from frame 0",
            passed=share >= self.completion_bar and kernel_ok,
            cases=records,
            columns=["clip", "frames", "from frame 0", "body pos rel / world m", "joint rad", "body ori rad",
                     self.body_pos_kernel, "random starts", "result"],
            rows=[self._row(r) for r in records],
            settings={"layout": f"per clip 1 row from frame 0 and {n} from random frames", "rows_per_clip": 1 + n, "random_starts_per_clip": n, "random_min_s": self.random_min_s,
                      "completion_bar": self.completion_bar, "body_pos_kernel": self.body_pos_kernel,
                      "body_pos_kernel_bar": self.body_pos_kernel_bar, "seed": ctx.seed},
            notes=self._notes(records),
            steps=steps,
        )

    def _play(self, env, policy, ctx, cmd, clip_id: int, frames: int, starts: torch.Tensor, terms, progress):
        """Roll every row of one clip out from ``starts``; per-row sums of the figures."""
        rows = env.num_envs
        if rows != len(starts):
            raise ValueError(f"the env has {rows} rows, the round {len(starts)}")
        env.reset()
        ids = torch.arange(rows, device=env.device)
        cmd.start_at(ids, starts.to(env.device), torch.full((rows,), clip_id, dtype=torch.long, device=env.device))
        obs = env.observation_manager.compute()
        steps = int(frames - 1 - starts.min())
        alive = torch.ones(rows, dtype=torch.bool)
        completed = torch.zeros(rows, dtype=torch.bool)
        played = torch.zeros(rows, dtype=torch.float64)
        sums = torch.zeros(rows, len(ERRORS) + len(terms), dtype=torch.float64)
        failure: list[str | None] = [None] * rows
        tm = env.termination_manager
        names = list(tm.names)
        timeouts = {name for name, term in tm.terms.items() if term.time_out}
        t = 0
        for t in range(steps):
            actions = policy(obs[ctx.group].to("cpu", torch.float32))
            obs, _, terminated, truncated, _ = env.step(actions.to(env.device))
            terminated, truncated = terminated.cpu(), truncated.cpu()
            for r in (terminated & alive).nonzero().flatten().tolist():
                fired = [names[j] for j in tm.last[r].cpu().nonzero().flatten().tolist() if names[j] not in timeouts]
                failure[r] = fired[0] if fired else "terminated"
            completed |= truncated & alive
            alive &= ~(terminated | truncated)
            if alive.any():
                a = alive.double()
                played += a
                sums += self._figures(env, cmd, terms) * a[:, None]
            progress(t + 1)
            if not alive.any():
                break
        return {"completed": completed, "played": played, "sums": sums, "failure": failure,
                "steps": rows * (t + 1)}

    @staticmethod
    def _figures(env, cmd, terms) -> torch.Tensor:
        """(N, 4 + K) float64: the errors of :data:`ERRORS` and the kernels of ``terms``, now."""
        robot = env.robot
        cols = [
            torch.linalg.vector_norm(cmd.body_pos_relative_w - robot.body_pos_w, dim=-1).mean(dim=-1),
            torch.linalg.vector_norm(cmd.body_pos_w - robot.body_pos_w, dim=-1).mean(dim=-1),
            (robot.joint_pos - cmd.joint_pos).abs().mean(dim=-1),
            quat_error_magnitude(cmd.body_quat_relative_w, robot.body_quat_w).mean(dim=-1),
        ]
        for name in terms:
            term = env.cfg.rewards[name]
            cols.append(term.func(env, **term.params))
        return torch.stack([c.to("cpu", torch.float64) for c in cols], dim=1)

    def _record(self, name: str, frames: int, step_dt: float, starts: torch.Tensor, rows: dict, terms) -> dict:
        keys = [*ERRORS, *terms]

        def figures(sel: torch.Tensor) -> dict[str, Any]:
            played = float(rows["played"][sel].sum())
            means = (rows["sums"][sel].sum(dim=0) / played).tolist() if played else [None] * len(keys)
            out = dict(zip(ERRORS, means[: len(ERRORS)]))
            out["kernels"] = dict(zip(terms, means[len(ERRORS):]))
            out["steps_played"] = int(played)
            return out

        first = torch.zeros(len(starts), dtype=torch.bool)
        first[0] = True
        rest = ~first
        from_start = {"completed": bool(rows["completed"][0]), "failure": rows["failure"][0],
                      "frames_played": int(rows["played"][0]), **figures(first)}
        n = int(rest.sum())
        random = {
            "rows": n,
            "completed": int(rows["completed"][rest].sum()),
            "completed_share": float(rows["completed"][rest].double().mean()) if n else None,
            "start_frames": starts[rest].tolist(),
            "failures": [f for f, s in zip(rows["failure"][1:], rest[1:].tolist()) if s and f],
            **figures(rest),
        }
        kernel = from_start["kernels"].get(self.body_pos_kernel)
        passed = from_start["completed"] and (kernel is None or kernel >= self.body_pos_kernel_bar)
        return {"name": name, "frames": frames, "duration_s": (frames - 1) * step_dt, "from_start": from_start,
                "random_starts": random, "passed": passed}

    def _row(self, r: dict) -> list[str]:
        s, q = r["from_start"], r["random_starts"]

        def num(x, fmt=".3f") -> str:
            return "-" if x is None else format(x, fmt)

        first = "completed" if s["completed"] else f"failed after {s['frames_played'] + 1} steps ({s['failure']})"
        rnd = "-" if not q["rows"] else f"{q['completed']}/{q['rows']}"
        kernel = s["kernels"].get(self.body_pos_kernel)
        if r["passed"]:
            result = "pass"
        elif not s["completed"]:
            result = "FAIL: not completed"
        else:
            result = f"FAIL: {self.body_pos_kernel} < {self.body_pos_kernel_bar:g}"
        return [r["name"], str(r["frames"]), first,
                f"{num(s['body_pos_error_rel_m'])} / {num(s['body_pos_error_world_m'])}",
                num(s["joint_pos_error_rad"]), num(s["body_ori_error_rad"]), num(kernel), rnd, result]

    def _notes(self, records: list[dict]) -> list[str]:
        out = [f"errors and kernels from frame 0, mean over the steps played; pass: completed from frame 0 and "
               f"{self.body_pos_kernel} >= {self.body_pos_kernel_bar:g}; suite: >= {100 * self.completion_bar:g} % "
               f"of clips completed and every completed clip's {self.body_pos_kernel} at the bar"]
        for r in records:
            kernels = ", ".join(f"{k} {v:.3f}" for k, v in r["from_start"]["kernels"].items() if v is not None)
            if kernels:
                out.append(f"{r['name']} kernels from frame 0: {kernels}")
        return out


__all__ = ["ERRORS", "TrackingSuite", "clips_of"]
