"""The commons' parameters: the paper's defaults (Piatti et al. 2024, Section 5 and Appendix B)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ...llm.base import Sampling
from ...params import Params, require

Resource = Literal["fishing", "pasture", "pollution"]


@dataclass(frozen=True, kw_only=True)
class CommonsParams(Params):
    """One GovSim setting. `agents` counts the villagers (with `newcomer`, the last of them is
    the newcomer, absent until `newcomer_month`); the language model that extracts the agreed
    limit is one more agent, outside the village, on the population's last backend."""

    resource: Resource = "fishing"
    agents: int = 5
    months: int | None = None  # None: GovSim's horizon, 12 months (15 with a newcomer)
    max_rounds: int = 0  # a cap on steps (scheduler rounds; 0: none): a run ends with its months or a collapse
    capacity: int = 100
    initial_stock: int = 100
    growth: float = 2.0  # the stock left after harvest is multiplied by this, up to capacity
    collapse_below: int = 5  # the stock after harvest below this: the resource collapses
    # conditions of the paper
    communication: bool = True  # False: the no-communication ablation (no discussion, no limit)
    universalization: bool = False  # the sustainability-threshold sentence in every memory, each month
    # True: each agreed limit stays a memory for its 63 days, as GovSim's code keeps it (a harvest
    # then shows the last two or three agreements); False: a new agreement ends the one before it.
    keep_superseded_limits: bool = False
    newcomer: bool = False  # the last villager joins at `newcomer_month`, with the outsider's goal
    newcomer_month: int = 4  # GovSim's perturbation round 3, counted from 0: after three months of four villagers
    # the discussion and the agents' memory (GovSim's persona.py and converse.py)
    max_utterances: int = 9  # villagers' utterances per discussion: GovSim's ten steps, the mayor's report the first
    harvest_top_k: int | None = None  # memories retrieved at harvest; None: GovSim's, 10 (pollution: 14)
    discussion_top_k: int = 5  # per focal point: the context and each of the last four utterances
    reflection_top_k: int = 10
    max_insights: int = 10  # insights a reflection keeps, at most one per memory shown (GovSim's reflect_prompts.py)
    # sampling: the paper decodes greedily
    temperature: float = 0.0
    top_p: float | None = None
    max_tokens: int = 400
    max_reasks: int = 2  # re-asks with a reminder after an unusable reply, then a recorded fallback
    # send each answer's format as a grammar (harvest 0 to the stock, yes/no and the next speaker,
    # ratings 1-10), where the backend constrains decoding (llama.cpp, TGI, vLLM): grammars.py
    constrained_decoding: bool = False

    def validate(self) -> None:
        require(self.agents >= 2, f"agents must be at least 2 (got {self.agents})")
        require(self.max_rounds >= 0, f"max_rounds must be >= 0 (got {self.max_rounds})")
        require(self.months is None or self.months >= 1, f"months must be at least 1 (got {self.months})")
        require(self.capacity >= 1, f"capacity must be at least 1 (got {self.capacity})")
        require(0 <= self.initial_stock <= self.capacity,
                f"initial_stock must be between 0 and capacity={self.capacity} (got {self.initial_stock})")
        require(self.growth >= 1, f"growth must be at least 1 (got {self.growth})")
        require(0 <= self.collapse_below <= self.capacity, f"collapse_below must be in [0, capacity] (got {self.collapse_below})")
        require(not self.newcomer or self.agents >= 3, "newcomer needs agents >= 3 (a community of two and the newcomer)")
        require(not self.newcomer or 2 <= self.newcomer_month <= self.horizon,
                f"newcomer_month must be between 2 and months={self.horizon} (got {self.newcomer_month})")
        require(1 <= self.max_utterances <= 100, f"max_utterances must be between 1 and 100 (got {self.max_utterances})")
        require((self.harvest_top_k or 1) >= 1 and self.discussion_top_k >= 1 and self.reflection_top_k >= 1,
                "harvest_top_k, discussion_top_k and reflection_top_k must be >= 1")
        require(self.max_insights >= 1, f"max_insights must be >= 1 (got {self.max_insights})")
        require(0 <= self.max_reasks <= 100, f"max_reasks must be between 0 and 100 (got {self.max_reasks})")
        self.sampling()

    @property
    def horizon(self) -> int:
        """The months a run lasts unless the resource collapses."""
        return self.months or (15 if self.newcomer else 12)

    @property
    def community(self) -> int:
        """The villagers present from the first month (the newcomer joins later)."""
        return self.agents - 1 if self.newcomer else self.agents

    def sampling(self) -> Sampling:
        return Sampling(temperature=self.temperature, top_p=self.top_p, max_tokens=self.max_tokens)

    def sustainable_catch(self, stock: int) -> int:
        """The most the whole group can take from `stock` for the stock not to shrink by next
        month: what is left must regrow to at least `stock` (h - X >= h / growth)."""
        return int(stock - -(-stock // self.growth)) if self.growth > 1 else 0

    def threshold(self, stock: int) -> int:
        """f(t), the sustainability threshold per person: floor(h (1 - 1/growth) / N), the
        paper's floor(h / 10) for five fishers and doubling. N is the community the run starts
        with, as GovSim's code divides by its configured `num_agents` (4 in the newcomer
        condition, also after the newcomer joins; concurrent_env.py)."""
        return int(stock * (1 - 1 / self.growth) // self.community)
