"""The walking suite: does the deterministic policy go where it is told?

Each case holds one velocity command (v_x, v_y in m/s, yaw rate w_z in rad/s, base frame) on its
rows for a settling time, then measures for a window. All cases run in one batched env: rows are
cases x repeats, each row's command held fixed by :class:`HeldCommand` (a row that falls is
reset by the env and no longer measured). The repeats of a case differ by what the env still
draws at reset (e.g. the gait clock's phase and frequency, the drop height).

Nominal cases run with the suite's evaluation settings (no observation noise, no pushes, no
domain randomization, no start offset). Robustness cases, at forward 0.5 m/s, switch one of them
on for their rows only:

- ``push``: the task's interval events (pushes) fire on these rows; passes when at least
  ``push_min_up`` of the rows are still up at the end;
- ``obs_noise``: the task's observation noise on these rows
  (:attr:`unilab.envs.managers.ObservationManager.noise_rows`);
- ``dr``: the task's startup domain randomization applied to these rows (read from an env built
  with it on).

The pass rule of a command case (nominal, ``obs_noise``, ``dr``), on the case's mean over rows and
measured steps: |v_x - cmd| <= max(0.1, 0.15 |cmd|) m/s and the same for v_y;
|w_z - cmd| <= max(0.1, 0.2 |cmd|) rad/s; every commanded (non-zero) axis moves the commanded
way; no row falls (a termination other than a time-out, at any time of the case).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from unilab.config import layer_overrides
from unilab.eval.suite import EvalContext, EvalSuite, Plan, Policy, SuiteResult, check_num_envs

NOMINAL: tuple[tuple[str, tuple[float, float, float]], ...] = (
    ("stand", (0.0, 0.0, 0.0)),
    ("fwd0.5", (0.5, 0.0, 0.0)),
    ("fwd1.0", (1.0, 0.0, 0.0)),
    ("back0.5", (-0.5, 0.0, 0.0)),
    ("left0.3", (0.0, 0.3, 0.0)),
    ("right0.3", (0.0, -0.3, 0.0)),
    ("yaw+0.5", (0.0, 0.0, 0.5)),
    ("yaw-0.5", (0.0, 0.0, -0.5)),
    ("yaw+1.0", (0.0, 0.0, 1.0)),
    ("yaw-1.0", (0.0, 0.0, -1.0)),
    ("fwd0.5_yaw+0.5", (0.5, 0.0, 0.5)),
    ("fwd0.5_left0.3", (0.5, 0.3, 0.0)),
)
"""Nominal case name -> command (v_x m/s, v_y m/s, w_z rad/s). ``fwd_top`` (the top of the run's
v_x training range) follows ``fwd1.0`` when that top is neither 0.5 nor 1.0."""

ROBUSTNESS = ("push", "obs_noise", "dr")
"""Robustness case names, each at :attr:`WalkingSuite.robustness_command`."""


class HeldCommand:
    """A velocity command term that holds each row's command fixed: it replaces the env's command
    term of that name (``env.commands[name]``), so observations, rewards and the gait clock read
    the held values, and a row reset by the env gets its held command back.

    Args:
        env: the env.
        values: (N, 3) float32 per-row command (m/s, m/s, rad/s), or (3,) for every row.

    Attributes:
        command: (N, 3) float32 the command the env reads.
        is_standing: (N,) bool rows held at zero.
    """

    def __init__(self, env, values: torch.Tensor) -> None:
        self.env = env
        self.held = torch.zeros(env.num_envs, 3, device=env.device)
        self.command = torch.zeros_like(self.held)
        self.set(values)

    def set(self, values: torch.Tensor | tuple[float, float, float]) -> None:
        """Hold ``values`` ((N, 3) or (3,)) from now on, on every row."""
        self.held[:] = torch.as_tensor(values, dtype=torch.float32).to(self.env.device)
        self.command.copy_(self.held)
        self.is_standing = (self.held == 0).all(dim=1)

    def update(self, dt: float) -> None:  # noqa: ARG002 - the command term interface
        """Nothing to resample: the command stays the held one."""
        self.command.copy_(self.held)

    def reset(self, env_ids: torch.Tensor) -> None:
        """Rows ``env_ids`` get their held command again."""
        self.command[env_ids] = self.held[env_ids]


def hold_command(env, values, name: str = "twist") -> HeldCommand:
    """Install (or update) a :class:`HeldCommand` as ``env.commands[name]`` and return it.

    Raises:
        KeyError: the env has no command term ``name``.
    """
    current = env.commands[name]
    if isinstance(current, HeldCommand):
        current.set(values)
        return current
    held = HeldCommand(env, values)
    env.commands[name] = held
    return held


@dataclass(frozen=True)
class _Case:
    name: str
    command: tuple[float, float, float]
    kind: str  # "nominal", "custom", "push", "obs_noise" or "dr"


def _dotted(cfg: Any, key: str) -> Any:
    """``cfg.a.b.c`` for ``key`` ``"a.b.c"``; None when a part is missing."""
    value = cfg
    for part in key.split("."):
        value = getattr(value, part, None)
        if value is None:
            return None
    return value


def _parse_custom(name: str) -> tuple[float, float, float] | None:
    """``"vx:vy:wz"`` -> the command, None when ``name`` is not three numbers."""
    parts = name.split(":")
    if len(parts) != 3:
        return None
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        return None
    return values if all(math.isfinite(v) for v in values) else None  # type: ignore[return-value]


@dataclass(frozen=True)
class WalkingSuite(EvalSuite):
    """Velocity-command cases of a locomotion task (module docstring).

    Attributes:
        command: name of the env's velocity command term, (N, 3) ``command`` (v_x, v_y, w_z).
        settle_s: s after reset not measured (the robot gets going).
        measure_s: s measured.
        eval_overrides: ``key=value`` evaluation settings of the task (noise, pushes and domain
            randomization off, no start offset, an episode longer than the case).
        range_keys: config keys of the training ranges of v_x, v_y, w_z (a case outside them is
            flagged ``in_training_range: false``; ``fwd_top`` is the top of the first).
        deadband_key: config key of the linear deadband (a case whose nonzero |(v_x, v_y)| is below
            it was never drawn in training: flagged too); ``None`` or a missing key: none.
        push_overrides, noise_overrides, dr_overrides: settings that turn pushes, observation
            noise and domain randomization on (the env is built with the first two when those
            cases run, and they are masked to their rows; the third builds a one-row env whose
            startup events are applied to the ``dr`` rows).
        robustness: the robustness cases the suite runs (of :data:`ROBUSTNESS`).
        robustness_command: the command of the robustness cases.
        lin_tol, yaw_tol: (absolute, relative) tolerances: |err| <= max(abs, rel * |cmd|).
        push_min_up: share of ``push`` rows that must stay up.
        kernel_terms: reward terms of the task (``env.cfg.rewards``) whose values are reported per
            case (e.g. the velocity-tracking kernels in [0, 1]).
        mirror_check: also report how far the policy is from left/right equivariant on the
            observations it saw (needs ``env.mirror``).
        nominal: the nominal cases, name -> command (default :data:`NOMINAL`).
    """

    name: str = "walking"
    description: str = "held velocity commands: achieved velocity, falls, robustness"
    command: str = "twist"
    settle_s: float = 2.0
    measure_s: float = 8.0
    eval_overrides: tuple[str, ...] = ()
    range_keys: tuple[str, str, str] = ("env.commands.lin_vel_x", "env.commands.lin_vel_y", "env.commands.ang_vel_z")
    deadband_key: str | None = "env.commands.lin_vel_deadband"
    push_overrides: tuple[str, ...] = ()
    noise_overrides: tuple[str, ...] = ()
    dr_overrides: tuple[str, ...] = ()
    robustness: tuple[str, ...] = ROBUSTNESS
    robustness_command: tuple[float, float, float] = (0.5, 0.0, 0.0)
    lin_tol: tuple[float, float] = (0.1, 0.15)
    yaw_tol: tuple[float, float] = (0.1, 0.2)
    push_min_up: float = 0.99
    kernel_terms: tuple[str, ...] = ("track_linear_velocity", "track_angular_velocity")
    mirror_check: bool = True
    default_num_envs: int = 4
    training_num_envs: int = 1
    nominal: tuple[tuple[str, tuple[float, float, float]], ...] = NOMINAL

    # ------------------------------------------------------------------ cases
    def _ranges(self, cfg) -> list[tuple[float, float] | None]:
        out = []
        for key in self.range_keys:
            value = _dotted(cfg, key)
            out.append((float(value[0]), float(value[1])) if value is not None else None)
        return out

    def _deadband(self, cfg) -> float:
        value = _dotted(cfg, self.deadband_key) if self.deadband_key else None
        return float(value) if value is not None else 0.0

    def nominal_cases(self, cfg) -> list[tuple[str, tuple[float, float, float]]]:
        """The nominal cases for this run: :data:`NOMINAL` with ``fwd_top`` after ``fwd1.0``
        when the top of the run's v_x range is above 0 and neither 0.5 nor 1.0."""
        cases = list(self.nominal)
        vx = self._ranges(cfg)[0]
        if vx is not None and vx[1] > 0 and all(abs(vx[1] - v) > 1e-6 for v in (0.5, 1.0)):
            at = next((i + 1 for i, (n, _) in enumerate(cases) if n == "fwd1.0"), len(cases))
            cases.insert(at, ("fwd_top", (vx[1], 0.0, 0.0)))
        return cases

    def case_names(self, cfg) -> list[str]:
        return [n for n, _ in self.nominal_cases(cfg)] + list(self.robustness)

    def _cases(self, cfg, names: list[str] | None) -> list[_Case]:
        from unilab.errors import UserError

        nominal = dict(self.nominal_cases(cfg))
        valid = [*nominal, *self.robustness]
        if not names:
            names = valid
        out: list[_Case] = []
        for name in names:
            if name in nominal:
                case = _Case(name, nominal[name], "nominal")
            elif name in self.robustness:
                case = _Case(name, tuple(self.robustness_command), name)  # type: ignore[arg-type]
            elif (custom := _parse_custom(name)) is not None:
                case = _Case(name, custom, "custom")
            else:
                raise UserError(f"--case {name}: the {self.name} suite has no case {name!r}; valid: "
                                f"{', '.join(valid)}, or vx:vy:wz for a command of your own")
            if case.name not in {c.name for c in out}:
                out.append(case)
        return out

    # ------------------------------------------------------------------ plan
    def plan(self, cfg, cases: list[str] | None, num_envs: int | None) -> Plan:
        selected = self._cases(cfg, cases)
        n = check_num_envs(num_envs, self.default_num_envs)
        kinds = {c.kind for c in selected}
        # The robustness cases' keys over the evaluation settings, which turn them off.
        overrides = layer_overrides(self.eval_overrides, self.push_overrides if "push" in kinds else (),
                                    self.noise_overrides if "obs_noise" in kinds else ())
        return Plan(rows=len(selected) * n, overrides=tuple(overrides), cases=tuple(c.name for c in selected),
                    num_envs=n)

    # ------------------------------------------------------------------ run
    @torch.no_grad()
    def run(self, env, policy: Policy, ctx: EvalContext) -> SuiteResult:
        from unilab.errors import UserError

        cases = self._cases(ctx.cfg, list(ctx.plan.cases))
        n = ctx.plan.num_envs
        rows = len(cases) * n
        if env.num_envs != rows:
            raise ValueError(f"the env has {env.num_envs} rows, the plan {rows}")
        if self.command not in getattr(env, "commands", {}):
            raise UserError(f"the {self.name} suite needs a velocity command term {self.command!r} "
                            f"(env.commands); the env has {sorted(getattr(env, 'commands', {}))}")
        kind = torch.tensor([["nominal", "custom", *ROBUSTNESS].index(c.kind) for c in cases]).repeat_interleave(n)
        case_of_row = torch.arange(len(cases)).repeat_interleave(n)
        cmd = torch.tensor([c.command for c in cases], dtype=torch.float32)[case_of_row]
        hold_command(env, cmd, self.command)
        is_kind = {k: kind == 2 + i for i, k in enumerate(ROBUSTNESS)}
        if is_kind["obs_noise"].any():
            manager = getattr(env, "observation_manager", None)
            if manager is None or not hasattr(manager, "noise_rows"):
                raise UserError("the obs_noise case needs per-row observation noise (observation_manager.noise_rows)")
            manager.noise_rows = is_kind["obs_noise"].to(env.device)
        push_timers = self._push_timers(env) if is_kind["push"].any() else {}
        quiet = (~is_kind["push"]).to(env.device)
        if is_kind["dr"].any() and not ctx.cache.get("dr_applied"):
            # once per env: the events add to the model (CoM offsets), so a second draw would stack
            self._randomize(env, is_kind["dr"].nonzero().flatten().to(env.device), ctx)
            ctx.cache["dr_applied"] = True
        if getattr(env, "generator", None) is not None:  # the same reset draws whether or not dr drew just now
            env.generator.manual_seed(ctx.seed)

        def calm() -> None:  # interval events (pushes) only on the push rows
            for left in push_timers.values():
                left[quiet] = math.inf

        obs = env.reset()
        calm()
        mirror = self._mirror(env)
        settle = max(0, int(round(self.settle_s / env.step_dt)))
        measure = max(1, int(round(self.measure_s / env.step_dt)))
        total = settle + measure
        alive = torch.ones(rows, dtype=torch.bool)
        fell = torch.zeros(rows, dtype=torch.bool)
        count = torch.zeros(rows, dtype=torch.float64)
        sums = torch.zeros(rows, 3, dtype=torch.float64)  # v_x, v_y, w_z
        squares = torch.zeros(rows, 3, dtype=torch.float64)
        roll_pitch = torch.zeros(rows, dtype=torch.float64)  # w_x^2 + w_y^2
        terms = [t for t in self.kernel_terms if t in getattr(getattr(env, "cfg", None), "rewards", {})]
        kernels = torch.zeros(rows, len(terms), dtype=torch.float64)
        mirror_err = torch.zeros(rows, dtype=torch.float64)  # |pi(M o) - M pi(o)|, mean over actions
        action_size = torch.zeros(rows, dtype=torch.float64)  # |pi(o)|, mean over actions
        mirror_n = torch.zeros(rows, dtype=torch.float64)
        for t in range(total):
            o = obs[ctx.group].to("cpu", torch.float32)
            actions = policy(o)
            if mirror is not None and t >= settle:
                from unilab_rl.vecenv import apply_mirror

                mirrored = policy(apply_mirror(o, mirror.obs[ctx.group]))
                err = (mirrored - apply_mirror(actions, mirror.actions)).abs().mean(dim=1).double()
                a = alive.double()
                mirror_err += err * a
                action_size += actions.abs().mean(dim=1).double() * a
                mirror_n += a
            obs, _, terminated, truncated, _ = env.step(actions.to(env.device))
            calm()
            terminated, truncated = terminated.cpu(), truncated.cpu()
            fell |= terminated & alive
            alive &= ~(terminated | truncated)
            if t >= settle and alive.any():
                v = env.robot.base_lin_vel_b.to("cpu", torch.float64)
                w = env.robot.base_ang_vel_b.to("cpu", torch.float64)
                x = torch.stack((v[:, 0], v[:, 1], w[:, 2]), dim=1)
                a = alive.double()
                count += a
                sums += x * a[:, None]
                squares += x**2 * a[:, None]
                roll_pitch += (w[:, 0] ** 2 + w[:, 1] ** 2) * a
                for j, name in enumerate(terms):
                    term = env.cfg.rewards[name]
                    kernels[:, j] += term.func(env, **term.params).to("cpu", torch.float64) * a
            if ctx.progress is not None:
                ctx.progress(t + 1, total)
        ranges, deadband = self._ranges(ctx.cfg), self._deadband(ctx.cfg)
        records = []
        for i, case in enumerate(cases):
            sel = case_of_row == i
            records.append(self._record(
                case, n, count[sel].sum(), sums[sel].sum(0), squares[sel].sum(0), roll_pitch[sel].sum(),
                {name: kernels[sel, j].sum() for j, name in enumerate(terms)},
                (mirror_err[sel].sum(), action_size[sel].sum(), mirror_n[sel].sum()) if mirror is not None else None,
                int(fell[sel].sum()), ranges, deadband,
            ))  # fmt: skip
        passed = sum(r["passed"] for r in records)
        return SuiteResult(
            suite=self.name,
            headline=passed / len(records),
            headline_text=f"{passed}/{len(records)} cases passed",
            passed=passed == len(records),
            cases=records,
            columns=["case", "command vx vy wz", "vx m/s", "vy m/s", "yaw rad/s", "roll/pitch rad/s", "falls",
                     "result"],
            rows=[self._row(r) for r in records],
            settings={
                "layout": f"{n} row{'s' if n > 1 else ''} per case",
                "settle_s": settle * env.step_dt, "measure_s": measure * env.step_dt, "rows_per_case": n,
                "lin_tol": list(self.lin_tol), "yaw_tol": list(self.yaw_tol), "push_min_up": self.push_min_up,
                "robustness_command": list(self.robustness_command),
            },
            notes=self._notes(records, mirror is not None),
            steps=rows * total,
        )

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _push_timers(env) -> dict[str, torch.Tensor]:
        from unilab.errors import UserError

        manager = getattr(env, "event_manager", None)
        timers = dict(getattr(manager, "time_left", {}) or {})
        if not timers:
            raise UserError("the push case needs the task's interval events (pushes); the env has none with the "
                            "suite's push settings")
        return timers

    def _randomize(self, env, ids: torch.Tensor, ctx: EvalContext) -> None:
        """Apply the task's startup events (domain randomization), read from a one-row env built
        with ``dr_overrides``, to rows ``ids``."""
        from unilab.errors import UserError

        if ctx.build_env is None:
            raise UserError("the dr case needs to build an env with domain randomization on")
        probe = ctx.build_env(list(self.dr_overrides), 1)
        try:
            events = getattr(getattr(probe, "cfg", None), "events", None) or {}
            startup = [t for t in events.values() if getattr(t, "mode", None) == "startup"]
        finally:
            probe.close()
        if not startup:
            raise UserError(f"the dr case found no startup (domain randomization) events with {list(self.dr_overrides)}")
        for term in startup:
            term.func(env, ids, **term.params)

    def _mirror(self, env):
        if not self.mirror_check:
            return None
        try:
            return env.mirror
        except (AttributeError, ValueError):  # a task without mirror rules: no equivariance figure
            return None

    def _record(self, case: _Case, n: int, count, sums, squares, roll_pitch, kernels, mirror,
                falls: int, ranges, deadband: float) -> dict[str, Any]:
        c = case.command
        samples = float(count)
        in_range = all(r is None or r[0] - 1e-6 <= v <= r[1] + 1e-6 for v, r in zip(c, ranges))
        in_range = in_range and not 0.0 < math.hypot(c[0], c[1]) < deadband
        axes = {}
        checks: list[str] = []
        for i, (axis, tol) in enumerate((("vx", self.lin_tol), ("vy", self.lin_tol), ("yaw_rate", self.yaw_tol))):
            limit = max(tol[0], tol[1] * abs(c[i]))
            if samples == 0:
                axes[axis] = {"mean": None, "std": None, "error": None, "tolerance": limit, "ok": False}
                continue
            mean = float(sums[i]) / samples
            std = math.sqrt(max(float(squares[i]) / samples - mean**2, 0.0))
            ok = abs(mean - c[i]) <= limit
            if c[i] != 0 and mean * c[i] <= 0:
                ok = False
                checks.append(f"{axis} sign")
            elif not ok:
                checks.append(axis)
            axes[axis] = {"mean": mean, "std": std, "error": mean - c[i], "tolerance": limit, "ok": ok}
        up = 1.0 - falls / n
        if case.kind == "push":
            passed = up >= self.push_min_up
            checks = [] if passed else [f"{100 * up:.0f} % up < {100 * self.push_min_up:.0f} %"]
        else:
            if samples == 0:
                checks = ["every row fell before the measured window"]
            elif falls:
                checks.append("falls")
            passed = not checks
        return {
            "name": case.name,
            "kind": case.kind,
            "command": list(c),
            "in_training_range": in_range,
            "rows": n,
            "samples": int(samples),
            **axes,
            "roll_pitch_rate_rms": math.sqrt(float(roll_pitch) / samples) if samples else None,
            "kernels": {k: float(v) / samples if samples else None for k, v in kernels.items()},
            "mirror_error": float(mirror[0] / mirror[2]) if mirror is not None and mirror[2] else None,
            "mean_abs_action": float(mirror[1] / mirror[2]) if mirror is not None and mirror[2] else None,
            "falls": falls,
            "up_share": up,
            "passed": passed,
            "failed_checks": checks,
        }

    @staticmethod
    def _row(r: dict[str, Any]) -> list[str]:
        def stat(axis: str) -> str:
            a = r[axis]
            return "-" if a["mean"] is None else f"{a['mean']:+.2f} ±{a['std']:.2f}"

        c = r["command"]
        rp = r["roll_pitch_rate_rms"]
        falls = f"{r['falls']}/{r['rows']}"
        return [
            r["name"] + ("" if r["in_training_range"] else " *"),
            f"{c[0]:+.2f} {c[1]:+.2f} {c[2]:+.2f}",
            stat("vx"), stat("vy"), stat("yaw_rate"),
            "-" if rp is None else f"{rp:.2f}",
            falls,
            "pass" if r["passed"] else "FAIL: " + ", ".join(r["failed_checks"]),
        ]  # fmt: skip

    def _notes(self, records: list[dict[str, Any]], mirror: bool) -> list[str]:
        out = [
            f"mean ±std over rows and the measured window; pass: |v - cmd| <= max({self.lin_tol[0]:g}, "
            f"{self.lin_tol[1]:g}|cmd|) m/s per axis, |yaw - cmd| <= max({self.yaw_tol[0]:g}, "
            f"{self.yaw_tol[1]:g}|cmd|) rad/s, each commanded axis the right way, no fall; push: >= "
            f"{100 * self.push_min_up:g} % of rows up",
        ]
        if any(not r["in_training_range"] for r in records):
            out.append("* command outside the run's training range")
        if mirror:
            errs = [r["mirror_error"] for r in records if r["mirror_error"] is not None]
            if errs:
                out.append(f"mirror error |pi(M o) - M pi(o)|, mean over cases: {sum(errs) / len(errs):.3f} "
                           f"action units (per case in the JSON record)")
        return out


__all__ = ["NOMINAL", "ROBUSTNESS", "HeldCommand", "WalkingSuite", "hold_command"]
