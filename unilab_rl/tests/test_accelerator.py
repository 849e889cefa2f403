"""Learner on an accelerator with the env on the CPU (skipped where no accelerator exists)."""

from __future__ import annotations

import pytest
import torch

from unilab_rl import OffPolicyRunner
from unilab_rl.device import available_devices

ACCELERATOR = next((d.split(":")[0] for d in available_devices() if d != "cpu"), None)
needs_accelerator = pytest.mark.skipif(ACCELERATOR is None, reason="no cuda, xpu or mps device here")


@needs_accelerator
@pytest.mark.parametrize("use_compile", [False, "auto"])
def test_learner_on_accelerator_env_on_cpu(make_env, make_sac, use_compile) -> None:
    env = make_env(num_envs=16, max_episode_length=5)
    sac = make_sac(env, device=ACCELERATOR, compile=use_compile)
    expected = "inductor" if (use_compile == "auto" and ACCELERATOR == "cuda") else "eager"
    assert sac.compile_backend == expected
    assert sac.replay.device.type == ACCELERATOR and next(sac.actor.parameters()).device.type == ACCELERATOR

    logged: list[dict[str, float]] = []
    OffPolicyRunner(env, sac, log_fn=lambda it, m: logged.append(m)).learn(8)
    assert "Loss/actor" in logged[-1] and all(torch.isfinite(torch.tensor(list(logged[-1].values()))))
    actions = sac.act(env.reset()["actor"])
    assert actions.device == env.device
    # Checkpoints made on the accelerator load on the CPU.
    cpu = make_sac(env)
    cpu.load_state_dict(sac.state_dict())
    obs = torch.randn(4, 1)
    torch.testing.assert_close(cpu.act(obs, deterministic=True), sac.act(obs, deterministic=True), rtol=1e-4, atol=1e-4)
