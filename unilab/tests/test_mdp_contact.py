"""Contact sensors: MJCF construction, air-time bookkeeping on a scripted backend, air-time reward."""

from __future__ import annotations

import math
from types import SimpleNamespace

import mujoco
import pytest
import torch

from unilab.envs import mdp
from unilab.envs.contact import ContactSensor, ContactSensorCfg, add_contact_sensors

FEET = ContactSensorCfg(primary_subtrees=("l", "r"), secondary_body="world", track_air_time=True)
XML = """<mujoco><worldbody><geom name="floor" type="plane" size="0 0 1"/>
<body name="base" pos="0 0 0.3"><freejoint/><geom size="0.05"/>
  <body name="l" pos="0 0.1 -0.26"><joint type="slide" axis="0 0 1"/><geom size="0.05"/></body>
  <body name="r" pos="0 -0.1 -0.26"><joint type="slide" axis="0 0 1"/><geom size="0.05"/></body>
</body></worldbody></mujoco>"""


def test_add_contact_sensors_builds_one_contact_sensor_per_slot():
    spec = mujoco.MjSpec.from_string(XML)
    add_contact_sensors(spec, {"feet": FEET})
    model = spec.compile()
    assert [model.sensor(i).name for i in range(model.nsensor)] == ["feet/l", "feet/r"]
    assert list(model.sensor_dim) == [4, 4]  # found + force
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    assert data.sensordata[0] > 0 and data.sensordata[4] > 0  # both feet touch the floor
    model2 = mujoco.MjModel.from_xml_string(spec.to_xml())  # survives an MJCF round trip
    assert model2.nsensor == 2


def test_contact_sensor_cfg_is_validated():
    with pytest.raises(ValueError, match="exactly one"):
        ContactSensorCfg(primary_subtrees=("l",))
    with pytest.raises(ValueError, match="not in the model"):
        add_contact_sensors(mujoco.MjSpec.from_string(XML), {"x": ContactSensorCfg(("nope",), "world")})


class ScriptedBackend:
    """Returns a scripted ``found`` per slot; force 10 N down when found."""

    def __init__(self, num_envs: int) -> None:
        self.sensor_names = ["feet/l", "feet/r"]
        self.found = torch.zeros(num_envs, 2)

    def sensor(self, name: str) -> torch.Tensor:
        i = self.sensor_names.index(name)
        data = torch.zeros(len(self.found), 4)
        data[:, 0] = self.found[:, i]
        data[:, 3] = -10.0 * (self.found[:, i] > 0)
        return data


def scripted_env(num_envs: int = 1):
    backend = ScriptedBackend(num_envs)
    env = SimpleNamespace(backend=backend, num_envs=num_envs, device=torch.device("cpu"))
    return env, backend


def test_air_time_counts_flight_and_records_it_at_landing():
    env, backend = scripted_env()
    sensor = ContactSensor(env, "feet", FEET)
    dt = 0.02
    # left foot: contact, 3 steps in the air, lands; right foot stays down
    script = [(1, 1), (0, 1), (0, 1), (0, 1), (1, 1), (1, 1)]
    air, landed = [], []
    for left, right in script:
        backend.found[0] = torch.tensor([left, right], dtype=torch.float32) * 3
        sensor.update(dt)
        air.append(round(float(sensor.current_air_time[0, 0]), 6))
        landed.append(bool(sensor.first_contact(dt)[0, 0]))
    assert air == [0.0, 0.02, 0.04, 0.06, 0.0, 0.0]
    assert landed == [True, False, False, False, True, False]
    assert float(sensor.last_air_time[0, 0]) == pytest.approx(0.06)
    assert float(sensor.current_contact_time[0, 1]) == pytest.approx(6 * dt)
    assert sensor.in_contact.tolist() == [[True, True]]
    assert torch.equal(sensor.force[0, :, 2], torch.tensor([-10.0, -10.0]))
    sensor.reset(torch.tensor([0]))
    assert float(sensor.last_air_time.abs().sum() + sensor.current_contact_time.abs().sum()) == 0.0


def test_air_time_window_reward_and_critic_observations():
    env, backend = scripted_env(num_envs=3)
    env.contact_sensors = {"feet": ContactSensor(env, "feet", FEET)}
    env.commands = {"twist": SimpleNamespace(command=torch.tensor([[1.0, 0, 0], [1.0, 0, 0], [0.1, 0, 0]]))}
    sensor = env.contact_sensors["feet"]
    backend.found[:] = torch.tensor([[0, 1], [0, 0], [0, 0]], dtype=torch.float32)
    for _ in range(5):  # 0.1 s in the air
        sensor.update(0.02)
    reward = mdp.foot_air_time_window(env, "feet", threshold_min=0.05, threshold_max=0.5)
    assert reward.tolist() == [1.0, 2.0, 0.0]  # row 2 is commanded below 0.5 m/s: off
    assert torch.allclose(mdp.foot_air_time(env, "feet"), torch.tensor([[0.1, 0.0], [0.1, 0.1], [0.1, 0.1]]))
    assert mdp.foot_contact(env, "feet").tolist() == [[0.0, 1.0], [0.0, 0.0], [0.0, 0.0]]
    forces = mdp.foot_contact_forces(env, "feet")
    assert forces.shape == (3, 6)
    assert forces[0].tolist() == pytest.approx([0, 0, 0, 0, 0, -math.log1p(10.0)])
