"""GOAT as a Harbor installed agent.

Harbor runs an installed agent in the task's container in two steps: an
install, then a run with the task's instruction. This agent copies one
GOAT binary in (nothing is downloaded), says in its logs which command
containment GOAT got there (``goat tools list``), and runs ``goat run
--output jsonl --logs-dir /logs/agent``: the events, an ATIF trajectory
and the run's patch land in the trial's agent logs. GOAT's exit code
decides what Harbor records (docs/harness.md, "Exit status"): any exit
but 0 raises in ``exec_as_agent``, so Harbor records an agent error that
quotes it. A run whose only trouble was a refused call exits 0 here
(``--allow-denials``; set ``GOAT_HARBOR_DENIALS_FAIL=1`` to have it fail):
the verifier, not the refusal, scores the task.

The engine comes from Harbor's agent environment (``--ae``):
``GOAT_ENGINE_URL``, ``GOAT_MODEL`` (else Harbor's ``--model``), and
``GOAT_API_KEY_ENV`` naming the variable that holds a key. The binary is
``GOAT_BINARY`` on the host (else ``goat`` on ``PATH``); it must run on the
task image's libc.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from pathlib import Path
from typing import Any

from harbor.agents.capabilities import AgentCapabilities
from harbor.agents.installed.base import BaseInstalledAgent
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext

#: Where the binary goes in the container: a place of its own, never
#: under /usr or /etc (docs/harness.md, "what a view needs").
REMOTE_BINARY = "/installed-agent/goat"
#: Harbor keeps what is written here as the trial's agent logs.
REMOTE_LOGS = "/logs/agent"


def host_binary() -> Path:
    """The GOAT binary to install: ``GOAT_BINARY``, else ``goat`` on PATH."""
    named = os.environ.get("GOAT_BINARY")
    found = named or shutil.which("goat")
    if not found:
        raise RuntimeError(
            "no GOAT binary to install: set GOAT_BINARY to one built for the "
            "task image's libc (cargo build --release --bin goat), or put goat on PATH"
        )
    path = Path(found)
    if not path.is_file() or not os.access(path, os.X_OK):
        raise RuntimeError(f"GOAT_BINARY {path} is not an executable file")
    return path


def run_command(deny_fails: bool) -> str:
    """The shell line the agent runs in the task's working directory."""
    goat = shlex.quote(REMOTE_BINARY)
    logs = shlex.quote(REMOTE_LOGS)
    allow_denials = "" if deny_fails else " --allow-denials"
    return (
        f"mkdir -p {logs} && "
        # Which containment run_command gets here, for whoever reads the logs.
        f"{{ {goat} --version; {goat} tools list; }} > {logs}/goat-tools.txt 2>&1; "
        f"{goat} run --output jsonl --logs-dir {logs}"
        " --allow-writes --allow-commands" + allow_denials + " -"
        f" < {logs}/instruction.md > {logs}/stdout.jsonl"
    )


def read_usage(logs_dir: Path) -> dict[str, Any]:
    """Tokens from GOAT's trajectory (ATIF ``final_metrics``) and its last
    event (``usage``, which also has the engine's cached tokens)."""
    usage: dict[str, Any] = {}
    trajectory = logs_dir / "trajectory.json"
    if trajectory.is_file():
        try:
            metrics = json.loads(trajectory.read_text()).get("final_metrics") or {}
        except (ValueError, AttributeError):
            metrics = {}
        usage["n_input_tokens"] = metrics.get("total_prompt_tokens")
        usage["n_output_tokens"] = metrics.get("total_completion_tokens")
        usage["n_cache_tokens"] = metrics.get("total_cached_tokens")
        usage["cost_usd"] = metrics.get("total_cost_usd")
    events = logs_dir / "events.jsonl"
    if events.is_file():
        last = last_event(events)
        turn = last.get("usage") or {}
        for key, field in (
            ("n_input_tokens", "prompt_tokens"),
            ("n_output_tokens", "completion_tokens"),
            ("n_cache_tokens", "cached_tokens"),
        ):
            if usage.get(key) is None:
                usage[key] = turn.get(field)
        usage["goat_outcome"] = last.get("outcome")
        usage["goat_exit_code"] = last.get("exit_code")
    return usage


def last_event(events: Path) -> dict[str, Any]:
    """The last whole JSON object in ``events.jsonl``; ``{}`` when there is
    none (a run killed mid-line leaves a partial last line)."""
    for line in reversed(events.read_text(errors="replace").splitlines()):
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            return event
    return {}


class Goat(BaseInstalledAgent):
    """``goat run`` in the task's container."""

    capabilities = AgentCapabilities(atif=True)

    @staticmethod
    def name() -> str:
        return "goat"

    def get_version_command(self) -> str | None:
        return f"{shlex.quote(REMOTE_BINARY)} --version"

    def parse_version(self, stdout: str) -> str:
        return stdout.strip().splitlines()[0] if stdout.strip() else stdout

    async def install(self, environment: BaseEnvironment) -> None:
        await environment.upload_file(host_binary(), REMOTE_BINARY)
        await self.exec_as_root(
            environment, f"chmod 755 {shlex.quote(REMOTE_BINARY)}"
        )

    async def run(
        self, instruction: str, environment: BaseEnvironment, context: AgentContext
    ) -> None:
        env: dict[str, str] = {}
        # Only Harbor's --ae reaches the container (the host's own
        # environment does not), so only it decides whether --model is used.
        if not self.extra_env.get("GOAT_MODEL") and self.model_name:
            env["GOAT_MODEL"] = self.model_name
        # The instruction goes in as a file, read from stdin: no length limit
        # of a command line, no quoting of what the task says.
        await self._upload_config_text(
            environment,
            content=self.render_instruction(instruction),
            remote_path=f"{REMOTE_LOGS}/instruction.md",
            filename="instruction.md",
        )
        deny_fails = os.environ.get("GOAT_HARBOR_DENIALS_FAIL") == "1"
        await self.exec_as_agent(
            environment, run_command(deny_fails), env=env or None
        )

    def populate_context_post_run(self, context: AgentContext) -> None:
        usage = read_usage(self.logs_dir)
        context.n_input_tokens = usage.get("n_input_tokens")
        context.n_output_tokens = usage.get("n_output_tokens")
        context.n_cache_tokens = usage.get("n_cache_tokens")
        context.cost_usd = usage.get("cost_usd")
        context.metadata = {
            **(context.metadata or {}),
            "goat_outcome": usage.get("goat_outcome"),
            "goat_exit_code": usage.get("goat_exit_code"),
        }
