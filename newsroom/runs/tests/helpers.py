from __future__ import annotations

from asgiref.sync import sync_to_async

from newsroom.runs.executor import RunExecutor
from newsroom.runs.models import Run
from newsroom.runs.worker import claim_run, queue_run, worker_tag
from newsroom.sources.models import Source


def add_source(reader, url: str, title: str, kind: str = "feed", **extra) -> Source:
    return Source.objects.create(
        reader=reader, url=url, title=title, kind=kind, **extra
    )


async def execute(run: Run, web, **kw) -> RunExecutor:
    """Claim `run` and execute it to the end with the test web's client."""
    assert await sync_to_async(claim_run)(run, worker_tag())
    client = web.client()
    executor = RunExecutor(run, client=client, **kw)
    try:
        await executor.execute()
    finally:
        await client.aclose()
    return executor


async def run_reader(reader, web, **kw) -> tuple[Run, RunExecutor]:
    run = await sync_to_async(queue_run)(reader, Run.Trigger.MANUAL)
    executor = await execute(run, web, **kw)
    await sync_to_async(run.refresh_from_db)()
    return run, executor


def states(run: Run) -> dict[str, tuple[str, str]]:
    """title -> (state, error) from the run's SAVED status."""
    return {s["title"]: (s["state"], s["error"]) for s in run.status["sources"]}
