"""Asynchronous off-policy runtime: a collector process steps the env while the learner updates.

::

    collector process (CPU only)                    learner = main process (owns the replay)
    ---------------------------------------         -----------------------------------------
    env = env_fn(); obs = env.reset()               start collector, hand it every block
    loop:                                           loop:
      i = free.get()      (waits: backpressure)       i, info = full.get()   (waits: starved)
      T steps: act (random during warm-up, else       one copy of block i into the replay,
        the actor copy), env.step, write              free.put(i)
        obs, a, r, terminated, final_obs into i       T iterations: num_updates updates each,
      full.put((i, episode stats + env logs))         log, checkpoint; every sync_weights_every
      pull actor weights when their version moved     updates: broadcast actor + normalizer

Transitions cross through a preallocated ring of ``num_blocks`` shared-memory blocks
(:class:`SharedBlocks`); block indices travel over two queues (free, full). Actor weights and the
actor's observation normalizer travel back through one shared float32 vector with a version
counter (:class:`SharedWeights`). With ``policy_device="cpu"`` the collector's actor copy runs
on its ``collector_threads`` torch threads and it never initializes CUDA (``CUDA_VISIBLE_DEVICES``
is emptied in it); with ``"learner"`` (the default) the copy lives on the learner's device
(:func:`collector_policy_device`), each env step's actor observations go there and the actions
come back, and a CUDA learner device costs the collector its own CUDA context. With ``"server"``
a thread of the learner's process runs the policy's forward pass on the learner's device with
the learner's own weights (:class:`ActingServer`, ``acting_server.py``): each shard writes its
actor observations into a shared-memory slot (:class:`ActingSlots`), gets the policy's Gaussian
back and draws the noise with its CPU copy; no weights are broadcast and the collector has no
CUDA context. Physics has its own thread pool in every case.

The update-to-data ratio is held by design: the learner runs exactly ``num_updates`` updates per
env step it receives; when it is the slower side the collector waits for a free block, when the
collector is slower the learner waits for a full one. Both waits are measured.

Shards: the N envs can be split into J = K x S shards, K collector processes
(``runtime.num_collectors``) of S threads each (``runtime.collector_shards``). Shard j steps its own env,
``env_fn(num_envs=N/J, seed=env_seed + j * SHARD_SEED_STRIDE)``, into env columns
``[j*N/J, (j+1)*N/J)`` of the same blocks, with its own free and full queue; the learner hands
every block index to all J and stores a block once all J filled it. The S shards of one process
share nothing but the process: MuJoCo releases the GIL while it steps, so one shard's env code
and policy run while another's physics does (each shard's physics pool has the process's
threads, so the pools oversubscribe the cores by S). Each shard draws its policy noise from its
own generator state (:class:`ShardNoise`), so its data does not depend on thread order.

One iteration is, as in the synchronous runner, one env step of all envs plus its updates, so
iteration counts, checkpoints, metrics and ``learning_starts`` mean the same in both runtimes.

The learner is any :class:`unilab_rl.learner.Learner`: the collectors run a copy of its
``exploration_policy()`` (warm-up actions are :func:`unilab_rl.learner.uniform_actions`, drawn in
the collector with its seeded CPU generator), the runner feeds it blocks with ``store_steps`` and
calls ``update``. Execution settings come from :class:`unilab_rl.runtime.RuntimeConfig`.

One file per role:

- ``transport.py``: the shared-memory block ring, weight vector and acting slots
  (:class:`SharedBlocks`, :class:`SharedWeights`, :class:`ActingSlots`), and :class:`CollectorDied`;
- ``collector.py``: the collector process and its shard threads;
- ``acting_server.py``: the acting server, a thread of the learner's process
  (:class:`ActingServer`, ``runtime.policy_device=server``);
- ``processes.py``: starting, receiving from, and stopping and reaping the collectors
  (:class:`~unilab_rl.async_runtime.processes.CollectorPool`);
- ``runner.py``: the learner's loop (:class:`AsyncOffPolicyRunner`).

Lifecycle: :meth:`AsyncOffPolicyRunner.learn` always stops its collectors before returning or
raising (stop event, join with a timeout, then terminate, then kill) and records their exit codes
and any problem in its summary (``collector_exitcode(s)``, ``cleanup_errors``). A collector
that dies or raises makes ``learn`` raise :class:`CollectorDied`; an acting server thread that
fails, :class:`ActingServerDied` (a subclass) with its error. The collector ignores SIGINT
(a terminal's Ctrl-C reaches the whole process group; the learner decides), stops cleanly on
SIGTERM, and exits when its parent process goes away.
"""

from unilab_rl.async_runtime.acting_server import ActingServer, ActingServerDied
from unilab_rl.async_runtime.collector import COLLECTOR_PHASES, SHARD_SEED_STRIDE, ShardNoise
from unilab_rl.async_runtime.processes import collector_policy_device, merge_logs
from unilab_rl.async_runtime.runner import AsyncOffPolicyRunner
from unilab_rl.async_runtime.transport import (
    ActingSlots,
    CollectorDied,
    SharedBlocks,
    SharedWeights,
    flat_state,
    load_flat_state,
)

__all__ = [
    "COLLECTOR_PHASES",
    "SHARD_SEED_STRIDE",
    "ActingServer",
    "ActingServerDied",
    "ActingSlots",
    "AsyncOffPolicyRunner",
    "CollectorDied",
    "ShardNoise",
    "SharedBlocks",
    "SharedWeights",
    "collector_policy_device",
    "flat_state",
    "load_flat_state",
    "merge_logs",
]
