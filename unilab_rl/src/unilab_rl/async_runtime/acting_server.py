"""Acting served from the learner's process (``runtime.policy_device=server``).

::

    collector shard j (CPU, no CUDA context)         learner process
    ----------------------------------------         ------------------------------------------
    obs -> ActingSlots.obs[j]; slot j -> pipe ──►    server thread: ActingServer
                                                       reads the pipe; with GRAPH_CAPTURE_LOCK:
                                                       snapshot.gaussian(obs) on the learner's
                                                       device (CUDA: a high-priority stream)
    mean, log_std <- ActingSlots.out[j]      ◄──       -> ActingSlots.out[j]; semaphore j
    action = policy.explore_from(mean, log_std)      main thread: after every learner.update(),
      (noise from the shard's own CPU stream)          publish(): live actor -> snapshot

Why: a collector acting on the learner's GPU holds a CUDA context of its own, and the GPU runs
one context at a time, in time slices: a 256-row acting call took 2.86 ms beside a busy learner
process on the H200 against 0.79 ms from a thread of the learner's own process on a
high-priority stream (``docs/benchmarks.md``, "where the acting latency comes from").

Noise. The server runs only the deterministic half of the exploration policy, ``gaussian(obs) ->
(mean, log_std)``; the collector draws the noise and squashes (``explore_from``) with its copy of
the policy, from the same per-shard CPU streams as ``runtime.policy_device=cpu``
(:class:`~unilab_rl.async_runtime.ShardNoise`, FlashSAC's held noise in the copy). So a shard's
actions depend on its seed and the weights alone, as in the other modes, and the server draws
no random numbers.

Weights. The server acts on its own snapshot of the exploration policy on the learner's device,
which :meth:`ActingServer.publish` refreshes from the live one after every ``learner.update()``
(a device-to-device copy, on the learner's stream on CUDA). The learner updates its weights in
place inside CUDA-graph replays, so acting on the live weights would read a half-updated actor
or wait for a whole update; on the snapshot an acting call never waits for the learner's
update, and it always reads the weights of one whole update. On CUDA two events order the copy
and the acting calls on the GPU without blocking the host: an acting call waits for the last
copy (``_copied``), a copy waits for the acting calls enqueued before it (``_read``); a host lock
keeps their enqueueing in order. On the CPU the same lock serializes the copy and the call.

Capture. The acting call holds :data:`~unilab_rl.learner.GRAPH_CAPTURE_LOCK`, which the learner
holds while it captures an update as a CUDA graph: during a global-mode capture another thread's
synchronizing call or ``cudaMalloc`` would invalidate it.

The server's own CUDA graph. On CUDA, after :data:`GRAPH_AFTER` eager calls (the warm-up a
capture needs), the server captures ``gaussian`` on a static (rows, obs_dim) input as a CUDA graph
(PyTorch, "CUDA Graphs"; ``capture_error_mode="thread_local"``, so the learner thread's own CUDA
calls meanwhile do not invalidate it) and from then on replays it: one launch per acting call
instead of one per layer, each of which would otherwise queue behind the learner's kernels and
take the GIL for its Python work. The graph reads the snapshot's tensors, which :meth:`publish`
refreshes in place, so it always acts with the last published weights. Every slot has the same
rows, so one graph serves them all. A capture that fails leaves the server eager (the error in
:attr:`ActingServer.graph_error`, one warning).

Failure. An error in the server thread is kept and raised in the learner's thread as
:class:`ActingServerDied` (by :meth:`ActingServer.raise_if_failed`, which the collector pool
calls while it waits for blocks); the runner then stops the collectors as for any failure. A
collector waiting for an answer gives up when it is told to stop.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import threading
import traceback

import torch

from unilab_rl.async_runtime.transport import POLL_S, ActingSlots, CollectorDied
from unilab_rl.learner import GRAPH_CAPTURE_LOCK, Learner

log = logging.getLogger(__name__)

GRAPH_AFTER = 3
"""Eager acting calls on CUDA before the server captures its graph (cuBLAS handles and
workspaces exist by then, made outside the capture)."""

SPLIT = ("gaussian", "explore_from")
"""The methods an exploration policy needs for the server (:meth:`unilab_rl.learner.Learner.exploration_policy`)."""


class ActingServerDied(CollectorDied):
    """The acting server thread failed or exited while the collectors still needed actions.

    A :class:`CollectorDied` (collection cannot go on; the run is recorded as ``failed``) whose
    message names the acting server and its error."""


def check_server_policy(policy: torch.nn.Module) -> None:
    """Raise ``ValueError`` unless ``policy`` splits into ``gaussian`` and ``explore_from``."""
    missing = [name for name in SPLIT if not callable(getattr(policy, name, None))]
    if missing:
        raise ValueError(
            f"runtime.policy_device=server needs an exploration policy split into gaussian(obs) -> (mean, log_std) "
            f"and explore_from(mean, log_std) -> actions; {type(policy).__name__} lacks {', '.join(missing)}: "
            f"use runtime.policy_device=learner or cpu"
        )


class ActingServer:
    """A thread of the learner's process that answers the collectors' acting requests.

    Args:
        learner: the learner; its ``exploration_policy()`` is snapshotted at construction (on
            its device) and refreshed by :meth:`publish`.
        slots: the request slots the collectors write into.
        cuda_graph: on CUDA, replay the acting call as a CUDA graph after :data:`GRAPH_AFTER`
            eager calls (ignored on other devices).

    Attributes:
        device: the learner's device, where the server acts.
        calls: acting calls answered; ``snapshots``: weight copies taken by :meth:`publish`.
        graph_error: why the capture failed (the server then stays eager), or None.
        error: the exception that ended the server thread, or None.

    Raises:
        ValueError: the exploration policy lacks ``gaussian`` or ``explore_from``
            (:func:`check_server_policy`).
    """

    def __init__(self, learner: Learner, slots: ActingSlots, cuda_graph: bool = True) -> None:
        live = learner.exploration_policy()
        check_server_policy(live)
        self.slots = slots
        self.device = torch.device(learner.device)
        self.cuda = self.device.type == "cuda"
        if self.cuda and self.device.index is None:  # the thread sets it as its current device
            self.device = torch.device("cuda", torch.cuda.current_device())
        self.policy = copy.deepcopy(live).requires_grad_(False)
        # Every tensor of the state dict (parameters, normalizer and batch-norm statistics), in
        # the same order on both sides: the snapshot is a deep copy.
        self._live = list(live.state_dict(keep_vars=True).values())
        self._snapshot = list(self.policy.state_dict(keep_vars=True).values())
        self._weights = threading.Lock()
        self.stream = torch.cuda.Stream(self.device, priority=-1) if self.cuda else None
        self._copied = torch.cuda.Event() if self.cuda else None  # after the last snapshot copy
        self._read = torch.cuda.Event() if self.cuda else None  # after the last acting call
        if self.cuda:  # the first acting call waits for the deep copy (on the learner's stream)
            self._copied.record(torch.cuda.current_stream(self.device))
        self.calls = 0
        self.snapshots = 0
        self._graph_wanted = self.cuda and cuda_graph
        self._graph: torch.cuda.CUDAGraph | None = None
        self._static_obs: torch.Tensor | None = None  # the graph's input, (rows, obs_dim)
        self._static_out: tuple[torch.Tensor, torch.Tensor] | None = None  # its output
        self.graph_error: str | None = None
        self.error: BaseException | None = None
        self._report = ""
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def graphed(self) -> bool:
        """Whether acting calls now replay the server's CUDA graph."""
        return self._graph is not None

    # -- learner thread ----------------------------------------------------------------------
    def start(self) -> None:
        """Start the server thread (a daemon: it never keeps the process alive)."""
        self._thread = threading.Thread(target=self._serve, name="unilab-acting-server", daemon=True)
        self._thread.start()

    @torch.no_grad()
    def publish(self) -> None:
        """Copy the live policy's weights into the server's snapshot. Learner thread, after
        ``learner.update()`` returned. On CUDA the copy runs on the learner's current stream,
        after the acting calls already enqueued (their reads of the snapshot), and the next acting
        call waits for it; nothing waits on the host."""
        with self._weights:
            if self.cuda:
                stream = torch.cuda.current_stream(self.device)
                stream.wait_event(self._read)
                torch._foreach_copy_(self._snapshot, self._live)
                self._copied.record(stream)
            else:
                torch._foreach_copy_(self._snapshot, self._live)
            self.snapshots += 1

    def raise_if_failed(self, iteration: int | None = None) -> None:
        """Raise :class:`ActingServerDied` when the server thread failed or exited unasked."""
        if self.error is not None:
            error = self.error
            where = "" if iteration is None else f" at iteration {iteration}"
            raise ActingServerDied(
                f"the acting server (thread of the learner process) failed{where}: "
                f"{type(error).__name__}: {error}\n{self._report}", None, iteration,
            ) from error
        if self._thread is not None and not self._thread.is_alive() and not self._stopping.is_set():
            raise ActingServerDied("the acting server thread exited while the collectors needed actions", None,
                                   iteration)

    def stop(self, timeout_s: float = 5.0) -> list[str]:
        """Stop the server thread and wait for it. Never raises.

        Returns:
            problems met (strings), e.g. a thread that did not stop within ``timeout_s``.
        """
        self._stopping.set()
        problems = []
        try:
            self.slots.wake()
        except Exception as exc:  # noqa: BLE001 - the poll timeout still ends the thread's wait
            problems.append(f"acting server wake: {type(exc).__name__}: {exc}")
        if self._thread is not None:
            self._thread.join(timeout_s)
            if self._thread.is_alive():
                problems.append(f"the acting server thread did not stop within {timeout_s:.0f} s")
        return problems

    # -- server thread -----------------------------------------------------------------------
    def _serve(self) -> None:
        """Answer requests until :meth:`stop`; an error ends the thread and is kept in :attr:`error`."""
        try:
            if self.cuda:
                torch.cuda.set_device(self.device)  # this thread's own current device
            on_device = torch.cuda.stream(self.stream) if self.cuda else contextlib.nullcontext()
            with torch.inference_mode(), on_device:
                while not self._stopping.is_set():
                    for slot in self.slots.wait(POLL_S):
                        self._act(slot)
        except BaseException as exc:  # noqa: BLE001 - raised in the learner's thread (raise_if_failed)
            self._report = traceback.format_exc(limit=8)
            self.error = exc

    def _act(self, slot: int) -> None:
        """One acting call: ``out[slot] = policy.gaussian(obs[slot])``, then the answer."""
        slots = self.slots
        with GRAPH_CAPTURE_LOCK:  # never while the learner captures a CUDA graph
            with self._weights:
                if self.cuda:
                    self.stream.wait_event(self._copied)
                # CUDA: asynchronous copies on the server stream (the slots are page-locked), done
                # by the synchronize below; other devices copy synchronously.
                obs = slots.obs_of[slot]
                if self._graph_wanted and self._graph is None and self.calls >= GRAPH_AFTER:
                    self._capture(obs.shape)
                if self._graph is not None:
                    self._static_obs.copy_(obs, non_blocking=True)
                    self._graph.replay()
                    mean, log_std = self._static_out
                else:
                    mean, log_std = self.policy.gaussian(obs.to(self.device, non_blocking=self.cuda))
                out_mean, out_log_std = slots.out_of[slot]
                out_mean.copy_(mean, non_blocking=self.cuda)
                out_log_std.copy_(log_std, non_blocking=self.cuda)
                if self.cuda:
                    self._read.record(self.stream)
            if self.cuda:
                self.stream.synchronize()  # the answer is in the slot
        self.calls += 1  # before the answer: a caller that got it sees it counted
        slots.answer(slot)


    def _capture(self, shape: torch.Size) -> None:
        """Capture ``policy.gaussian`` on a static input of ``shape`` on the server stream. Server
        thread, holding the capture lock and the weights lock. A failure is kept in
        :attr:`graph_error` and leaves acting eager."""
        try:
            static = torch.zeros(shape, device=self.device)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, stream=self.stream, capture_error_mode="thread_local"):
                out = self.policy.gaussian(static)
            self._graph, self._static_obs, self._static_out = graph, static, out
        except Exception as exc:  # noqa: BLE001 - acting goes on eagerly
            self._graph_wanted = False
            self.graph_error = f"{type(exc).__name__}: {exc}"
            log.warning("acting server: CUDA graph capture failed (%s); acting stays eager", self.graph_error)


__all__ = ["GRAPH_AFTER", "SPLIT", "ActingServer", "ActingServerDied", "check_server_policy"]
