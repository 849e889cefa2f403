"""RunningMeanStd against numpy statistics of the concatenated batches."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from unilab_rl.normalizer import RunningMeanStd


def test_matches_numpy_over_uneven_batches() -> None:
    rng = np.random.default_rng(0)
    batches = [rng.normal(loc=3.0, scale=s, size=(n, 4)) for n, s in [(1, 1.0), (7, 2.0), (100, 0.5), (33, 5.0)]]
    rms = RunningMeanStd(4)
    for b in batches:
        rms.update(torch.as_tensor(b, dtype=torch.float32))
    everything = np.concatenate(batches)
    np.testing.assert_allclose(rms.mean.numpy(), everything.mean(0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rms.var.numpy(), everything.var(0), rtol=1e-4, atol=1e-5)
    assert int(rms.count) == len(everything)


def test_normalizes_with_eps_and_clips() -> None:
    rms = RunningMeanStd(2, eps=1e-2, clip=5.0)
    x = torch.tensor([[0.0, 10.0], [2.0, 10.0]])  # feature 0: mean 1, std 1; feature 1 constant
    rms.update(x)
    y = rms(torch.tensor([[3.0, 10.0], [100.0, 10.1]]))
    torch.testing.assert_close(y[0], torch.tensor([2.0 / 1.01, 0.0]))
    assert y[1, 0] == 5.0  # clipped
    assert y[1, 1] == 5.0  # 0.1 / (0 + eps) = 10, clipped: eps keeps constant features finite


def test_forward_does_not_update() -> None:
    rms = RunningMeanStd(3)
    rms(torch.randn(10, 3))
    assert int(rms.count) == 0


def test_state_dict_round_trip() -> None:
    a, b = RunningMeanStd(3), RunningMeanStd(3)
    a.update(torch.randn(50, 3) * 4 + 1)
    b.load_state_dict(a.state_dict())
    x = torch.randn(5, 3)
    torch.testing.assert_close(a(x), b(x))
    assert int(b.count) == 50


def test_rejects_wrong_shape() -> None:
    with pytest.raises(ValueError, match=r"\(N, 3\)"):
        RunningMeanStd(3).update(torch.zeros(4, 2))
