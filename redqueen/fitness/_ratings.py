"""TrueSkill-style skill ratings for teachers and students (openskill's Weng-Lin models)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from openskill.models import PlackettLuce, ThurstoneMostellerFull

_MODELS = {"plackett_luce": PlackettLuce, "thurstone_mosteller": ThurstoneMostellerFull}

#: How many standard deviations the conservative rating subtracts (PopuLoRA, TrueSkill).
CONSERVATIVE_K = 3.0


def conservative_rating(mu: float, sigma: float, k: float = CONSERVATIVE_K) -> float:
    """The conservative skill estimate ``mu - k * sigma`` (``k = 3`` by default).

    TrueSkill's leaderboard rule (Herbrich, Minka & Graepel, NeurIPS 2006) and PopuLoRA's
    ranking: a member is ranked by a skill it has at least with probability ~99.9%, so a lucky
    newcomer with few matches does not outrank a proven member. Every place that ranks or
    reports by the conservative rating calls this function.
    """
    return float(mu) - float(k) * float(sigma)


class RatingSystem:
    """Bayesian skill ratings (mu, sigma) updated from pairwise match outcomes.

    A thin, checkpointable layer over openskill's Weng-Lin models (Weng & Lin, "A Bayesian
    approximation method for online ranking", JMLR 2011), which behave like TrueSkill. PopuLoRA
    ranks members by the conservative estimate ``lcb = mu - 3 sigma`` (:func:`conservative_rating`), so a lucky newcomer
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
        self._configure(mu, sigma, model=model, beta=beta, tau=tau)

    def _configure(
        self, mu: float, sigma: float, *, model: str, beta: float | None, tau: float
    ) -> None:
        """Set the settings and forget every rating (the constructor, and a checkpoint's load)."""
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

    def set(self, id: str, rating: tuple[float, float]) -> tuple[float, float]:  # noqa: A002
        """Give ``id`` the rating ``(mu, sigma)`` (e.g. a newborn's inherited rating).

        Raises:
            ValueError: If sigma is not positive or either value is not finite.
        """
        mu, sigma = float(rating[0]), float(rating[1])
        if not (math.isfinite(mu) and math.isfinite(sigma)) or sigma <= 0:
            raise ValueError(f"RatingSystem.set: rating of {id!r} needs a finite mu and sigma > 0, got {rating}")
        self._ratings[id] = (mu, sigma)
        return self._ratings[id]

    def lcb(self, id: str, c: float = CONSERVATIVE_K) -> float:  # noqa: A002
        """Conservative skill ``mu - c * sigma`` (:func:`conservative_rating`)."""
        mu, sigma = self.get(id)
        return conservative_rating(mu, sigma, c)

    def win_probability(self, a: str | tuple[float, float], b: str | tuple[float, float]) -> float:
        """Predicted probability that ``a`` beats ``b``; each is an id or a ``(mu, sigma)``
        rating (e.g. a frozen past member's)."""
        ra, rb = self._rating(a), self._rating(b)
        return float(self._model.predict_win([[ra], [rb]])[0])

    def record_against(self, id: str, opponent: tuple[float, float], score: float, opponent_score: float) -> None:  # noqa: A002
        """Update only ``id``'s rating from a match against a frozen opponent of rating
        ``opponent`` (a hall-of-fame member, whose rating does not move)."""
        rated, frozen = self._rating(id), self._rating(opponent)
        if score == opponent_score:
            [[new], _] = self._model.rate([[rated], [frozen]], ranks=[0, 0])
        elif score > opponent_score:
            [[new], _] = self._model.rate([[rated], [frozen]], ranks=[0, 1])
        else:
            _, [new] = self._model.rate([[frozen], [rated]], ranks=[0, 1])
        self._ratings[id] = (float(new.mu), float(new.sigma))

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
        self._configure(state["mu"], state["sigma"], model=state["model"], beta=state["beta"], tau=state["tau"])
        self._ratings = {k: (float(v[0]), float(v[1])) for k, v in state["ratings"].items()}

    def _rating(self, id: str | tuple[float, float]):  # noqa: A002
        mu, sigma = self.get(id) if isinstance(id, str) else (float(id[0]), float(id[1]))
        return self._model.rating(mu=mu, sigma=sigma, name=id if isinstance(id, str) else None)

    def __repr__(self) -> str:
        return f"RatingSystem(model={self.model_name!r}, n={len(self._ratings)})"
