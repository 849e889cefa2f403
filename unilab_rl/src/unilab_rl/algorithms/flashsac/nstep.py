"""n-step transitions for the replay buffer, aggregated at insertion time.

FlashSAC's replay buffers fold n consecutive env steps into one stored transition as they are
added (official ``flash_rl/buffers/torch_buffer.py``, ``TorchUniformBuffer._get_n_step_prev_transition``;
the authors' IsaacLab port ``rsl_rl_flashsac/storage/torch_buffer.py``, same method; the port's
runner config uses ``n_steps=3`` with ``gamma=0.99`` for every velocity and tracking task,
``isaaclab_flashsac/rl_cfg.py``). For a window of steps ``k = 0 .. n-1`` of one env, anchored at
step 0, the stored transition is

* observation and action: step 0's;
* reward: ``r_0 + gamma d_0 (r_1 + gamma d_1 (r_2 + ...))`` with ``d_k = 1 - done_k`` and
  ``done_k = terminated_k or truncated_k``: rewards after the window's first episode end are dropped;
* terminated, truncated and next observation: those of the first step in the window that ends
  an episode, else of step ``n - 1``.

The critic then discounts the bootstrap by ``gamma ** n`` (official ``update.py``,
``gamma=gamma**n_step``), also for a window cut short by a time-out: as in both public
implementations, the discount of such a row is not shortened to the steps it holds.
"""

from __future__ import annotations

from collections import deque

import torch


class NStepWindow:
    """The last ``n`` env steps of all N envs, turned into n-step transitions as they arrive.

    :meth:`push` takes one env step of all envs; once ``n`` steps are held it returns the n-step
    transitions anchored at the oldest one (N rows) and drops that step. The first ``n - 1``
    pushes return ``None``. Tensors are kept as given (the caller moves them to the learner
    device first); nothing is copied back to the host.

    Args:
        n: steps per transition (>= 1; 1 returns each step unchanged).
        gamma: discount of the rewards inside the window.

    Raises:
        ValueError: ``n`` < 1.
    """

    def __init__(self, n: int, gamma: float) -> None:
        if n < 1:
            raise ValueError(f"n-step window needs n >= 1, got {n}")
        self.n, self.gamma = n, gamma
        self.steps: deque[tuple] = deque(maxlen=n)

    def clear(self) -> None:
        """Forget the held steps (e.g. when the env is reset out of band)."""
        self.steps.clear()

    def push(
        self,
        obs: dict[str, torch.Tensor],  # group -> (N, d)
        actions: torch.Tensor,  # (N, A)
        rewards: torch.Tensor,  # (N,) float
        terminated: torch.Tensor,  # (N,) bool
        truncated: torch.Tensor,  # (N,) bool
        next_obs: dict[str, torch.Tensor],  # group -> (N, d), pre-reset
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor, torch.Tensor, dict[str, torch.Tensor]] | None:
        """Add one env step of all envs.

        Returns:
            ``None`` while fewer than ``n`` steps are held; else ``(obs, actions, rewards,
            terminated, next_obs)`` of the n-step transitions anchored at the oldest held step:
            group -> (N, d), (N, A), (N,) float32, (N,) bool, group -> (N, d).
        """
        self.steps.append((obs, actions, rewards.float(), terminated.bool(), truncated.bool(), next_obs))
        if len(self.steps) < self.n:
            return None
        first_obs, first_actions = self.steps[0][0], self.steps[0][1]
        _, _, reward, term, _, nxt = self.steps[-1]
        nxt = dict(nxt)
        for k in range(self.n - 2, -1, -1):  # newest-but-one back to the anchor
            _, _, r_k, term_k, trunc_k, next_k = self.steps[k]
            done_k = term_k | trunc_k  # (N,)
            reward = r_k + self.gamma * reward * (~done_k).float()
            term = torch.where(done_k, term_k, term)
            nxt = {g: torch.where(done_k.unsqueeze(-1), next_k[g], v) for g, v in nxt.items()}
        self.steps.popleft()
        return first_obs, first_actions, reward, term, nxt


__all__ = ["NStepWindow"]
