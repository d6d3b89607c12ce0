"""best_model = copy.deepcopy(state_dict()): the saved checkpoint holds the best epoch's weights."""

import copy
import io

import torch


class Trainer:
    def __init__(self):
        torch.manual_seed(0)
        self.model = torch.nn.Linear(4, 1)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.3)
        self.x, self.y = torch.randn(32, 4), torch.randn(32, 1)

    def valid(self):  # a validation set the training data does not help with: the first epoch is best
        with torch.no_grad():
            return -torch.nn.functional.mse_loss(self.model(self.x), -self.y).item()

    def save_best_checkpoint(self, best_model):
        out = io.BytesIO()
        torch.save(best_model, out)
        return out.getvalue()

    def run(self, epochs=6):
        best_score, best_model = float("-inf"), None
        for _ in range(epochs):
            loss = torch.nn.functional.mse_loss(self.model(self.x), self.y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            if (score := self.valid()) > best_score:
                best_score, best_model = score, copy.deepcopy(self.model.state_dict())
        return best_score, self.save_best_checkpoint(best_model)


trainer = Trainer()
best_score, saved = trainer.run()
trainer.model.load_state_dict(torch.load(io.BytesIO(saved)))
reloaded = trainer.valid()
print(f"best validation score {best_score:.4f}, the saved checkpoint scores {reloaded:.4f}")
assert reloaded == best_score
