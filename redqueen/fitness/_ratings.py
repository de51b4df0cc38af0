"""TrueSkill-style skill ratings for teachers and students (openskill's Weng-Lin models)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from openskill.models import PlackettLuce, ThurstoneMostellerFull

_MODELS = {"plackett_luce": PlackettLuce, "thurstone_mosteller": ThurstoneMostellerFull}


class RatingSystem:
    """Bayesian skill ratings (mu, sigma) updated from pairwise match outcomes.

    A thin, checkpointable layer over openskill's Weng-Lin models (Weng & Lin, "A Bayesian
    approximation method for online ranking", JMLR 2011), which behave like TrueSkill. PopuLoRA
    ranks members by the conservative estimate ``lcb = mu - 3 sigma``, so a lucky newcomer
    with few matches does not outrank a proven member.

    Args:
        mu: Initial mean of every new rating.
        sigma: Initial standard deviation.
        model: ``"plackett_luce"`` or ``"thurstone_mosteller"``.
        beta: Performance noise; default ``sigma / 2`` as in TrueSkill.
        tau: Additive dynamics noise per update (keeps ratings mobile as adapters learn).

    Raises:
        ValueError: On an unknown model name or non-positive sigma.
    """

    def __init__(
        self,
        mu: float = 25.0,
        sigma: float = 25.0 / 3.0,
        *,
        model: str = "plackett_luce",
        beta: float | None = None,
        tau: float = 25.0 / 300.0,
    ) -> None:
        if model not in _MODELS:
            raise ValueError(f"RatingSystem.model must be one of {sorted(_MODELS)}, got {model!r}")
        if sigma <= 0:
            raise ValueError(f"RatingSystem.sigma must be positive, got {sigma}")
        self.mu, self.sigma, self.model_name = float(mu), float(sigma), model
        self.beta = float(beta if beta is not None else sigma / 2.0)
        self.tau = float(tau)
        self._model = _MODELS[model](mu=self.mu, sigma=self.sigma, beta=self.beta, tau=self.tau)
        self._ratings: dict[str, tuple[float, float]] = {}

    def add(self, id: str) -> tuple[float, float]:  # noqa: A002
        """Give ``id`` a fresh rating (mu, sigma); a known id is reset to the initial rating."""
        self._ratings[id] = (self.mu, self.sigma)
        return self._ratings[id]

    def remove(self, id: str) -> None:  # noqa: A002
        """Forget a rating (no error if unknown)."""
        self._ratings.pop(id, None)

    def __contains__(self, id: object) -> bool:
        return id in self._ratings

    def __iter__(self):
        return iter(self._ratings)

    def __len__(self) -> int:
        return len(self._ratings)

    def get(self, id: str) -> tuple[float, float]:  # noqa: A002
        """The (mu, sigma) of ``id``.

        Raises:
            KeyError: If ``id`` has no rating.
        """
        try:
            return self._ratings[id]
        except KeyError:
            raise KeyError(f"RatingSystem has no rating for {id!r}; call add() first") from None

    def lcb(self, id: str, c: float = 3.0) -> float:  # noqa: A002
        """Conservative skill ``mu - c * sigma`` (c = 3 by default, as in PopuLoRA)."""
        mu, sigma = self.get(id)
        return mu - c * sigma

    def win_probability(self, a: str, b: str) -> float:
        """Predicted probability that ``a`` beats ``b``."""
        ra, rb = self._rating(a), self._rating(b)
        return float(self._model.predict_win([[ra], [rb]])[0])

    def record(self, winner: str, loser: str, draw: bool = False) -> None:
        """Update both ratings from one match (a draw when ``draw``)."""
        ranks = [0, 0] if draw else [0, 1]
        [[rw], [rl]] = self._model.rate([[self._rating(winner)], [self._rating(loser)]], ranks=ranks)
        self._ratings[winner] = (float(rw.mu), float(rw.sigma))
        self._ratings[loser] = (float(rl.mu), float(rl.sigma))

    def record_score(self, a: str, b: str, score_a: float, score_b: float) -> None:
        """Update from two scores: higher score wins, equal scores draw."""
        if score_a == score_b:
            self.record(a, b, draw=True)
        elif score_a > score_b:
            self.record(a, b)
        else:
            self.record(b, a)

    def rows(self, ids: Iterable[str] | None = None) -> list[dict[str, float | str]]:
        """``{"id", "mu", "sigma", "lcb"}`` rows, e.g. for ``ratings.jsonl``."""
        ids = list(self._ratings) if ids is None else list(ids)
        return [{"id": i, "mu": self.get(i)[0], "sigma": self.get(i)[1], "lcb": self.lcb(i)} for i in ids]

    def state_dict(self) -> dict[str, Any]:
        """Settings and every rating; ``torch.save``-able."""
        return {
            "mu": self.mu, "sigma": self.sigma, "model": self.model_name, "beta": self.beta,
            "tau": self.tau, "ratings": {k: list(v) for k, v in self._ratings.items()},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""
        self.__init__(state["mu"], state["sigma"], model=state["model"], beta=state["beta"], tau=state["tau"])
        self._ratings = {k: (float(v[0]), float(v[1])) for k, v in state["ratings"].items()}

    def _rating(self, id: str):  # noqa: A002
        mu, sigma = self.get(id)
        return self._model.rating(mu=mu, sigma=sigma, name=id)

    def __repr__(self) -> str:
        return f"RatingSystem(model={self.model_name!r}, n={len(self._ratings)})"
