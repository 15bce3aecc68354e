"""One model served by several servers: `openai:MODEL@URL1|URL2`, `tgi:URL1|URL2`.

A sweep that outgrows one inference server runs the same model on several (vLLM or TGI on
several GPUs or machines) and names them all in one spec. That spec is one backend: one
limiter (so `--max-in-flight` bounds the calls to all of them together, across a Ray
cluster too), one budget, one cache entry per prompt whichever server answered. Each
request goes to the server with the fewest of this process's calls in flight, the one that
was sent fewest on a tie: the servers share the load evenly. Servers of one model answer a
seeded request alike, so which one answered changes no run.
"""

from __future__ import annotations

from .base import Completion, LanguageModel, Request

SEPARATOR = "|"


class RoutedModel:
    def __init__(self, servers: list[LanguageModel], *, name: str, endpoint: str) -> None:
        if not servers:
            raise ValueError("a routed model needs at least one server")
        self.servers = servers
        self.name = name
        self.endpoint = endpoint  # what the response cache keys on: every server's address
        self.immediate = all(server.immediate for server in servers)
        self.in_flight = [0] * len(servers)
        self.sent = [0] * len(servers)

    async def complete(self, request: Request) -> Completion:
        index = min(range(len(self.servers)), key=lambda each: (self.in_flight[each], self.sent[each]))
        self.in_flight[index] += 1
        self.sent[index] += 1
        try:
            return await self.servers[index].complete(request)
        finally:
            self.in_flight[index] -= 1

    async def aclose(self) -> None:
        for server in self.servers:
            await server.aclose()
