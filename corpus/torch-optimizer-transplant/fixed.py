"""A deep copy of the student's state loaded into the teacher: each keeps its own buffers."""

import copy

import torch

torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
x, y = torch.randn(16, 4), torch.randn(16, 1)


def train_step(optimizer):
    loss = torch.nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()


student = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
train_step(student)
teacher = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
teacher.load_state_dict(copy.deepcopy(student.state_dict()))
teacher_buffer = teacher.state[model.weight]["momentum_buffer"].clone()
train_step(student)  # only the student steps

moved = not torch.equal(teacher.state[model.weight]["momentum_buffer"], teacher_buffer)
print(f"the teacher's momentum moved with the student's step: {moved}")
assert not moved
