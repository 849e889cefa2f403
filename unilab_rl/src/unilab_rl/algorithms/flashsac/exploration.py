"""Exploration noise held for a random number of env steps, and return-based reward scaling.

Both are FlashSAC's (arXiv 2604.04539; ``Holiday-Robot/FlashSAC`` at 87edc90): "broad
exploration" holds the Gaussian noise of ``a = tanh(mu + sigma eps)`` for k steps, k from a Zeta
law truncated to {1, ..., 16} and shared by all envs, eps per env and dimension (official
``_sample_flashsac_actions``); rewards are divided by a running scale of the discounted return so
that returns fit the critic's fixed support (official ``reward_normalization.py``).
"""

from __future__ import annotations

import torch
from torch import nn

from unilab_rl.algorithms.flashsac.update import scale_rewards
from unilab_rl.normalizer import RunningMeanStd


def truncated_zeta_pmf(exponent: float, max_k: int) -> torch.Tensor:
    """``P(k) = k^-s / sum_{j <= max_k} j^-s`` for ``k = 1..max_k``: (max_k,) float64, on the CPU."""
    k = torch.arange(1, max_k + 1, dtype=torch.float64)
    weights = k.pow(-exponent)
    return weights / weights.sum()


class HeldNoise:
    """Standard normal noise (N, A), redrawn once it has been used k times, k ~ truncated Zeta.

    One k for all rows (as the official code); a fresh k is drawn with every fresh noise. With
    ``enabled=False`` k is always 1 (fresh noise every call). The repeat length lives on the host
    (drawn with a CPU generator), so acting does not synchronize with the device.

    Args:
        num_actions: A.
        exponent: Zeta exponent s (FlashSAC: 2).
        max_k: largest repeat length (FlashSAC: 16).
        device: where the noise is drawn.
        enabled: hold the noise at all.
        generator: CPU generator for k; ``None`` uses torch's global CPU RNG.

    Attributes:
        repeat: the current k; ``count``: how many times the current noise has been handed out.
    """

    def __init__(
        self,
        num_actions: int,
        exponent: float = 2.0,
        max_k: int = 16,
        device: torch.device | str = "cpu",
        enabled: bool = True,
        generator: torch.Generator | None = None,
    ) -> None:
        self.num_actions = num_actions
        self.device = torch.device(device)
        self.enabled = enabled
        self.pmf = truncated_zeta_pmf(exponent, max_k)
        self.generator = generator
        self.noise: torch.Tensor | None = None
        self.repeat = 0
        self.count = 0

    def sample_repeat(self) -> int:
        """One k from the truncated Zeta law (1 when disabled)."""
        if not self.enabled:
            return 1
        return int(torch.multinomial(self.pmf, 1, generator=self.generator)) + 1

    def __call__(self, num: int, device: torch.device | str | None = None) -> torch.Tensor:
        """The noise for this env step: (num, A) float32 on ``device`` (default: the one given at
        construction). A change of ``num`` or ``device`` starts a fresh noise."""
        device = self.device if device is None else torch.device(device)
        if (self.noise is None or self.noise.shape[0] != num or self.noise.device != device
                or self.count >= self.repeat):
            self.noise = torch.randn(num, self.num_actions, device=device)
            self.repeat = self.sample_repeat()
            self.count = 0
        self.count += 1
        return self.noise

    def __getstate__(self) -> dict:
        """Pickled and deep-copied without the current noise: a copy (e.g. the async collector's,
        built in another process without the learner's device) starts with a fresh draw."""
        state = dict(self.__dict__)
        state |= {"noise": None, "repeat": 0, "count": 0}
        return state


class RewardScaler(nn.Module):
    """Running scale of the discounted return, used to divide rewards at sampling time.

    :meth:`update` runs once per env step: ``G <- gamma (1 - done) G + r`` per env (``done`` =
    terminated or truncated), then the running variance of ``G`` over all envs and steps and the
    largest ``|G|`` seen are updated. :meth:`forward` divides rewards by
    ``max(sqrt(Var G + eps), max|G| / normalized_g_max)`` (:func:`scale_rewards`). Stored rewards stay
    raw, so old replay rows are rescaled with the current statistics.

    The state dict holds the statistics (variance, count, largest |G|), not the per-env running
    return, whose size depends on the number of envs; a resumed run restarts it at zero.

    Args:
        gamma: discount.
        normalized_g_max: target bound of scaled returns (FlashSAC: 5).
        eps: added to the variance.
        device: where the statistics live.
    """

    return_abs_max: torch.Tensor

    def __init__(
        self, gamma: float, normalized_g_max: float = 5.0, eps: float = 1e-8, device: torch.device | str = "cpu"
    ) -> None:
        super().__init__()
        self.gamma, self.normalized_g_max, self.eps = gamma, normalized_g_max, eps
        self.return_stats = RunningMeanStd(1, device=device)
        self.register_buffer("return_abs_max", torch.zeros((), device=device))
        self.returns: torch.Tensor | None = None
        """(N,) running discounted return per env; created at the first update."""

    @torch.no_grad()
    def update(self, rewards: torch.Tensor, done: torch.Tensor) -> None:
        """Advance the running returns by one env step; rewards (N,) float, done (N,) bool."""
        rewards = rewards.to(self.return_abs_max.device, torch.float32)
        done = done.to(rewards.device).bool()
        if self.returns is None or self.returns.shape != rewards.shape:
            self.returns = torch.zeros_like(rewards)
        self.returns = self.gamma * (~done).float() * self.returns + rewards
        torch.maximum(self.return_abs_max, self.returns.abs().max(), out=self.return_abs_max)
        self.return_stats.update(self.returns.unsqueeze(-1))

    def forward(self, rewards: torch.Tensor) -> torch.Tensor:
        """Scaled rewards, same shape."""
        return scale_rewards(rewards, self.return_stats.var, self.return_abs_max, self.normalized_g_max, self.eps)

    def scale(self) -> torch.Tensor:
        """() the current divisor."""
        return torch.maximum(torch.sqrt(self.return_stats.var + self.eps), self.return_abs_max / self.normalized_g_max).reshape(())


__all__ = ["HeldNoise", "RewardScaler", "truncated_zeta_pmf"]
