"""Each observation handed out is a copy (dm_control's answer): the history is the rollout."""

import numpy as np


class Walker:
    """Stands in for the environment, as fixed: each observation returned is its own."""

    def __init__(self):
        self.obs = np.zeros(2)
        self.t = 0

    def step(self, action):
        self.t += 1
        self.obs[0] = self.t
        self.obs[1] = action
        return self.obs.copy(), float(self.t), self.t >= 4


env, history, done = Walker(), [], False
while not done:
    obs, reward, done = env.step(0.5)
    history.append(obs)

print("positions:", [o[0] for o in history])
assert [o[0] for o in history] == [1.0, 2.0, 3.0, 4.0]
