"""Running mean / variance observation normalizer on the learner device."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn


class RunningMeanStd(nn.Module):
    """Empirical per-feature mean and variance, updated from batches, used to normalize inputs.

    Batches are merged with the parallel-variance formula of Chan, Golub & LeVeque (1979),
    "Updating formulae and a pairwise algorithm for computing sample variances" (the batch form of
    Welford's algorithm), as in SB3's and FastTD3's ``RunningMeanStd`` / ``EmpiricalNormalization``.
    The variance is the population variance (``ddof=0``).

    Normalization is ``clamp((x - mean) / (sqrt(var) + eps), -clip, clip)``. The default
    ``eps = 1e-2`` is FastSAC's (holosoma 0.0.3 ``agents/fast_sac/``, running mean/std with eps
    1e-2); it keeps near-constant features (e.g. a command that never changes) from blowing up.

    State lives in buffers (``mean``, ``var``: (dim,) float32; ``count``: () int64, since MPS has
    no float64), so ``state_dict`` / ``load_state_dict`` and ``.to(device)`` work as for any module.

    Args:
        dim: feature size.
        eps: added to the standard deviation.
        clip: normalized values are clamped to ``[-clip, clip]``; ``None`` disables clamping.
        device: where the statistics live.
    """

    mean: torch.Tensor
    var: torch.Tensor
    count: torch.Tensor

    def __init__(
        self,
        dim: int,
        *,
        eps: float = 1e-2,
        clip: float | None = 5.0,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        if dim <= 0:
            raise ValueError(f"RunningMeanStd needs dim >= 1, got {dim}")
        if eps <= 0:
            raise ValueError(f"RunningMeanStd needs eps > 0, got {eps}")
        if clip is not None and clip <= 0:
            raise ValueError(f"RunningMeanStd needs clip > 0 or None, got {clip}")
        self.dim = dim
        self.eps = eps
        self.clip = clip
        self.register_buffer("mean", torch.zeros(dim, device=device))
        self.register_buffer("var", torch.ones(dim, device=device))
        self.register_buffer("count", torch.zeros((), dtype=torch.int64, device=device))

    @torch.no_grad()
    def update(self, x: torch.Tensor, reduce: Callable[[torch.Tensor], None] | None = None) -> None:
        """Merge a batch into the statistics.

        Args:
            x: (N, dim) float; N >= 1. Moved to the statistics' device if needed.
            reduce: data-parallel training (:mod:`unilab_rl.distributed`): a function that sums a
                tensor in place over all ranks. The batch's moments (count, sum, sum of squares,
                float64) are summed first, so every rank merges the same global batch and the
                statistics stay identical across ranks. ``None``: this batch alone.

        Raises:
            ValueError: ``x`` is not (N, dim).
        """
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ValueError(f"RunningMeanStd.update expects (N, {self.dim}), got {tuple(x.shape)}")
        x = x.to(self.mean.device, torch.float32)
        if reduce is None:
            self.merge(x.mean(dim=0), x.var(dim=0, unbiased=False), x.shape[0])
            return
        moments = batch_moments(x)[None]  # (1, 1 + 2 dim)
        reduce(moments)
        self.merge_moments(moments[0])

    @torch.no_grad()
    def merge_moments(self, moments: torch.Tensor) -> None:
        """Merge a batch given as its summed moments ``[count, sum (dim), sum of squares (dim)]``
        (float64, :func:`batch_moments`, possibly summed over ranks)."""
        count = moments[0]
        batch_mean = moments[1 : 1 + self.dim] / count
        batch_var = (moments[1 + self.dim :] / count - batch_mean.square()).clamp_min(0.0)
        self.merge(batch_mean.to(torch.float32), batch_var.to(torch.float32), int(round(float(count))))

    @torch.no_grad()
    def merge(self, batch_mean: torch.Tensor, batch_var: torch.Tensor, batch_count: int) -> None:
        """Merge a batch given by its (dim,) mean, (dim,) population variance and row count."""
        # Chan et al. (1979): combine (mean_a, M2_a, n_a) and (mean_b, M2_b, n_b).
        total = self.count + batch_count  # ()
        w_batch = batch_count / total.to(torch.float32)  # () in (0, 1]
        delta = batch_mean - self.mean  # (dim,)
        new_mean = self.mean + delta * w_batch
        # M2 / total = var_a * (1 - w) + var_b * w + delta^2 * w * (1 - w)
        new_var = self.var * (1.0 - w_batch) + batch_var * w_batch + delta.square() * w_batch * (1.0 - w_batch)
        self.mean.copy_(new_mean)
        self.var.copy_(new_var)
        self.count.copy_(total)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Normalize ``x`` (..., dim) with the current statistics; does not update them."""
        y = (x - self.mean) / (self.var.sqrt() + self.eps)
        if self.clip is not None:
            y = y.clamp(-self.clip, self.clip)
        return y

    def extra_repr(self) -> str:
        return f"dim={self.dim}, eps={self.eps}, clip={self.clip}"


def batch_moments(x: torch.Tensor) -> torch.Tensor:
    """``[count, sum over rows (dim), sum of squares over rows (dim)]`` of (N, dim) ``x``, float64
    (float32 on MPS, which has no float64); sums of these over ranks describe the union batch."""
    dtype = torch.float32 if x.device.type == "mps" else torch.float64
    x = x.to(dtype)
    count = torch.full((1,), x.shape[0], dtype=dtype, device=x.device)
    return torch.cat([count, x.sum(0), x.square().sum(0)])


__all__ = ["RunningMeanStd", "batch_moments"]
