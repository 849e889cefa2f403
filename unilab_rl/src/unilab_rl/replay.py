"""Uniform replay buffer: a preallocated tensor ring on the learner device."""

from __future__ import annotations

from typing import NamedTuple

import torch

from unilab_rl.vecenv import Mirror, apply_mirror


class Batch(NamedTuple):
    """A batch of transitions; B rows, each a (s, a, r, terminated, s') tuple.

    Attributes:
        obs: group -> (B, obs_dims[group]) float32, the observation the action was taken in.
        actions: (B, A) float32, in the env's units.
        rewards: (B,) float32.
        terminated: (B,) bool; True only for a terminal state (no bootstrap). A truncated
            (time-out) transition is stored with ``terminated=False``.
        next_obs: group -> (B, obs_dims[group]) float32, the observation the step reached before
            any auto-reset (the env's ``extras["final_obs"]``).
    """

    obs: dict[str, torch.Tensor]
    actions: torch.Tensor
    rewards: torch.Tensor
    terminated: torch.Tensor
    next_obs: dict[str, torch.Tensor]


class ReplayBuffer:
    """Fixed-capacity ring of transitions, sampled uniformly with replacement.

    Every field is one preallocated tensor of ``capacity`` rows on ``device``. :meth:`add` writes
    a batch (one env step of all envs) at the write pointer, wrapping around and overwriting the
    oldest rows once full. Observations are stored raw: normalization is the learner's business,
    so stored rows stay valid when the normalizer's statistics move.

    Args:
        capacity: number of transitions held (e.g. ``buffer_size_per_env * num_envs``).
        obs_dims: group -> feature size, for the groups to store (e.g. ``{"actor": 99,
            "critic": 111}``).
        num_actions: action dimension A.
        device: where the storage lives (the learner device).

    Raises:
        ValueError: ``capacity`` < 1, no observation group, or a non-positive size.
    """

    def __init__(
        self,
        capacity: int,
        obs_dims: dict[str, int],
        num_actions: int,
        device: torch.device | str,
    ) -> None:
        if capacity < 1:
            raise ValueError(f"ReplayBuffer capacity must be >= 1, got {capacity}")
        if not obs_dims:
            raise ValueError("ReplayBuffer needs at least one observation group")
        bad = {k: v for k, v in obs_dims.items() if v < 1}
        if bad or num_actions < 1:
            raise ValueError(f"ReplayBuffer sizes must be >= 1, got obs_dims={obs_dims}, num_actions={num_actions}")
        self.capacity = capacity
        self.obs_dims = dict(obs_dims)
        self.num_actions = num_actions
        self.device = torch.device(device)
        self.obs = {g: torch.zeros(capacity, d, device=self.device) for g, d in obs_dims.items()}
        self.next_obs = {g: torch.zeros(capacity, d, device=self.device) for g, d in obs_dims.items()}
        self.actions = torch.zeros(capacity, num_actions, device=self.device)
        self.rewards = torch.zeros(capacity, device=self.device)
        self.terminated = torch.zeros(capacity, dtype=torch.bool, device=self.device)
        self.ptr = 0
        """Row the next transition is written to."""
        self.size = 0
        """Number of valid rows, at most ``capacity``."""
        self.size_tensor = torch.zeros((), dtype=torch.int64, device=self.device)
        """``size`` as a () int64 tensor on the buffer's device, for :meth:`sample_capturable`."""

    def __len__(self) -> int:
        return self.size

    @torch.no_grad()
    def add(
        self,
        obs: dict[str, torch.Tensor],
        actions: torch.Tensor,
        rewards: torch.Tensor,
        terminated: torch.Tensor,
        next_obs: dict[str, torch.Tensor],
    ) -> None:
        """Append N transitions (typically one env step of all N envs), wrapping around.

        Args:
            obs: group -> (N, obs_dims[group]); every stored group must be present (extra
                groups are ignored).
            actions: (N, A) float.
            rewards: (N,) float.
            terminated: (N,) bool (or 0/1), True for terminal states only.
            next_obs: group -> (N, obs_dims[group]), pass the env's ``extras["final_obs"]`` so
                that truncated rows bootstrap from the pre-reset observation.

        Tensors on another device are copied over. If N > capacity only the last ``capacity``
        rows are kept.

        Raises:
            KeyError: a stored observation group is missing.
            ValueError: a shape does not match.
        """
        n = actions.shape[0]
        if actions.shape != (n, self.num_actions):
            raise ValueError(f"actions must be (N, {self.num_actions}), got {tuple(actions.shape)}")
        if rewards.shape != (n,) or terminated.shape != (n,):
            raise ValueError(
                f"rewards and terminated must be ({n},), got {tuple(rewards.shape)} and {tuple(terminated.shape)}"
            )
        for name, group in (("obs", obs), ("next_obs", next_obs)):
            for g, d in self.obs_dims.items():
                if g not in group:
                    raise KeyError(f"{name} lacks observation group {g!r}; it has {sorted(group)}")
                if group[g].shape != (n, d):
                    raise ValueError(f"{name}[{g!r}] must be ({n}, {d}), got {tuple(group[g].shape)}")

        if n > self.capacity:  # keep only what fits: the newest rows
            keep = slice(n - self.capacity, n)
            obs = {g: v[keep] for g, v in obs.items()}
            next_obs = {g: v[keep] for g, v in next_obs.items()}
            actions, rewards, terminated = actions[keep], rewards[keep], terminated[keep]
            n = self.capacity
        idx = (self.ptr + torch.arange(n, device=self.device)) % self.capacity  # (N,)

        # Host -> accelerator copies may be asynchronous; a copy *to* the CPU must not be (the
        # CPU reads it at once), hence non_blocking only off the CPU.
        non_blocking = self.device.type != "cpu"

        def put(dst: torch.Tensor, src: torch.Tensor) -> None:
            dst.index_copy_(0, idx, src.to(self.device, dst.dtype, non_blocking=non_blocking))

        for g in self.obs_dims:
            put(self.obs[g], obs[g])
            put(self.next_obs[g], next_obs[g])
        put(self.actions, actions)
        put(self.rewards, rewards)
        put(self.terminated, terminated)
        self.ptr = (self.ptr + n) % self.capacity
        self.size = min(self.size + n, self.capacity)
        self.size_tensor.fill_(self.size)

    def sample(
        self, batch_size: int, generator: torch.Generator | None = None, mirror: Mirror | None = None
    ) -> Batch:
        """Draw ``batch_size`` stored transitions uniformly, with replacement.

        Args:
            batch_size: B >= 1.
            generator: optional torch generator for the row indices (on any device; indices
                are drawn on the generator's device and moved). ``None`` uses torch's global RNG.
            mirror: symmetry augmentation: rows ``B // 2`` on are replaced by their mirror image
                (:func:`mirror_half`); ``None`` leaves the batch as drawn.

        Returns:
            :class:`Batch` of B rows on the buffer's device.

        Raises:
            ValueError: the buffer is empty or ``batch_size`` < 1.
        """
        if self.size == 0:
            raise ValueError("Cannot sample from an empty ReplayBuffer; add transitions first")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        index_device = generator.device if generator is not None else self.device
        idx = torch.randint(0, self.size, (batch_size,), device=index_device, generator=generator)
        idx = idx.to(self.device)  # (B,)
        return self._gather(idx, mirror)

    def sample_capturable(self, batch_size: int, mirror: Mirror | None = None) -> Batch:
        """As :meth:`sample`, with nothing decided on the host: the row indices are drawn from the
        device's default generator, ``randint(0, 2**62) % size_tensor``, so the call can be
        captured in a CUDA graph once and replayed while the buffer fills (the modulo's bias is
        below ``capacity / 2**62``). The caller makes sure the buffer is not empty.

        Args:
            batch_size: B >= 1.
            mirror: as :meth:`sample`.

        Returns:
            :class:`Batch` of B rows on the buffer's device.

        Raises:
            ValueError: ``batch_size`` < 1.
        """
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        idx = torch.randint(0, 2**62, (batch_size,), device=self.device) % self.size_tensor  # (B,) int64
        return self._gather(idx, mirror)

    def _gather(self, idx: torch.Tensor, mirror: Mirror | None) -> Batch:
        """The rows ``idx`` (B,) int64 as a :class:`Batch` of copies, its second half mirrored
        when ``mirror`` is given."""
        batch = Batch(
            obs={g: v[idx] for g, v in self.obs.items()},
            actions=self.actions[idx],
            rewards=self.rewards[idx],
            terminated=self.terminated[idx],
            next_obs={g: v[idx] for g, v in self.next_obs.items()},
        )
        return batch if mirror is None else mirror_half(batch, mirror)

    def nbytes(self) -> int:
        """Bytes of storage the buffer holds."""
        tensors = [*self.obs.values(), *self.next_obs.values(), self.actions, self.rewards, self.terminated]
        return sum(t.numel() * t.element_size() for t in tensors)


@torch.no_grad()
def block_rows(block: dict, device: torch.device | str) -> tuple[dict, int]:
    """The async runner's block as replay rows: every (T, N, ...) tensor of ``block`` (values may
    be tensors or dicts of tensors, e.g. ``{"obs": {group: t}, "actions": t}``) reshaped to
    (T * N, ...) and copied to ``device``, one copy per tensor, row ``t * N + i`` = step t, env i.

    Returns:
        (the same nesting with the rows, bytes read from the source tensors)
    """
    nbytes = 0

    def rows(t: torch.Tensor) -> torch.Tensor:
        nonlocal nbytes
        nbytes += t.numel() * t.element_size()
        return t.reshape(-1, *t.shape[2:]).to(device)

    out = {k: {g: rows(t) for g, t in v.items()} if isinstance(v, dict) else rows(v) for k, v in block.items()}
    return out, nbytes


def mirror_half(batch: Batch, mirror: Mirror) -> Batch:
    """Replace rows ``B // 2`` to ``B`` of ``batch`` by their left/right mirror image, in place
    (symmetry augmentation at constant batch size).

    ``obs`` and ``next_obs`` (every group of ``batch`` that ``mirror.obs`` has) and ``actions``
    are mirrored, ``x[..., perm] * sign``; ``rewards`` and ``terminated`` stay, since the mirror
    image of a transition earns the same reward and ends the same way. A :meth:`ReplayBuffer.sample`
    batch holds its own copies of the rows, so the buffer is untouched.

    Args:
        batch: B rows, raw (unnormalized) observations.
        mirror: :class:`unilab_rl.vecenv.Mirror` on the batch's device.

    Returns:
        ``batch`` itself, its second half mirrored.

    Raises:
        KeyError: a group of ``batch`` is missing from ``mirror.obs``.
    """
    half = batch.actions.shape[0] // 2

    def flip(x: torch.Tensor, pair: tuple[torch.Tensor, torch.Tensor]) -> None:
        x[half:] = apply_mirror(x[half:], pair)

    for group in batch.obs:
        flip(batch.obs[group], mirror.obs[group])
        flip(batch.next_obs[group], mirror.obs[group])
    flip(batch.actions, mirror.actions)
    return batch


__all__ = ["Batch", "ReplayBuffer", "block_rows", "mirror_half"]
