"""deploy/Dockerfile and deploy/docker-compose.yml, checked without Docker.

Docker does not run on the build machines, so these tests read the files: the services,
that every mounted file exists, that ports agree between the compose file, the Prometheus
scrape config, the evaluator's config and the image, and that the image runs as a non-root
user with a health check.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import pytest

from evaluator.config import load_settings
from tests.deploy.deploy_support import DEPLOY, REPO, alerting_rules, load_yaml

COMPOSE = load_yaml(DEPLOY / "docker-compose.yml")
SERVICES: dict[str, dict[str, Any]] = COMPOSE["services"]
PROMETHEUS = load_yaml(DEPLOY / "prometheus" / "prometheus.yml")


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined."""
    text = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n\s*", " ", "\n".join(lines))
    return [
        (parts[0].upper(), parts[1].strip() if len(parts) > 1 else "")
        for parts in (line.strip().split(None, 1) for line in joined.splitlines() if line.strip())
    ]


def _instruction(name: str) -> list[str]:
    return [args for instr, args in _instructions() if instr == name]


def _final_stage() -> list[tuple[str, str]]:
    instructions = _instructions()
    last_from = max(i for i, (instr, _) in enumerate(instructions) if instr == "FROM")
    return instructions[last_from:]


def _exec_form(args: str) -> list[str]:
    value = json.loads(args)
    assert isinstance(value, list), f"not the exec form: {args}"
    return value


def _image_cmd() -> list[str]:
    (entrypoint,) = _instruction("ENTRYPOINT")
    (cmd,) = _instruction("CMD")
    return _exec_form(entrypoint) + _exec_form(cmd)


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def _bind_mounts(service: str) -> list[tuple[Path, str]]:
    """(host path, container path) of a service's bind mounts; named volumes left out."""
    mounts = []
    for volume in SERVICES[service].get("volumes", []):
        source, target = volume.split(":")[:2]
        if source.startswith((".", "/")):
            mounts.append(((DEPLOY / source).resolve(), target))
    return mounts


def _host_path(service: str, container_path: str) -> Path:
    """The host file behind ``container_path`` through the service's bind mounts."""
    for host, target in _bind_mounts(service):
        target_path = PurePosixPath(target)
        wanted = PurePosixPath(container_path)
        if wanted == target_path or target_path in wanted.parents:
            return host / wanted.relative_to(target_path)
    raise AssertionError(f"{container_path} is not mounted into {service}")


def _published(service: str) -> dict[int, int]:
    """container port -> host port of a service's published ports."""
    published = {}
    for spec in SERVICES[service].get("ports", []):
        host_ip, host_port, container_port = spec.split(":")
        assert host_ip == "127.0.0.1", f"{service}: publish on loopback only, not {spec}"
        published[int(container_port)] = int(host_port)
    return published


def _scrape_targets(job: str) -> list[str]:
    (config,) = [c for c in PROMETHEUS["scrape_configs"] if c["job_name"] == job]
    return [t for static in config["static_configs"] for t in static["targets"]]


def test_services() -> None:
    """The compose file runs exactly the service, the evaluator, Prometheus, Alertmanager and
    Grafana."""
    assert set(SERVICES) == {"rag", "evaluator", "prometheus", "alertmanager", "grafana"}


def test_evaluator_image_is_built_from_the_source_tree() -> None:
    """The rag and evaluator images are built from this checkout, with the shipped Dockerfile."""
    for service in ("rag", "evaluator"):
        build = SERVICES[service]["build"]
        context = (DEPLOY / build["context"]).resolve()
        assert context == REPO
        assert (context / build["dockerfile"]).resolve() == DEPLOY / "Dockerfile"


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_every_bind_mount_exists(service: str) -> None:
    """Every host path a service mounts exists in the repository."""
    for host, target in _bind_mounts(service):
        assert host.exists(), f"{service}: {host} (mounted at {target}) does not exist"


def test_named_volumes_are_declared() -> None:
    """Every named volume a service uses is declared."""
    declared = set(COMPOSE["volumes"])
    used = {
        v.split(":")[0]
        for service in SERVICES.values()
        for v in service.get("volumes", [])
        if not v.startswith((".", "/"))
    }
    assert used == declared


def test_prometheus_scrapes_the_evaluator_where_it_listens() -> None:
    """Prometheus scrapes the evaluator's service name on the port the image listens on."""
    (target,) = _scrape_targets("rag-evaluator")
    host, port = target.rsplit(":", 1)
    assert host == "evaluator"
    listen = _flag(_image_cmd(), "--listen")
    assert listen == f"0.0.0.0:{port}"
    assert int(port) in _published("evaluator")
    (exposed,) = _instruction("EXPOSE")
    assert exposed == port


def test_prometheus_container_loads_this_config_and_the_rules() -> None:
    """The Prometheus container is started with the shipped config and rule files."""
    command = SERVICES["prometheus"]["command"]
    config = next(c.split("=", 1)[1] for c in command if c.startswith("--config.file="))
    host_config = _host_path("prometheus", config)
    assert host_config == (DEPLOY / "prometheus" / "prometheus.yml").resolve()
    for pattern in PROMETHEUS["rule_files"]:
        assert sorted(host_config.parent.glob(pattern)), f"{pattern} matches no rule file"
    assert "--enable-feature=exemplar-storage" in command
    assert 9090 in _published("prometheus")


def test_alertmanager_is_where_prometheus_sends_alerts() -> None:
    """Prometheus sends alerts to the compose Alertmanager, on its port."""
    (manager,) = PROMETHEUS["alerting"]["alertmanagers"]
    (target,) = manager["static_configs"][0]["targets"]
    host, port = target.split(":")
    assert host == "alertmanager"
    assert int(port) in _published("alertmanager")
    command = SERVICES["alertmanager"]["command"]
    config = next(c.split("=", 1)[1] for c in command if c.startswith("--config.file="))
    assert _host_path("alertmanager", config) == (DEPLOY / "compose" / "alertmanager.yml").resolve()


def test_alertmanager_config_routes_and_inhibits_known_names() -> None:
    """The compose Alertmanager routes to declared receivers and inhibits only alerts the rules
    define."""
    config = load_yaml(DEPLOY / "compose" / "alertmanager.yml")
    receivers = {r["name"] for r in config["receivers"]}
    routes = [config["route"], *config["route"].get("routes", [])]
    assert {r["receiver"] for r in routes} <= receivers
    severities = {
        m.split("=", 1)[1].strip('"')
        for r in routes
        for m in r.get("matchers", [])
        if m.startswith("severity=")
    }
    assert severities == {r["labels"]["severity"] for r in alerting_rules()}
    alerts = {r["alert"] for r in alerting_rules()}
    for rule in config["inhibit_rules"]:
        for matcher in rule["source_matchers"]:
            names = re.fullmatch(r'alertname=~?"([\w|]+)"', matcher)
            assert names and set(names[1].split("|")) <= alerts, matcher


def test_grafana_gets_provisioning_and_dashboards() -> None:
    """Grafana gets the shipped provisioning, an existing home dashboard and the Prometheus
    datasource at its published port."""
    assert (
        _host_path("grafana", "/etc/grafana/provisioning")
        == (DEPLOY / "grafana" / "provisioning").resolve()
    )
    home = SERVICES["grafana"]["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert _host_path("grafana", home).is_file()
    (datasource,) = load_yaml(
        DEPLOY / "grafana" / "provisioning" / "datasources" / "prometheus.yml"
    )["datasources"]
    url = urlsplit(datasource["url"])
    assert url.hostname == "prometheus"
    assert url.port in _published("prometheus")


def test_evaluator_config_is_mounted_and_points_at_the_rag_service() -> None:
    """The evaluator's config is the mounted file, and its targets are the compose rag service."""
    config_path = _flag(_image_cmd(), "--config")
    host_config = _host_path("evaluator", config_path)
    assert host_config == (DEPLOY / "compose" / "evaluator.toml").resolve()
    config = tomllib.loads(host_config.read_text(encoding="utf-8"))
    (target,) = config["targets"]
    url = urlsplit(target["url"])
    assert url.hostname == "rag"
    rag = SERVICES["rag"]["command"]
    assert url.port == int(_flag(rag, "--port"))
    assert _flag(rag, "--host") == "0.0.0.0"
    assert SERVICES["rag"]["entrypoint"] == ["python", "-m", "evaluator.reference"]
    assert SERVICES["evaluator"]["depends_on"]["rag"]["condition"] == "service_healthy"
    for job in config["jobs"]:
        dataset = _host_path("evaluator", job["dataset"])
        assert dataset.is_file(), f"{job['dataset']} -> {dataset} does not exist"


def test_evaluator_config_passes_the_evaluators_validation() -> None:
    """The compose evaluator.toml loads with the evaluator's own validation, each job naming a
    target."""
    settings = load_settings(DEPLOY / "compose" / "evaluator.toml")
    assert [job.target for job in settings.jobs] == [t.label for t in settings.targets]
    assert all(job.interval_seconds for job in settings.jobs), "the stale alert needs intervals"


def test_reports_volume_is_where_the_image_writes_them() -> None:
    """The reports volume is mounted where the image's command writes reports."""
    reports = _flag(_image_cmd(), "--reports-dir")
    assert f"reports:{reports}" in SERVICES["evaluator"]["volumes"]
    (volume,) = _instruction("VOLUME")
    assert json.loads(volume) == [reports]


def test_evaluator_container_is_read_only_without_privileges() -> None:
    """The evaluator container runs read-only, with a tmpfs /tmp, no new privileges and no
    capabilities."""
    service = SERVICES["evaluator"]
    assert service["read_only"] is True
    assert "/tmp" in service["tmpfs"]
    assert service["cap_drop"] == ["ALL"]
    assert "no-new-privileges:true" in service["security_opt"]


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_ports_are_published_on_loopback_only(service: str) -> None:
    """Grafana, Prometheus and Alertmanager have no authentication here: not on the LAN."""
    assert _published(service), f"{service} publishes no port"


def test_dockerfile_base_and_install() -> None:
    """The Dockerfile builds on the declared base and installs the locked requirements, by hash."""
    (base,) = _instruction("ARG")
    assert base == "BASE=python:3.11-slim"
    froms = _instruction("FROM")
    assert [f.split()[0] for f in froms] == ["${BASE}", "${BASE}"]
    (install,) = [args for instr, args in _final_stage() if instr == "RUN" and "pip" in args]
    # the locked versions only, hash-checked, from the wheels stage; the package without deps
    assert "--no-index" in install and "--require-hashes -r /tmp/requirements.lock" in install
    assert "source=deploy/requirements.lock" in install
    assert "--no-deps /wheels/evaluator-" in install and "pip check" in install


def test_dockerfile_has_no_frontend_directive() -> None:
    """`# syntax=...` makes BuildKit pull a frontend image: offline and mirror builds fail."""
    text = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    assert not re.search(r"^#\s*syntax\s*=", text, re.M | re.I)
    assert not re.search(r"^#\s*(escape|check)\s*=", text, re.M | re.I)


def test_dockerfile_run_example_mounts_existing_files() -> None:
    """The header's `docker run` example (tests/image/ runs it) mounts files that exist and
    the config the compose stack uses, so it stays one tested configuration."""
    text = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    mounts = re.findall(r'-v "\$PWD/([^:"]+):([^:"]+):ro"', text)
    assert dict(mounts) == {
        "deploy/compose/evaluator.toml": "/etc/evaluator/evaluator.toml",
        "evals": "/etc/evaluator/evals",
    }
    for host, _ in mounts:
        assert (REPO / host).exists(), host


def test_dockerfile_runs_as_a_non_root_user() -> None:
    """The image's final stage runs as a numeric non-root user."""
    users = [args for instr, args in _final_stage() if instr == "USER"]
    assert users, "no USER in the final stage"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0")
    assert re.search(rf"useradd .*--uid {user}\b", " ".join(_instruction("RUN")))


def test_dockerfile_healthcheck_probes_healthz_with_python() -> None:
    """The image's healthcheck probes /healthz with Python (no curl in a slim image), with an
    interval."""
    (healthcheck,) = _instruction("HEALTHCHECK")
    options, _, command = healthcheck.partition("CMD ")
    assert "--interval=" in options and "--timeout=" in options
    argv = _exec_form(command)
    assert argv[:2] == ["python", "-c"]
    code = argv[2]
    ast.parse(code)  # valid Python, not a shell snippet
    port = _flag(_image_cmd(), "--listen").rsplit(":", 1)[1]
    assert f"http://127.0.0.1:{port}/healthz" in code
    assert "curl" not in healthcheck and "wget" not in healthcheck


def test_compose_healthcheck_of_the_rag_service_is_valid_python() -> None:
    """The rag service's healthcheck is a Python one-liner that parses."""
    test = SERVICES["rag"]["healthcheck"]["test"]
    assert test[:3] == ["CMD", "python", "-c"]
    ast.parse(test[3])
    assert f"http://127.0.0.1:{_flag(SERVICES['rag']['command'], '--port')}/healthz" in test[3]


def test_dockerignore_keeps_what_the_build_needs() -> None:
    """The build context's ignore file keeps what the Dockerfile copies and drops local state."""
    lines = (DEPLOY / "Dockerfile.dockerignore").read_text(encoding="utf-8").splitlines()
    patterns = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    assert patterns[0] == "*", "an allow-list: ignore everything, then re-include"
    kept = [p[1:].rstrip("/") for p in patterns if p.startswith("!")]
    assert {"pyproject.toml", "evaluator", "deploy/requirements.lock"} <= set(kept)
    for path in ("pyproject.toml", "evaluator"):
        assert (REPO / path).exists()
    readme = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"].get(
        "readme"
    )
    assert readme is None or readme in kept


def test_image_command_is_the_daemon_on_all_interfaces() -> None:
    """The image runs `evaluator serve` on all interfaces with the mounted config."""
    argv = _image_cmd()
    assert argv[:2] == ["evaluator", "serve"]
    assert _flag(argv, "--config") == "/etc/evaluator/evaluator.toml"
    assert _flag(argv, "--listen").startswith("0.0.0.0:")


@pytest.mark.e2e
def test_compose_file_matches_the_compose_spec_schema() -> None:
    """The compose file validates against the (vendored) compose-spec schema."""
    result = _check_compose(DEPLOY / "docker-compose.yml")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.e2e
def test_compose_spec_schema_rejects_a_misspelt_key(tmp_path: Path) -> None:
    """The schema check is not vacuous: a misspelt key fails it."""
    broken = {**COMPOSE, "services": {**SERVICES, "rag": {**SERVICES["rag"], "comand": ["x"]}}}
    path = tmp_path / "docker-compose.yml"
    path.write_text(json.dumps(broken), encoding="utf-8")
    assert _check_compose(path).returncode != 0


def _check_compose(path: Path) -> subprocess.CompletedProcess[str]:
    binary = Path(sys.executable).parent / "check-jsonschema"
    return subprocess.run(
        [str(binary), "--builtin-schema", "vendor.compose-spec", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_compose_v2_is_stated() -> None:
    """Top-level `name:` needs Compose v2; the header says so."""
    assert "name" in COMPOSE
    assert "Docker Compose v2" in (DEPLOY / "docker-compose.yml").read_text(encoding="utf-8")


def _seconds(duration: str) -> float:
    units = {"h": 3600, "m": 60, "s": 1, "ms": 0.001, "us": 1e-6}
    parts = re.findall(r"(\d+(?:\.\d+)?)(h|ms|m|s|us)", duration)
    assert "".join(n + u for n, u in parts) == duration, duration
    return sum(float(n) * units[u] for n, u in parts)


def test_stop_grace_period_outlasts_the_daemons_grace() -> None:
    """Docker's default 10 s would SIGKILL a run the daemon's 30 s grace lets finish."""
    settings = load_settings(DEPLOY / "compose" / "evaluator.toml")
    grace = _seconds(SERVICES["evaluator"]["stop_grace_period"])
    assert grace >= settings.shutdown_grace_seconds + 10


def test_alertmanager_runs_as_one_replica_without_gossip() -> None:
    """The compose Alertmanager runs alone, its cluster gossip switched off."""
    assert "--cluster.listen-address=" in SERVICES["alertmanager"]["command"]
