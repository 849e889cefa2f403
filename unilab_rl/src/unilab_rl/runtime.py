"""How a learner executes: the settings every algorithm shares (``runtime.*`` on the command line).

An algorithm's config (``algo.*``) holds only its hyperparameters: what it learns and how. Where
and how fast that happens (synchronous or asynchronous collection, collector processes and
shards, where collectors act, compilation, CUDA graphs, mixed precision) is the same question for
every algorithm, answered once here and handed to both the learner and the runner.

A stdlib dataclass on purpose: unilab_rl depends on torch only; the CLI validates it with pydantic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

CompileMode = Literal["auto", "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"]
COMPILE_MODES: tuple[str, ...] = ("auto", "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
POLICY_DEVICES: tuple[str, ...] = ("cpu", "learner", "server")
"""Values of :attr:`RuntimeConfig.policy_device`."""
SHARD_STEPPINGS: tuple[str, ...] = ("threads", "pipeline")
"""Values of :attr:`RuntimeConfig.shard_stepping`."""
ASYNC_ONLY: tuple[str, ...] = (
    "block_steps", "num_blocks", "sync_weights_every", "num_collectors", "collector_shards",
    "shard_stepping", "collector_threads", "policy_device", "learner_threads",
)
"""Fields of :class:`RuntimeConfig` that only the asynchronous runtime reads; ``mode="sync"``
ignores them."""


@dataclass
class RuntimeConfig:
    """Execution settings of a training run, shared by every algorithm."""

    # -- Collection ------------------------------------------------------------------------
    mode: Literal["sync", "async"] = "async"
    """``"sync"``: one process alternates collection and learning (:class:`unilab_rl.runner.OffPolicyRunner`;
    debugging, tests, small machines). ``"async"``: collector processes step the env continuously
    with a copy of the actor while the learner updates
    (:class:`unilab_rl.async_runtime.AsyncOffPolicyRunner`); needs a host-bridge (CPU) env built
    from a picklable factory."""
    block_steps: int = 8
    """Async: env steps per shared-memory block; a block holds ``block_steps * num_envs``
    transitions and crosses to the learner in one copy."""
    num_blocks: int = 4
    """Async: blocks in the shared-memory ring (>= 2). The collectors run at most this many blocks
    ahead of the learner, then wait (backpressure)."""
    sync_weights_every: int = 8
    """Async: critic updates between two broadcasts of the actor (weights and observation
    statistics) to the collectors. Not used with ``policy_device="server"``, which acts with the
    learner's weights of the last update."""
    num_collectors: int = 1
    """Async: collector processes; each steps its own shard of the envs with its own physics pool
    of ``sim.nthread / num_collectors`` threads and its own seed."""
    collector_shards: int = 1
    """Async: env shards per collector process, each stepped by its own thread with its own policy
    copy and seeded noise stream. MuJoCo releases the GIL while it steps, so one shard's env code
    and policy run while another's physics does. ``num_envs`` must be divisible by
    ``num_collectors * collector_shards``."""
    shard_stepping: Literal["threads", "pipeline"] = "threads"
    """Async, with ``collector_shards`` > 1: how a collector steps its shards. ``"threads"``: one
    thread per shard, each running its policy, env code and physics in turn, so two shards' env
    code (which holds the GIL between torch ops) and their physics (each on its full physics pool)
    can overlap. ``"pipeline"``: one thread runs every shard's policy and env code, round robin,
    while one worker thread runs the shards' physics one after another (``env.step_async`` /
    ``env.step_wait``, :mod:`unilab_rl.vecenv`): while shard ``s`` is in physics, the thread
    finishes shard ``s - 1``'s step and acts for it. Physics pools then never run at once and no
    two threads contend for the GIL. The stored transitions are the same either way."""
    collector_threads: int = 1
    """Async: torch intra-op threads of each collector's policy inference on the CPU."""
    policy_device: Literal["cpu", "learner", "server"] = "learner"
    """Async: where the exploration policy is evaluated. ``"learner"``: by each collector on the
    learner's device (e.g. ``cuda:0``): actor observations go there and actions come back every
    env step, and each collector holds its own CUDA context (about 0.5 GB); with a CPU learner
    this is the same as ``"cpu"``. ``"cpu"``: by each collector on its own ``collector_threads``
    torch threads, with no CUDA context. ``"server"``: by a thread of the learner's process on
    the learner's device (on CUDA a high-priority stream), with the learner's current actor
    weights (:mod:`unilab_rl.async_runtime.acting_server`): each shard writes its actor
    observations into a shared-memory slot and waits for the policy's Gaussian (mean and log
    std), then draws the noise itself from its own seeded stream, as with ``"cpu"``. The
    collectors hold no CUDA context and no weights are broadcast (``sync_weights_every`` does not
    apply); with a CPU learner the server acts on the CPU."""
    learner_threads: int = 0
    """Async: torch intra-op threads of the learner process; 0 = automatic (1 on an accelerator,
    half of the cores left after physics and collectors on the CPU, at least 1)."""

    # -- Learner execution -----------------------------------------------------------------
    compile: bool | Literal["auto"] = "auto"
    """``torch.compile`` the learner's objectives: ``"auto"`` on CUDA only, ``True`` on any device,
    ``False`` never."""
    compile_mode: CompileMode = "auto"
    """``torch.compile`` mode; ``"auto"`` lets the algorithm choose (each documents its choice)."""
    cuda_graph: bool | Literal["auto"] = "auto"
    """Capture whole gradient steps as CUDA graphs and replay them (PyTorch, "CUDA Graphs"):
    ``"auto"`` where the algorithm supports it on a single CUDA learner, ``True`` requires it,
    ``False`` never. Supported by SAC and FlashSAC."""
    mixed_precision: bool | Literal["auto"] = "auto"
    """bfloat16 autocast of the forward passes: ``"auto"`` on CUDA where the algorithm supports it,
    ``True`` requires it, ``False`` never. Supported by FlashSAC."""

    def __post_init__(self) -> None:
        """Check value ranges.

        Raises:
            ValueError: naming the first field out of range (as ``runtime.<field>``) and its value.
        """
        for name in ("block_steps", "sync_weights_every", "num_collectors", "collector_shards", "collector_threads"):
            if getattr(self, name) < 1:
                raise ValueError(f"runtime.{name} must be >= 1, got {getattr(self, name)!r}")
        if self.num_blocks < 2:
            raise ValueError(f"runtime.num_blocks must be >= 2, got {self.num_blocks!r}")
        if self.learner_threads < 0:
            raise ValueError(f"runtime.learner_threads must be >= 0, got {self.learner_threads!r}")
        if self.mode not in ("sync", "async"):
            raise ValueError(f"runtime.mode must be 'sync' or 'async', got {self.mode!r}")
        if self.shard_stepping not in SHARD_STEPPINGS:
            raise ValueError(f"runtime.shard_stepping must be 'threads' or 'pipeline', got {self.shard_stepping!r}")
        if self.policy_device not in POLICY_DEVICES:
            raise ValueError(f"runtime.policy_device must be 'cpu', 'learner' or 'server', got {self.policy_device!r}")
        if self.compile_mode not in COMPILE_MODES:
            raise ValueError(f"runtime.compile_mode must be one of {COMPILE_MODES}, got {self.compile_mode!r}")
        for name in ("compile", "cuda_graph", "mixed_precision"):
            if getattr(self, name) not in (True, False, "auto"):
                raise ValueError(f"runtime.{name} must be true, false or 'auto', got {getattr(self, name)!r}")

    @property
    def num_shards(self) -> int:
        """Env shards over all collectors (``num_collectors * collector_shards``); 1 in sync mode."""
        return self.num_collectors * self.collector_shards if self.mode == "async" else 1

    def check_num_envs(self, num_envs: int) -> None:
        """Raise ``ValueError`` when async shards cannot split ``num_envs`` envs evenly."""
        if self.mode == "async" and num_envs % self.num_shards:
            raise ValueError(
                f"training.num_envs={num_envs} must be divisible by runtime.num_collectors * "
                f"runtime.collector_shards = {self.num_collectors} * {self.collector_shards}"
            )


__all__ = ["ASYNC_ONLY", "COMPILE_MODES", "POLICY_DEVICES", "SHARD_STEPPINGS", "CompileMode", "RuntimeConfig"]
