"""FlashSAC on Gymnasium's MuJoCo Humanoid through unilab_rl, against the official published curve.

The learner's own check, away from the G1 tasks: unilab_rl's FlashSAC trains Gymnasium's
``Humanoid-v4`` (or ``-v5``) through the :class:`unilab_rl.vecenv.VecEnv` protocol (a small adapter
below) with the official implementation's CPU-simulator settings, and the script prints its
evaluation returns next to the official FlashSAC returns at the same env steps.

Official settings (``Holiday-Robot/FlashSAC`` at 87edc90, ``scripts/run_mujoco.sh`` and
``configs/flashSAC_base.yaml`` / ``configs/agent/flashSAC.yaml``): one env, actions rescaled to
``[-1, 1]`` (``flash_rl/envs/__init__.py``, ``RescaleAction``), 1 M env steps, replay 1 M with
updates from 10 k transitions on (uniform random actions until then), batch 512, one update per env
step, gamma 0.99, 1-step returns, tau 0.01, no AMP, symmetric observations, the learning-rate
cosine over the whole 1 M-update run; evaluation every 100 k env steps: the deterministic policy
``tanh(mean)``, mean return of 50 episodes (``flash_rl/evaluation.py``). Everything else is
FlashSAC's default in both codes (networks, 101 atoms on +-5, reward scaling, held noise, unified
entropy target).

Published figure: ``results/stateRL_cpusim/FlashSAC.csv`` at 87edc90, ``Humanoid-v4``,
``avg_return``, five seeds (0, 1000, 2000, 3000, 4000); :data:`OFFICIAL` holds their mean, min and
max per 100 k env steps. ``Humanoid-v5`` (Gymnasium's current version: same reward terms, fixed
contact-force observations, 348 instead of 376 observations) is not in the published set.

GPU machine (about 25 min per seed for the full 1 M steps; 300 k steps about 8 min)::

    python benchmarks/humanoid_flashsac.py --steps 300000 --seeds 0,1000,2000 --device cuda --out humanoid.json

Seeds side by side (``--parallel threads``): all seeds train at once as threads of this process,
each with its own CUDA stream. Kernels of one process share one CUDA context, so the GPU runs
them side by side; kernels of several processes (one per seed) share the GPU in time slices,
and a seed's small acting pass then waits for another process's slice. The GIL serializes the
threads' Python work (torch ops release it while they dispatch and wait; the MuJoCo step
too). Each seed's first updates (compiling the objectives and capturing the update's CUDA
graphs) run with the GPU to themselves (:class:`CaptureGate`)::

    python benchmarks/humanoid_flashsac.py --steps 100000 --seeds 0,1000,2000 --device cuda --parallel threads

What a seed's run depends on. Alone (``--parallel sequential``, the default) everything follows
from the seed: ``torch.manual_seed(seed)`` before the learner is built, envs reset with
``seed + i``, warm-up actions from the runner's generator seeded with ``seed``; on the CPU a seed
gives the same curve run after run. In threads mode the seed still fixes the initial weights
(the seeds are built one after another, each after its own ``torch.manual_seed``), the env
resets, the warm-up actions and so everything up to the first update: identical to the seed run
alone. After that the learner's draws (held exploration noise, replay batches, the actor's
sampled actions) come from torch's process-wide generators, which all threads share in an order
the scheduler decides, so they differ from the seed run alone and from run to run; the draws
stay independent across seeds. On CUDA the captured updates (replay batches, sampled actions)
draw from a generator of the seed's own instead (``GRAPH_SEED_OFFSET + seed``,
:meth:`SeedRun._own_graph_rng`), independent of the other threads; the acting noise, drawn
outside the graphs, still comes from the shared generator. GPU runs are not bit-reproducible
in either mode anyway (the categorical projection's ``scatter_add_`` adds atomically).

A short CPU smoke run (minutes; far too short and too small to learn)::

    python benchmarks/humanoid_flashsac.py --steps 1500 --learning-starts 500 --eval-every 500 \\
        --eval-episodes 1 --device cpu --set batch_size=64 --set critic_hidden_dim=64 --set actor_hidden_dim=32

Needs ``gymnasium`` (and ``imageio``, which its MuJoCo module imports) beside the MuJoCo already in
the workspace: ``pip install gymnasium imageio``. Not part of CI.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import statistics
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator

import torch

OFFICIAL_SOURCE = "Holiday-Robot/FlashSAC@87edc90 results/stateRL_cpusim/FlashSAC.csv (Humanoid-v4, 5 seeds)"
OFFICIAL: dict[int, tuple[float, float, float]] = {
    0: (99.3, 83.4, 137.5),
    100_000: (6138.3, 1834.1, 7883.6),
    200_000: (9640.2, 8471.5, 10217.7),
    300_000: (10569.7, 9709.2, 10822.8),
    400_000: (10409.8, 6756.7, 11533.2),
    500_000: (11367.7, 10609.1, 11768.4),
    600_000: (10281.2, 4647.8, 12260.5),
    700_000: (10829.8, 7860.8, 12389.3),
    800_000: (11869.6, 10648.7, 12324.6),
    900_000: (12426.3, 12185.9, 12853.6),
    1_000_000: (12606.1, 12328.7, 12713.3),
}
"""Env step -> (mean, min, max) over the five published seeds of the deterministic policy's return."""

OFFICIAL_SETTINGS = dict(
    learning_starts=10_000, buffer_size_per_env=1_000_000, batch_size=512, num_updates=1, gamma=0.99, n_step=1,
    tau=0.01, actor_update_period=2, lr=3e-4, lr_end=1.5e-4, num_bins=101, normalized_g_max=5.0,
    init_temperature=0.01, target_sigma=0.15, entropy_units="squashed", noise_repeat=True,
)
"""FlashSACConfig values of the official CPU-simulator runs (the rest are FlashSAC's defaults)."""


class GymVecEnv:
    """``num_envs`` Gymnasium environments as a :class:`unilab_rl.vecenv.VecEnv` on the CPU.

    Each env's actions are rescaled to ``[-1, 1]`` (``gymnasium.wrappers.RescaleAction``), as the
    official code does; observations form the ``"actor"`` group (no privileged critic group). An
    env that ends is reset at once; ``extras["final_obs"]`` holds the observation it ended in.

    Args:
        env_id: a Gymnasium id, e.g. ``"Humanoid-v4"``.
        num_envs: envs stepped one after another.
        seed: env ``i`` is reset with ``seed + i`` first.
    """

    def __init__(self, env_id: str, num_envs: int = 1, seed: int = 0) -> None:
        import gymnasium as gym
        import numpy as np

        self._np = np
        self.envs = [gym.wrappers.RescaleAction(gym.make(env_id), np.float32(-1.0), np.float32(1.0))
                     for _ in range(num_envs)]
        space = self.envs[0].action_space
        self.num_envs, self.num_actions = num_envs, int(space.shape[0])
        self.obs_dims = {"actor": int(self.envs[0].observation_space.shape[0])}
        self.action_low = torch.as_tensor(space.low, dtype=torch.float32)
        self.action_high = torch.as_tensor(space.high, dtype=torch.float32)
        self.max_episode_length = int(self.envs[0].spec.max_episode_steps or 1000)
        self.device = torch.device("cpu")
        self.seed = seed
        self._obs: list | None = None

    def _group(self, rows: list) -> dict[str, torch.Tensor]:
        return {"actor": torch.as_tensor(self._np.stack(rows), dtype=torch.float32)}

    def reset(self) -> dict[str, torch.Tensor]:
        self._obs = [env.reset(seed=self.seed + i)[0] for i, env in enumerate(self.envs)]
        return self._group(self._obs)

    def step(self, actions: torch.Tensor):
        acts = actions.detach().cpu().numpy()
        obs, final, rewards, terminated, truncated = [], [], [], [], []
        for i, env in enumerate(self.envs):
            o, r, te, tr, _ = env.step(acts[i])
            final.append(o)
            if te or tr:
                o, _ = env.reset()
            obs.append(o)
            rewards.append(r)
            terminated.append(te)
            truncated.append(tr and not te)
        self._obs = obs
        extras = {"final_obs": self._group(final), "log": {}}
        return (self._group(obs), torch.tensor(rewards, dtype=torch.float32), torch.tensor(terminated),
                torch.tensor(truncated), extras)

    def close(self) -> None:
        for env in self.envs:
            env.close()


def evaluate(learner, env: GymVecEnv, between: Callable[[], None] | None = None) -> float:
    """Mean return of the deterministic policy (``squash(mean)``) over one episode per env of
    ``env``, env ``i`` reset with ``env.seed + i``: all episodes run together, one batched acting
    pass per step, until each has ended once (an ended env is no longer stepped). ``between``
    runs after every step."""
    np = env._np
    obs = env.reset()["actor"]
    rows = list(env._obs)
    totals = np.zeros(env.num_envs)
    running = np.ones(env.num_envs, dtype=bool)
    while running.any():
        actions = learner.act(obs, deterministic=True).detach().cpu().numpy()
        for i in np.flatnonzero(running):
            rows[i], reward, terminated, truncated, _ = env.envs[i].step(actions[i])
            totals[i] += reward
            running[i] = not (terminated or truncated)
        obs = env._group(rows)["actor"]
        if between is not None:
            between()
    return float(totals.mean())


def parse_sets(pairs: list[str], *config_classes) -> dict:
    """``key=value`` strings -> fields of ``config_classes`` (FlashSACConfig, RuntimeConfig),
    typed like the field's default (``true``/``false`` for a bool or ``"auto"`` one, ``null`` for
    ``None``)."""
    fields = {f.name: f for cls in config_classes for f in dataclasses.fields(cls)}
    names = " or ".join(cls.__name__ for cls in config_classes)
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or key not in fields:
            raise SystemExit(f"error: --set {pair!r}: expected KEY=VALUE with KEY a {names} field")
        default = fields[key].default
        if isinstance(default, bool) or (default == "auto" and value.lower() in ("true", "false")):
            out[key] = value.lower() in ("1", "true", "yes")
        elif isinstance(default, int):
            out[key] = int(value)
        elif isinstance(default, float):
            out[key] = float(value)
        else:
            out[key] = None if value.lower() in ("null", "none") else value
    return out


class CaptureGate:
    """Keeps every other thread of the process off the GPU while one thread warms up and captures
    its learner's CUDA graphs.

    Each training thread holds the gate *shared* while it works and calls :meth:`pause` between
    env steps; a thread whose learner is about to warm up and capture its update graphs takes it
    *exclusively* (:meth:`exclusive`), which waits until every other thread has reached a
    :meth:`pause` (or finished) and holds them there until it is done. Why: under
    ``torch.cuda.graph``'s default ``capture_error_mode="global"`` another thread's synchronizing
    call or ``cudaMalloc`` during a capture invalidates it; and in torch releases whose CUDA
    generator keeps one capture state for all captures, a random draw from another thread while
    a capture is open raises ("Offset increment outside graph capture"). The first updates
    also compile the objectives (``torch.compile``; Dynamo is not thread-safe), so compilation
    runs alone too. Writer-preferring: once a thread waits for exclusive use, no thread re-enters.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._active = 0  # threads holding the gate shared
        self._waiting = 0  # threads waiting for exclusive use
        self._exclusive = False

    def enter(self) -> None:
        """Take the gate shared (blocks while a thread holds or waits for exclusive use)."""
        with self._cond:
            while self._exclusive or self._waiting:
                self._cond.wait()
            self._active += 1

    def leave(self) -> None:
        """Give the shared hold back."""
        with self._cond:
            self._active -= 1
            self._cond.notify_all()

    def pause(self) -> None:
        """Between two env steps of a thread holding the gate shared: let a thread that waits for
        exclusive use run first. A lock-free read when nobody waits."""
        if self._waiting:
            self.leave()
            self.enter()

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """From a thread holding the gate shared: the only thread on the GPU for the block, then
        shared again."""
        with self._cond:
            self._active -= 1
            self._waiting += 1
            self._cond.notify_all()
            while self._exclusive or self._active:
                self._cond.wait()
            self._waiting -= 1
            self._exclusive = True
        try:
            yield
        finally:
            with self._cond:
                self._exclusive = False
                self._active += 1
                self._cond.notify_all()


class Aborted(Exception):
    """Another seed's thread failed; this one stops at its next env step."""


_print_lock = threading.Lock()


def say(line: str) -> None:
    """Print one whole line (threads' lines never interleave mid-line)."""
    with _print_lock:
        print(line, flush=True)


GRAPH_SEED_OFFSET = 0x5EED_0000_0000
"""Threads mode: seed ``s``'s captured updates draw from a CUDA generator seeded with
``GRAPH_SEED_OFFSET + s``: a Philox key other than the ``torch.manual_seed`` seeds of the run
(unless one is that large), so these draws do not repeat the shared generator's."""

MAX_CAPTURE_ITERATIONS = 64
"""Threads mode: iterations a seed may hold the GPU alone (from its first update on) before its
updates replay CUDA graphs; more raises ``RuntimeError`` (the learner is not capturing)."""


class SeedRun:
    """One seed: its train and evaluation envs, learner and runner, built at construction, and
    :meth:`train`, which trains it and returns its curve.

    Construction seeds torch's process-wide generators with ``torch.manual_seed(seed)`` and then
    builds the learner, so the networks' initial weights are the seed's; the envs are reset with
    ``seed + i`` (training) and ``10_000 + seed + k`` (evaluation episode ``k``) and the runner's
    warm-up actions come from its own generator seeded with ``seed``. Everything the learner
    draws later (held exploration noise, replay batches, the actor's sampled actions) comes from
    torch's process-wide generators, see ``--parallel``.

    Args:
        args: the parsed command line.
        seed: the seed.
        settings: FlashSACConfig and RuntimeConfig values.
    """

    def __init__(self, args: argparse.Namespace, seed: int, settings: dict) -> None:
        from unilab_rl import FlashSAC, FlashSACConfig, OffPolicyRunner
        from unilab_rl.testing import make_learner

        self.args, self.seed = args, seed
        torch.manual_seed(seed)
        self.env = GymVecEnv(args.env, args.num_envs, seed)
        self.eval_env = GymVecEnv(args.env, args.eval_episodes, 10_000 + seed)  # episode k: 10_000 + seed + k
        self.learner = make_learner(FlashSAC, FlashSACConfig, self.env, device=args.device,
                                    max_iterations=args.schedule_steps, **{"mixed_precision": False, **settings})
        self.runner = OffPolicyRunner(self.env, self.learner, seed=seed, log_interval=10**9)
        learner = self.learner
        # The learner captures its updates as CUDA graphs (FlashSAC: runtime.cuda_graph auto on CUDA).
        self.captures = learner.device.type == "cuda" and learner.runtime.cuda_graph is not False
        self.gate: CaptureGate | None = None
        self.abort: threading.Event | None = None

    def evaluate(self) -> float:
        """:func:`evaluate` on this seed's evaluation env (pausing for the gate between steps)."""
        return evaluate(self.learner, self.eval_env, self._between_steps)

    def _between_steps(self, *_: object) -> None:
        """Threads mode, between two env steps: stop if another seed failed, else yield to a
        thread that waits to capture."""
        if self.abort is not None and self.abort.is_set():
            raise Aborted(f"seed {self.seed}: stopped, another seed failed")
        if self.gate is not None:
            self.gate.pause()

    @contextlib.contextmanager
    def _own_graph_rng(self) -> Iterator[None]:
        """While this seed holds the GPU alone: the device's default CUDA generator draws from this
        seed's own generator state, so the update graphs captured now keep that state
        (``torch.cuda.graph`` registers the default generator's state at capture, and every
        replay advances the registered state). Without it all seeds' graphs would share the
        default state: in torch releases that keep its seed and offset for graphs in one device
        buffer per generator, each replay refills that buffer on its own stream, so concurrent
        replays of two seeds could read each other's offset and draw the same batch indices and
        noise; in later ones the host-side offset update of a replay is still unlocked."""
        device = self.learner.device
        default = torch.cuda.default_generators[device.index if device.index is not None
                                                else torch.cuda.current_device()]
        own = getattr(self, "_graph_generator", None)
        if own is None:
            own = self._graph_generator = torch.Generator(device=device)
            own.manual_seed(GRAPH_SEED_OFFSET + self.seed)
        previous = default.graphsafe_get_state()
        default.graphsafe_set_state(own)
        try:
            yield
        finally:
            default.graphsafe_set_state(previous)

    def _learn(self, iterations: int) -> None:
        """``runner.learn(iterations)``; in threads mode with a capturing learner, the iterations
        from its first update until its updates replay CUDA graphs run with the GPU to itself
        (:class:`CaptureGate`, :meth:`_own_graph_rng`), the others pausing between env steps."""
        runner, learner = self.runner, self.learner
        if self.gate is None:
            runner.learn(iterations)
            return
        while iterations > 0:
            # The first update runs in iteration learning_starts - 1 (the buffer then holds
            # learning_starts rows); with n-step returns a little later, inside the window too.
            first = learner.learning_starts - 1 - learner.iteration
            shared = not self.captures or learner.cuda_graphs
            if shared or first > 0:
                n = iterations if shared else min(iterations, first)
                runner.learn(n, on_iteration=self._between_steps)
                iterations -= n
                continue
            if learner.iteration - learner.learning_starts >= MAX_CAPTURE_ITERATIONS:
                raise RuntimeError(f"seed {self.seed}: updates still not replaying CUDA graphs "
                                   f"{MAX_CAPTURE_ITERATIONS} iterations after the first update")
            self._between_steps()
            with self.gate.exclusive(), self._own_graph_rng():
                runner.learn(1)
            iterations -= 1

    def train(self, gate: CaptureGate | None = None, abort: threading.Event | None = None) -> list[tuple[int, float]]:
        """Train this seed for ``--steps`` env steps, evaluating every ``--eval-every``.

        Args:
            gate: threads mode: the process's :class:`CaptureGate`; the caller holds it shared
                (and gives it back after). ``None``: the seed runs alone.
            abort: threads mode: set by the caller when a seed fails; this one then raises
                :class:`Aborted` at its next env step.

        Returns:
            [(env steps, evaluation return)], from step 0 on. Closes both envs.
        """
        args, seed = self.args, self.seed
        self.gate, self.abort = gate, abort
        curve = [(0, self.evaluate())]
        say(f"seed {seed}: step 0 return {curve[-1][1]:.1f}")
        t0 = time.perf_counter()
        done = 0
        try:
            while done < args.steps:
                target = min(done + args.eval_every, args.steps)
                while done < target:  # progress lines, so that a run cut short still shows its pace
                    chunk = max(min(args.progress_every, target - done) // args.num_envs, 1)
                    self._learn(chunk)
                    done += chunk * args.num_envs
                    say(f"seed {seed}: {done} env steps, {done / (time.perf_counter() - t0):.0f} env steps/s")
                curve.append((done, self.evaluate()))
                say(f"seed {seed}: step {done} return {curve[-1][1]:.1f} ({time.perf_counter() - t0:.0f} s, "
                    f"cuda_graphs={self.learner.cuda_graphs})")
        finally:
            self.env.close()
            self.eval_env.close()
        return curve


def run_seed(args: argparse.Namespace, seed: int, settings: dict) -> list[tuple[int, float]]:
    """Build and train one seed alone; returns [(env steps, evaluation return)] at every
    ``--eval-every`` steps."""
    return SeedRun(args, seed, settings).train()


def run_threads(args: argparse.Namespace, seeds: list[int], settings: dict) -> dict[int, list[tuple[int, float]]]:
    """Train all ``seeds`` at once, one thread each, in this process (``--parallel threads``).

    The seeds are built one after another first (:class:`SeedRun`: each after its own
    ``torch.manual_seed``), then each thread trains its seed with its own CUDA stream as the
    current stream (on the CPU there are none). Their kernels then share one CUDA context, so
    the GPU runs them side by side instead of switching between processes' contexts in time
    slices. Each seed's first updates, which compile the objectives and capture the update's
    CUDA graphs, run with the GPU to themselves (:class:`CaptureGate`). If one seed fails the
    others stop at their next env step and its error is raised.

    Returns:
        seed -> [(env steps, evaluation return)].

    Raises:
        RuntimeError: a learner compiles its objectives but does not capture CUDA graphs (its
            compiled code would run concurrently in several threads); torch lacks
            ``Generator.graphsafe_set_state`` on CUDA; what a seed raised.
    """
    runs = [SeedRun(args, seed, settings) for seed in seeds]
    for run in runs:
        if run.learner.compile_backend != "eager" and not run.captures:
            raise RuntimeError("--parallel threads needs eager objectives or CUDA-graph updates: this learner "
                               "compiles its objectives without capturing them, and compiled code is not run "
                               "from several threads here")
    if any(run.captures for run in runs) and not hasattr(torch.Generator, "graphsafe_set_state"):
        raise RuntimeError(f"--parallel threads on CUDA needs torch.Generator.graphsafe_set_state (torch "
                           f"{torch.__version__} lacks it) to give each seed's update graphs their own generator")
    if any(run.learner.device.type == "cuda" for run in runs):
        torch.cuda.synchronize()  # weights and buffers were written on the default stream
    gate, abort = CaptureGate(), threading.Event()
    curves: dict[int, list[tuple[int, float]]] = {}
    errors: list[BaseException] = []

    def body(run: SeedRun) -> None:
        gate.enter()
        try:
            stream = torch.cuda.Stream(run.learner.device) if run.learner.device.type == "cuda" else None
            with torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext():
                curves[run.seed] = run.train(gate, abort)
                if stream is not None:
                    stream.synchronize()
        except BaseException as exc:  # noqa: BLE001 - re-raised by the main thread
            if not isinstance(exc, Aborted):
                errors.append(exc)
            abort.set()
        finally:
            gate.leave()

    threads = [threading.Thread(target=body, args=(run,), name=f"seed-{run.seed}", daemon=True) for run in runs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return {seed: curves[seed] for seed in seeds}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env", default="Humanoid-v4", help="Gymnasium id (the published curve is Humanoid-v4)")
    p.add_argument("--steps", type=int, default=1_000_000, help="env steps per seed")
    p.add_argument("--seeds", default="0", help="comma-separated (the official ones: 0,1000,2000,3000,4000)")
    p.add_argument("--num-envs", type=int, default=1)
    p.add_argument("--device", default="auto")
    p.add_argument("--learning-starts", type=int, default=None, help="override the official 10,000 (env steps)")
    p.add_argument("--schedule-steps", type=int, default=1_000_000,
                   help="horizon of the cosine learning-rate schedule in iterations (official: the 1 M-step run)")
    p.add_argument("--eval-every", type=int, default=100_000)
    p.add_argument("--eval-episodes", type=int, default=50)
    p.add_argument("--progress-every", type=int, default=10_000, help="env steps between progress lines")
    p.add_argument("--set", action="append", default=[],
                   help="FlashSACConfig or RuntimeConfig KEY=VALUE, e.g. compile=false (repeatable)")
    p.add_argument("--out", default=None, help="write the curves as JSON here")
    p.add_argument("--parallel", choices=("sequential", "threads"), default="sequential",
                   help="sequential: one seed after another; threads: all seeds at once, one thread and CUDA "
                        "stream each, in this process (the update randomness is then not reproducible on the "
                        "CPU, nor the acting noise on CUDA: see the module docstring)")
    args = p.parse_args(argv)
    warnings.filterwarnings("ignore", message=".*out of date.*")  # Humanoid-v4 is the published version
    try:
        import gymnasium  # noqa: F401
    except ImportError:
        print("error: gymnasium is not installed: pip install gymnasium imageio", file=sys.stderr)
        return 2
    for name in ("steps", "num_envs", "eval_every", "eval_episodes", "schedule_steps", "progress_every"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    try:
        seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    except ValueError:
        seeds = []
    if not seeds or len(set(seeds)) != len(seeds):
        p.error(f"--seeds {args.seeds!r}: expected distinct comma-separated integers, e.g. 0,1000,2000")
    from unilab_rl import FlashSACConfig
    from unilab_rl.runtime import RuntimeConfig

    settings = {**OFFICIAL_SETTINGS, "num_updates": args.num_envs}  # one update per env step
    if args.learning_starts is not None:
        settings["learning_starts"] = max(args.learning_starts // args.num_envs, 1)
    settings |= parse_sets(args.set, FlashSACConfig, RuntimeConfig)
    settings["buffer_size_per_env"] = min(settings["buffer_size_per_env"], -(-args.steps // args.num_envs))
    try:  # a bad value stops here with one line, not in a seed's thread
        for cls in (FlashSACConfig, RuntimeConfig):
            names = {f.name for f in dataclasses.fields(cls)}
            cls(**{k: v for k, v in settings.items() if k in names})
    except (TypeError, ValueError) as error:
        print(f"error: --set: {error}", file=sys.stderr)
        return 2
    print(f"FlashSAC on {args.env}: {json.dumps(settings)}", flush=True)
    if args.parallel == "threads":
        curves = run_threads(args, seeds, settings)
    else:
        curves = {seed: run_seed(args, seed, settings) for seed in seeds}

    print(f"\nevaluation return (deterministic policy, {args.eval_episodes} episodes) against {OFFICIAL_SOURCE}")
    print(f"{'env steps':>10s} {'ours: mean':>11s} {'min':>9s} {'max':>9s} {'official: mean':>15s} {'min':>9s} {'max':>9s}")
    for i, (step, _) in enumerate(curves[seeds[0]]):
        ours = [curves[s][i][1] for s in seeds]
        ref = OFFICIAL.get(step)
        ref_s = f"{ref[0]:15.1f} {ref[1]:9.1f} {ref[2]:9.1f}" if ref else f"{'-':>15s} {'-':>9s} {'-':>9s}"
        print(f"{step:10d} {statistics.mean(ours):11.1f} {min(ours):9.1f} {max(ours):9.1f} {ref_s}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"env": args.env, "settings": settings, "official_source": OFFICIAL_SOURCE,
                       "official": OFFICIAL, "curves": {str(s): c for s, c in curves.items()}}, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
