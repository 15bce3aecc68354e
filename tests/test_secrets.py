"""Credentials in a backend URL (`http://user:KEY@host`) are used to connect and never
recorded: not in summary.json, the database, the logs or an error line. The anthropic backend
sends `x-api-key`, the header the Messages API documents."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from helpers import ROOT, cli
from servers import standin_server  # noqa: F401  (the fixture)
from test_backends_cli import environment, every_byte_under

from agentsim.secrets import redact, strip_credentials

NAMING = str(ROOT / "scenarios" / "naming_game.py")
QUICK = ("--set", "agents=8", "--set", "max_rounds=3", "--set", "stop_at=none", "--no-live", "--no-cache")
SECRET = "sk-url-0123456789SECRETINURL"


def test_credentials_in_a_url_are_used_and_never_recorded(tmp_path: Path, standin_server: Any) -> None:
    server = standin_server(capacity=8, api_key=SECRET)
    host = server.url.removeprefix("http://")
    for spec in (f"openai:m@http://user:{SECRET}@{host}/v1", f"tgi:http://user:{SECRET}@{host}"):
        out = tmp_path / spec.partition(":")[0]
        result = cli(NAMING, "--backend", spec, "--out", str(out), *QUICK, env=environment())
        assert result.returncode == 0, result.stderr  # the server requires the key: it was sent
        assert SECRET.encode() not in every_byte_under(out)
        assert SECRET not in result.stdout + result.stderr
        assert f"http://{host}" in (out / "summary.json").read_text(), "the URL is recorded, without its credentials"
    # A refused URL key: the error line names no key either.
    refused = cli(NAMING, "--backend", f"openai:m@http://user:WRONG{SECRET}@{host}/v1", "--out", str(tmp_path / "bad"),
                  *QUICK, env=environment())
    assert refused.returncode == 2 and SECRET not in refused.stderr and "WRONG" not in refused.stderr, refused.stderr


def test_the_anthropic_backend_sends_x_api_key() -> None:
    from aiohttp import web

    from agentsim.llm.anthropic_backend import AnthropicModel
    from agentsim.llm.base import Message, Request, Sampling

    seen: dict[str, str] = {}

    async def messages(request: web.Request) -> web.Response:
        seen.update(request.headers)
        if request.headers.get("x-api-key") != "third-party-key":
            return web.json_response({"type": "error", "error": {"type": "authentication_error"}}, status=401)
        return web.json_response({"id": "m", "type": "message", "role": "assistant", "model": "m",
                                  "content": [{"type": "text", "text": "OK"}], "stop_reason": "end_turn",
                                  "usage": {"input_tokens": 3, "output_tokens": 1}})

    async def scenario() -> str:
        app = web.Application()
        app.add_routes([web.post("/v1/messages", messages)])
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
        model = AnthropicModel(name="anthropic:m", model="m", api_key="third-party-key", base_url=url)
        try:
            completion = await model.complete(Request(messages=(Message("user", "hi"),), sampling=Sampling(max_tokens=1)))
        finally:
            await model.aclose()
            await runner.cleanup()
        return completion.text

    assert asyncio.run(scenario()) == "OK"
    assert seen["x-api-key"] == "third-party-key"


def test_a_user_name_beside_a_password_is_not_masked_but_a_lone_token_is() -> None:
    """`http://agent:KEY@host` once made every later message read `***sim.db`: only the
    password is secret there; a user that stands alone (`https://TOKEN@host`) is the key."""
    strip_credentials("openai:m@http://agent:pass-9f3e@127.0.0.1:1/v1")
    strip_credentials("tgi:https://tok-5b7c1d@127.0.0.1:2")
    assert redact("agentsim.db for agent, pass-9f3e and tok-5b7c1d") == "agentsim.db for agent, *** and ***"
