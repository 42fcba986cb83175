"""The deployed artifact runs: every function of template.yaml, from `sam build`'s output, handles the
events in events/ against moto_server, each in an isolated interpreter that sees only what Lambda gives
it: the function's folder and the dependency layer's python/ folder (`python -I -S`: no site-packages,
no PYTHONPATH, no checkout).

The layer's third-party packages are built for Lambda (arm64, python3.13) and cannot load here, so they
are installed again for this machine from the same layers/deps/requirements.txt (tokenizers without its
dependencies, as layers/deps/Makefile does); the foldgate package and the search model are the
artifact's own, with the CLI and developer tooling already stripped. A module-level import of an
optional package (prometheus-client, quicktok, llama-cpp-python, anything in dev) fails here.

Skips with the reason when .aws-sam/build is absent (`make sam-build`; `make test` builds it first).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from foldgate.dev.bench.moto import aws_env, create_table_from_template, start_moto
from foldgate.dev.layer_bytecode import check_layer, find_interpreter
from foldgate.dev.procs import stop_process
from tests.procs import REPO, replay

pytestmark = pytest.mark.e2e

BUILD = REPO / ".aws-sam" / "build"
LAYER = REPO / "layers" / "deps"
MODEL_NAME = "all-MiniLM-L6-v2-int8"
# The operator key: the bearer events/admin_status.json carries.
OPERATOR = json.loads((REPO / "events" / "admin_status.json").read_text())["headers"]["authorization"][7:]

# Runs inside the isolated interpreter: Lambda's python runtime puts the function folder (its working
# directory) and /opt/python on sys.path, imports the handler module and calls the handler per event.
DRIVER = """
import json, sys
function, layer, handler_name, events = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
sys.path[:0] = [function, layer]
import importlib

class Context:
    function_name = "artifact-test"
    aws_request_id = "0f3c2b1a-artifact"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:artifact-test"
    memory_limit_in_mb = 1024

    @staticmethod
    def get_remaining_time_in_millis():
        return 25_000

module_name, _, attr = handler_name.rpartition(".")
handler = getattr(importlib.import_module(module_name), attr)
for path in events:
    with open(path) as f:
        event = json.load(f)
    result = handler(event, Context())
    print("RESULT " + json.dumps(result, default=str), flush=True)
leaked = sorted(m for m in sys.modules if m.split(".")[0] in ("pytest", "prometheus_client", "quicktok",
    "llama_cpp", "moto", "tests") or m.startswith(("foldgate.dev", "foldgate.app.cli")))
print("LEAKED " + json.dumps(leaked), flush=True)
print("PATHS " + json.dumps(sorted({getattr(m, "__file__", None) or "" for m in list(sys.modules.values())
    if getattr(m, "__name__", "").startswith("foldgate")})[:3]), flush=True)
"""


def _template_functions() -> dict[str, tuple[str, str]]:
    """Each function's logical id -> (CodeUri folder name, handler) as template.yaml declares them."""
    text = (REPO / "template.yaml").read_text()
    out: dict[str, tuple[str, str]] = {}
    for match in re.finditer(
        r"^  (\w+):\n    Type: AWS::Serverless::Function\n((?:    .*\n|\n)*)", text, re.M
    ):
        body = match.group(2)
        code = re.search(r"^      CodeUri: (\S+)", body, re.M)
        handler = re.search(r"^      Handler: (\S+)", body, re.M)
        assert code is not None, match.group(1)
        # McpFunction's Handler is an !If (run.sh behind the Lambda Web Adapter, or app.handler): the
        # buffered handler is what API Gateway invokes, and run.sh serves that same app.
        name = handler.group(1) if handler is not None and "!If" not in handler.group(1) else "app.handler"
        out[match.group(1)] = (code.group(1).rstrip("/").split("/")[-1], name)
    return out


FUNCTIONS = _template_functions()


@pytest.fixture(scope="module")
def layer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The artifact's layer python/ folder with its third-party packages built for this machine."""
    built = BUILD / "DependencyLayer"
    if not (built / "python" / "foldgate").is_dir():
        # make test builds it first and sets this: there, a missing artifact is a failure, not a skip.
        if os.environ.get("FOLDGATE_TEST_REQUIRE_ARTIFACT") == "1":
            pytest.fail(f"no sam build output in {BUILD}, though make test ran sam-build first")
        pytest.skip(f"no sam build output in {BUILD}: run `make sam-build` (make test does)")
    target = tmp_path_factory.mktemp("layer") / "python"
    lines = [ln.split("#", 1)[0].strip() for ln in (LAYER / "requirements.txt").read_text().splitlines()]
    reqs = [ln for ln in lines if ln]
    no_deps = [r for r in reqs if re.match(r"^tokenizers\b", r)]
    pip = [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-compile",
           "--only-binary=:all:", "--target", str(target)]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    subprocess.run([*pip, *[r for r in reqs if r not in no_deps]], check=True, timeout=900, env=env)
    subprocess.run([*pip, "--no-deps", *no_deps], check=True, timeout=300, env=env)
    shutil.rmtree(target / "foldgate", ignore_errors=True)
    shutil.copytree(built / "python" / "foldgate", target / "foldgate")
    return target


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """moto_server with the table, the index queue and one tenant's config in Parameter Store (its
    upstreams replay the demo catalog on loopback); the functions' environment."""
    tmp = tmp_path_factory.mktemp("artifact")
    endpoint, proc = start_moto()
    try:
        aws = {k: v for k, v in aws_env(endpoint).items() if v is not None}
        session = boto3.Session(
            aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
        )
        table = f"foldgate-{uuid.uuid4().hex[:8]}"
        create_table_from_template(session.client("dynamodb", endpoint_url=endpoint), table)
        queue = session.client("sqs", endpoint_url=endpoint).create_queue(QueueName=table)["QueueUrl"]
        ssm = session.client("ssm", endpoint_url=endpoint)
        with replay() as upstream:
            prefix = "/foldgate"
            config = {"servers": [{"name": n, "url": u} for n, u in upstream.urls.items()]}
            ssm.put_parameter(
                Name=f"{prefix}/tenants/acme/config", Value=json.dumps(config), Type="String", Overwrite=True
            )
            yield {
                **aws,
                "FOLDGATE_STORE": "dynamodb",
                "FOLDGATE_TABLE_NAME": table,
                "FOLDGATE_CONFIG_SOURCE": "ssm",
                "FOLDGATE_CONFIG_PREFIX": prefix,
                "FOLDGATE_DEFAULT_TENANT": "acme",
                "FOLDGATE_AUTH_REQUIRED": "false",
                "FOLDGATE_ALLOW_PRIVATE_UPSTREAMS": "true",
                "FOLDGATE_OPERATOR_KEY": OPERATOR,
                "FOLDGATE_INDEX_QUEUE_URL": queue,
                "FOLDGATE_SERVE_CODE": "true",
                "FOLDGATE_EMBEDDING_PROVIDER": "local",
                # Where the layer puts the model (/opt/model/<name>), here the artifact's own copy.
                "FOLDGATE_MODEL_DIR": str(BUILD / "DependencyLayer" / "model" / MODEL_NAME),
                "POWERTOOLS_TRACE_DISABLED": "true",
                "POWERTOOLS_METRICS_NAMESPACE": "foldgate",
                "HOME": str(tmp),
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            }
    finally:
        stop_process(proc)


def _run(function: str, layer: Path, env: dict[str, str], events: list[Path]) -> list[Any]:
    folder, handler = FUNCTIONS[function]
    code = BUILD / function
    assert (code / "app.py").is_file(), f"{code} is not in the sam build output"
    python = getattr(sys, "_base_executable", sys.executable)
    cmd = [python, "-I", "-S", "-c", DRIVER, str(code), str(layer), handler, *map(str, events)]
    done = subprocess.run(cmd, cwd=code, env=env, capture_output=True, text=True, timeout=300)
    out = done.stdout
    assert done.returncode == 0, f"{function} ({folder}): {done.stderr[-4000:]}"
    leaked = json.loads(next(ln for ln in out.splitlines() if ln.startswith("LEAKED "))[7:])
    assert leaked == [], f"{function} imported what the layer does not ship: {leaked}"
    paths = json.loads(next(ln for ln in out.splitlines() if ln.startswith("PATHS "))[6:])
    assert all(p.startswith(str(layer)) for p in paths if p), paths
    return [json.loads(ln[7:]) for ln in out.splitlines() if ln.startswith("RESULT ")]


def _events(tmp: Path, *names: str, **made: dict[str, Any]) -> list[Path]:
    paths = [REPO / "events" / n for n in names]
    for name, doc in made.items():
        path = tmp / f"{name}.json"
        path.write_text(json.dumps(doc))
        paths.append(path)
    return paths


def _mcp_body(result: dict[str, Any]) -> dict[str, Any]:
    assert result["statusCode"] == 200, result
    body: dict[str, Any] = json.loads(result["body"])
    return body


def test_every_template_function_is_in_the_build_and_tested() -> None:
    tested = {"IndexerFunction", "IndexScheduleFunction", "McpFunction", "AdminFunction", "CodeFunction",
              "TaskWorkerFunction"}  # fmt: skip
    assert set(FUNCTIONS) == tested


def test_the_layer_ships_bytecode_of_the_runtime_python_only() -> None:
    # layers/deps/Makefile compiles the layer with the runtime's Python where one is found
    # (foldgate.dev.layer_bytecode): every .pyc is then that Python's, unchecked-hash, and foldgate has
    # all of its own; a build without one ships none (never bytecode of another Python).
    built = BUILD / "DependencyLayer" / "python"
    if not (built / "foldgate").is_dir():
        pytest.skip(f"no sam build output in {BUILD}: run `make sam-build` (make test does)")
    runtime = re.search(r"^\s+Runtime: python(\d+)\.(\d+)", (REPO / "template.yaml").read_text(), re.M)
    assert runtime is not None
    interpreter = find_interpreter((int(runtime.group(1)), int(runtime.group(2))))
    if interpreter is None:
        assert not list(built.rglob("*.pyc")), "bytecode in the layer, but no runtime Python to check it"
        pytest.skip(f"no python{runtime.group(1)}.{runtime.group(2)} here: the build shipped no bytecode")
    assert check_layer(built, interpreter) == []
    assert (built / "pydantic" / "__pycache__" / f"main.{interpreter.cache_tag}.pyc").is_file()


@pytest.fixture(scope="module")
def indexed(layer: Path, cloud: dict[str, str]) -> list[Any]:
    """IndexerFunction with the direct invoke, the one-server invoke and a queue message."""
    return _run(
        "IndexerFunction",
        layer,
        cloud,
        _events(BUILD, "reindex_invoke.json", "server_change_invoke.json", "sqs-index.json"),
    )


def test_the_indexer_indexes_the_tenant(indexed: list[Any]) -> None:
    reindex, server, batch = indexed
    assert reindex["errors"] == {}, reindex
    assert reindex["tenants"]["acme"]["tools"] > 0, reindex
    assert server["errors"] == {}, server
    assert batch == {"batchItemFailures": []}, batch


def test_the_schedule_enqueues_every_tenant(layer: Path, cloud: dict[str, str]) -> None:
    (scheduled, fresh) = _run(
        "IndexScheduleFunction", layer, cloud, _events(BUILD, "schedule.json", "freshness.json")
    )
    assert scheduled["enqueued"] == 1, scheduled
    assert fresh, fresh


def test_the_mcp_function_lists_describes_and_calls(
    layer: Path, cloud: dict[str, str], indexed: list[Any]
) -> None:
    names = ["healthz.json", "mcp_initialize.json", "mcp_tools_list.json", "mcp_describe_tool.json",
             "mcp_tools_call.json", "mcp_tools_call_invalid.json"]  # fmt: skip
    health, init, listed, described, called, invalid = _run(
        "McpFunction", layer, cloud, _events(BUILD, *names)
    )
    assert health["statusCode"] == 200, health
    assert _mcp_body(init)["result"]["serverInfo"]["name"]
    tools = {t["name"] for t in _mcp_body(listed)["result"]["tools"]}
    assert {"crm__find_contact", "describe_tool"} <= tools
    assert not _mcp_body(described)["result"].get("isError"), described
    assert not _mcp_body(called)["result"].get("isError"), called
    assert _mcp_body(invalid)["result"]["isError"] is True


def test_the_admin_function_answers_the_operator(
    layer: Path, cloud: dict[str, str], indexed: list[Any], tmp_path: Path
) -> None:
    status = json.loads((REPO / "events" / "admin_status.json").read_text())
    status["rawQueryString"] = "tenant=acme"
    status["queryStringParameters"] = {"tenant": "acme"}
    (answer, login) = _run(
        "AdminFunction",
        layer,
        cloud,
        [*_events(tmp_path, status=status), REPO / "events" / "console_login.json"],
    )
    assert answer["statusCode"] == 200, answer
    assert json.loads(answer["body"])["tools"] > 0
    assert login["statusCode"] in (200, 303), login


def test_the_code_function_lists_its_surface(
    layer: Path, cloud: dict[str, str], indexed: list[Any], tmp_path: Path
) -> None:
    listing = json.loads((REPO / "events" / "mcp_tools_list.json").read_text())
    listing["rawPath"] = listing["requestContext"]["http"]["path"] = "/mcp/code"
    listing["routeKey"] = "POST /mcp/code"
    (listed,) = _run("CodeFunction", layer, cloud, _events(tmp_path, code=listing))
    assert _mcp_body(listed)["result"]["tools"], listed


def test_the_task_worker_answers_an_unknown_task(layer: Path, cloud: dict[str, str], tmp_path: Path) -> None:
    (outcome,) = _run("TaskWorkerFunction", layer, cloud, _events(tmp_path, task={"task_id": "0" * 32}))
    assert set(outcome) == {"task"}, outcome
    assert outcome["task"] != "invalid event"
