"""The Kubernetes manifests of deploy/k8s/ (base: one replica; sharded: a StatefulSet).

Core kinds are validated against the Kubernetes OpenAPI schemas that kubernetes-validate
ships (strict: unknown fields are errors). The Prometheus Operator's ServiceMonitor and
PrometheusRule are checked against the subset of their CRD schemas these files use, with
unknown fields forbidden: the API server would prune a misspelt field silently.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from evaluator.config import HttpTargetConfig, load_settings
from evaluator.dataset import parse_dataset
from tests.deploy.deploy_support import (
    DEPLOY,
    REPO,
    RULE_FILES,
    SCRAPE_JOB,
    load_yaml,
    load_yaml_all,
    run_promtool,
)

K8S = DEPLOY / "k8s"
#: Oldest Kubernetes the manifests target: the pod-index label of the sharded StatefulSet
#: is set from 1.28 on.
K8S_VERSION = "1.30.0"
CRD_KINDS = {"ServiceMonitor", "PrometheusRule"}
_DURATION = (
    "^(0|" + "".join(f"(([0-9]+){unit})?" for unit in ("y", "w", "d", "h", "m", "s", "ms")) + ")$"
)
_STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
_METADATA = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"},
        "namespace": {"type": "string"},
        "labels": _STRING_MAP,
        "annotations": _STRING_MAP,
    },
    "additionalProperties": False,
}
_LABEL_SELECTOR = {
    "type": "object",
    "properties": {
        "matchLabels": _STRING_MAP,
        "matchExpressions": {"type": "array", "items": {"type": "object"}},
    },
    "additionalProperties": False,
}

# monitoring.coreos.com/v1, the fields these manifests use (prometheus-operator's CRDs).
CRD_SCHEMAS: dict[str, dict[str, Any]] = {
    "ServiceMonitor": {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": {"const": "monitoring.coreos.com/v1"},
            "kind": {"const": "ServiceMonitor"},
            "metadata": _METADATA,
            "spec": {
                "type": "object",
                "required": ["selector", "endpoints"],
                "properties": {
                    "jobLabel": {"type": "string"},
                    "selector": _LABEL_SELECTOR,
                    "namespaceSelector": {"type": "object"},
                    "endpoints": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "properties": {
                                "port": {"type": "string"},
                                "path": {"type": "string"},
                                "scheme": {"enum": ["http", "https"]},
                                "interval": {"type": "string", "pattern": _DURATION},
                                "scrapeTimeout": {"type": "string", "pattern": _DURATION},
                                "honorLabels": {"type": "boolean"},
                                "relabelings": {"type": "array"},
                                "metricRelabelings": {"type": "array"},
                            },
                            "additionalProperties": False,
                        },
                    },
                },
                "additionalProperties": False,
            },
        },
        "additionalProperties": False,
    },
    "PrometheusRule": {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": {"const": "monitoring.coreos.com/v1"},
            "kind": {"const": "PrometheusRule"},
            "metadata": _METADATA,
            "spec": {
                "type": "object",
                "properties": {
                    "groups": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["name", "rules"],
                            "properties": {
                                "name": {"type": "string", "minLength": 1},
                                "interval": {"type": "string", "pattern": _DURATION},
                                "limit": {"type": "integer"},
                                "rules": {
                                    "type": "array",
                                    "items": {
                                        "type": "object",
                                        "required": ["expr"],
                                        "properties": {
                                            "alert": {"type": "string"},
                                            "record": {"type": "string"},
                                            "expr": {"type": ["string", "integer"]},
                                            "for": {"type": "string", "pattern": _DURATION},
                                            "keep_firing_for": {
                                                "type": "string",
                                                "pattern": _DURATION,
                                            },
                                            "labels": _STRING_MAP,
                                            "annotations": _STRING_MAP,
                                        },
                                        "oneOf": [
                                            {
                                                "required": ["alert"],
                                                "not": {"required": ["record"]},
                                            },
                                            {
                                                "required": ["record"],
                                                "not": {
                                                    "anyOf": [
                                                        {"required": ["alert"]},
                                                        {"required": ["for"]},
                                                        {"required": ["annotations"]},
                                                    ]
                                                },
                                            },
                                        ],
                                        "additionalProperties": False,
                                    },
                                },
                            },
                            "additionalProperties": False,
                        },
                    }
                },
                "additionalProperties": False,
            },
        },
        "additionalProperties": False,
    },
}


def _manifest_files() -> list[Path]:
    return sorted(p for p in K8S.rglob("*.yaml") if p.name != "kustomization.yaml")


def _documents() -> list[tuple[str, dict[str, Any]]]:
    return [
        (f"{path.relative_to(K8S)}:{doc['kind']}/{doc['metadata']['name']}", doc)
        for path in _manifest_files()
        for doc in load_yaml_all(path)
    ]


def _one(path: str, kind: str) -> dict[str, Any]:
    (doc,) = [d for d in load_yaml_all(K8S / path) if d["kind"] == kind]
    return doc


def _container(workload: dict[str, Any]) -> dict[str, Any]:
    (container,) = workload["spec"]["template"]["spec"]["containers"]
    return container


def _generator() -> ModuleType:
    path = K8S / "generate_prometheusrule.py"
    spec = importlib.util.spec_from_file_location("generate_prometheusrule", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


DOCUMENTS = _documents()
CORE = [(name, doc) for name, doc in DOCUMENTS if doc["kind"] not in CRD_KINDS]
CRDS = [(name, doc) for name, doc in DOCUMENTS if doc["kind"] in CRD_KINDS]
DEPLOYMENT = _one("base/deployment.yaml", "Deployment")
STATEFULSET = _one("sharded/statefulset.yaml", "StatefulSet")
WORKLOADS = {"Deployment": DEPLOYMENT, "StatefulSet": STATEFULSET}


def test_every_kind_is_present() -> None:
    """The manifests hold every kind a deployment needs, and no other."""
    kinds = {doc["kind"] for _, doc in DOCUMENTS}
    assert kinds == {
        "ConfigMap",
        "Deployment",
        "NetworkPolicy",
        "Service",
        "ServiceMonitor",
        "PrometheusRule",
        "StatefulSet",
    }


@pytest.mark.parametrize(("name", "doc"), CORE, ids=[n for n, _ in CORE])
def test_core_manifest_validates_strictly(name: str, doc: dict[str, Any]) -> None:
    """Each core manifest validates strictly against the supported Kubernetes version."""
    assert kubernetes_validate.validate(doc, K8S_VERSION, strict=True) == "1.30"


def test_strict_validation_rejects_a_misspelt_field() -> None:
    """The validator is not vacuous: a typo in the pod spec fails."""
    broken = yaml.safe_load(yaml.safe_dump(DEPLOYMENT))
    broken["spec"]["template"]["spec"]["containers"][0]["readinessprobe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)


@pytest.mark.parametrize(("name", "doc"), CRDS, ids=[n for n, _ in CRDS])
def test_crd_manifest_matches_its_schema(name: str, doc: dict[str, Any]) -> None:
    """Each operator resource (ServiceMonitor, PrometheusRule) matches its vendored CRD schema."""
    jsonschema.validate(doc, CRD_SCHEMAS[doc["kind"]])


CRD_VALIDATOR = REPO / "tests" / "deploy" / "crd"


def _operator_schema_errors(docs: list[dict[str, Any]]) -> list[str | None]:
    """Each document checked against the Prometheus Operator's own CRD schemas (compiled by
    the npm package @kubernetes-models/prometheus-operator, installed by `make crd-validator`:
    tests/deploy/crd/package-lock.json pins it). None for a valid document."""
    node = shutil.which("node")
    installed = (CRD_VALIDATOR / "node_modules" / "@kubernetes-models").is_dir()
    if node is None or not installed:
        why = "node is missing" if node is None else "run make crd-validator (npm ci)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"the CRD schema validator cannot run: {why}")
        pytest.skip(f"the CRD schema validator cannot run: {why}")
    done = subprocess.run(
        [node, str(CRD_VALIDATOR / "validate.mjs")],
        input=json.dumps(docs),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [r["error"] for r in json.loads(done.stdout)]


@pytest.mark.e2e
def test_crd_manifests_match_the_operators_schemas() -> None:
    """The operator resources validate against the operators' published schemas."""
    docs = [doc for _, doc in CRDS]
    assert {d["kind"] for d in docs} == CRD_KINDS
    errors = _operator_schema_errors(docs)
    assert errors == [None] * len(docs), [(n, e) for (n, _), e in zip(CRDS, errors, strict=True)]


@pytest.mark.e2e
def test_operators_schemas_reject_broken_documents() -> None:
    """Not vacuous: a wrongly typed field and a missing required one fail."""
    monitor = _one("base/servicemonitor.yaml", "ServiceMonitor")
    rule = _one("base/prometheusrule.yaml", "PrometheusRule")
    bad_interval = yaml.safe_load(yaml.safe_dump(monitor))
    bad_interval["spec"]["endpoints"][0]["interval"] = 30
    no_expr = yaml.safe_load(yaml.safe_dump(rule))
    del no_expr["spec"]["groups"][0]["rules"][0]["expr"]
    errors = _operator_schema_errors([bad_interval, no_expr])
    assert all(errors), errors


def test_crd_schema_rejects_a_misspelt_field() -> None:
    """The CRD check is not vacuous: a misspelt field fails it."""
    monitor = _one("base/servicemonitor.yaml", "ServiceMonitor")
    broken = {**monitor, "spec": {**monitor["spec"], "endpoint": monitor["spec"]["endpoints"]}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, CRD_SCHEMAS["ServiceMonitor"])


def test_prometheusrule_is_the_generated_file() -> None:
    """The committed PrometheusRule is what its generator renders from the shipped rules."""
    committed = (K8S / "base" / "prometheusrule.yaml").read_text(encoding="utf-8")
    assert committed == _generator().render(), (
        "stale: run python deploy/k8s/generate_prometheusrule.py"
    )


def test_prometheusrule_groups_equal_the_rule_files() -> None:
    """Independently of the generator: the same groups, in file order, unchanged."""
    groups = [g for path in RULE_FILES for g in load_yaml(path)["groups"]]
    resource = _one("base/prometheusrule.yaml", "PrometheusRule")
    assert resource["spec"]["groups"] == groups


@pytest.mark.e2e
def test_generator_check_mode(tmp_path: Path) -> None:
    """The generator's --check passes on the committed files (its SLO rules generated by
    `evaluator slo rules`, a subprocess) and fails on a stale one."""
    generator = _generator()
    assert generator.main(["--check"]) == 0
    stale = tmp_path / "prometheusrule.yaml"
    stale.write_text("# edited by hand\n", encoding="utf-8")
    assert generator.main(["--check", "--output", str(stale)]) == 1
    assert generator.main(["--output", str(stale)]) == 0
    assert stale.read_text(encoding="utf-8") == generator.render()


def test_generator_sets_the_runbook_base(tmp_path: Path) -> None:
    """The generator writes the runbook base it is given into every alert's runbook URL."""
    generator = _generator()
    out = tmp_path / "prometheusrule.yaml"
    base = "https://wiki.example.org/sre/rag-evaluator-runbook"
    assert generator.main(["--output", str(out), "--runbook-base", base]) == 0
    resource = yaml.safe_load(out.read_text(encoding="utf-8").split("\n", 4)[4])
    urls = [
        rule["annotations"]["runbook_url"]
        for group in resource["spec"]["groups"]
        for rule in group["rules"]
        if "alert" in rule
    ]
    assert urls and all(u.startswith(base + "#") for u in urls)
    assert {u.partition("#")[2] for u in urls} == {
        rule["alert"].lower()
        for group in resource["spec"]["groups"]
        for rule in group["rules"]
        if "alert" in rule
    }
    # the rule files' text keeps its comments and layout; only the links move
    rules = "".join(p.read_text(encoding="utf-8") for p in RULE_FILES)
    moved = generator.with_runbook_base(rules, base)
    assert moved.count(base + "#") == len(urls)
    assert moved.replace(base, generator.DEFAULT_RUNBOOK_BASE) == rules
    with pytest.raises(ValueError, match="absolute"):
        generator.with_runbook_base(rules, "deploy/RUNBOOK.md")


@pytest.mark.e2e
@pytest.mark.prometheus
def test_prometheusrule_rules_pass_promtool(promtool: str, tmp_path: Path) -> None:
    """The PrometheusRule's rules pass promtool's check."""
    resource = _one("base/prometheusrule.yaml", "PrometheusRule")
    path = tmp_path / "rules.yml"
    path.write_text(yaml.safe_dump({"groups": resource["spec"]["groups"]}), encoding="utf-8")
    result = run_promtool(promtool, "check", "rules", "--lint=all", "--lint-fatal", path)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("kind", WORKLOADS)
def test_workload_probes_health_endpoints(kind: str) -> None:
    """Liveness and startup probes call /healthz, readiness /readyz, on the metrics port."""
    container = _container(WORKLOADS[kind])
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    assert container["startupProbe"]["httpGet"]["path"] == "/healthz"
    assert {"name": "metrics", "containerPort": 9464, "protocol": "TCP"} in container["ports"]


@pytest.mark.parametrize("kind", WORKLOADS)
def test_workload_runs_non_root_on_a_read_only_filesystem(kind: str) -> None:
    """The workload runs as non-root on a read-only root filesystem, without privileges."""
    pod = WORKLOADS[kind]["spec"]["template"]["spec"]
    container = _container(WORKLOADS[kind])
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 10001  # the image's USER
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    resources = container["resources"]
    assert {"cpu", "memory"} <= resources["requests"].keys()
    assert "memory" in resources["limits"]


@pytest.mark.parametrize("kind", WORKLOADS)
def test_writable_paths_are_volumes(kind: str) -> None:
    """Reports and /tmp are the only writable paths; the config is mounted read-only."""
    workload = WORKLOADS[kind]
    container = _container(workload)
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert set(mounts) == {"/etc/evaluator", "/var/lib/evaluator/reports", "/tmp"}
    assert mounts["/etc/evaluator"]["readOnly"] is True
    assert "subPath" not in mounts["/etc/evaluator"], "subPath mounts never see ConfigMap updates"
    volumes = {v["name"]: v for v in workload["spec"]["template"]["spec"]["volumes"]}
    claims = {c["metadata"]["name"] for c in workload["spec"].get("volumeClaimTemplates", [])}
    assert volumes[mounts["/etc/evaluator"]["name"]]["configMap"]["name"] == "rag-evaluator-config"
    assert "emptyDir" in volumes[mounts["/tmp"]["name"]]
    reports = mounts["/var/lib/evaluator/reports"]["name"]
    assert reports in claims or "emptyDir" in volumes[reports]
    args = container["args"]
    assert args[args.index("--reports-dir") + 1] == "/var/lib/evaluator/reports"
    assert args[args.index("--config") + 1] == "/etc/evaluator/evaluator.toml"
    assert args[args.index("--listen") + 1] == "0.0.0.0:9464"


@pytest.mark.parametrize("kind", WORKLOADS)
def test_token_comes_from_a_secret(kind: str) -> None:
    """The target's token comes from a Secret, never a literal in the manifest."""
    env = {e["name"]: e for e in _container(WORKLOADS[kind])["env"]}
    ref = env["RAG_API_TOKEN"]["valueFrom"]["secretKeyRef"]
    assert ref == {"name": "rag-evaluator-secrets", "key": "rag-api-token"}
    assert "value" not in env["RAG_API_TOKEN"]


def test_sharded_pods_differ_only_in_shard_settings_and_reports_volume() -> None:
    """A sharded pod is the single pod plus its shard settings and reports volume, nothing else."""
    single = yaml.safe_load(yaml.safe_dump(DEPLOYMENT["spec"]["template"]))
    sharded = yaml.safe_load(yaml.safe_dump(STATEFULSET["spec"]["template"]))
    env = sharded["spec"]["containers"][0]["env"]
    shard_env = {e["name"]: e for e in env if e["name"].startswith("EVALUATOR_SHARD_")}
    sharded["spec"]["containers"][0]["env"] = [e for e in env if e["name"] not in shard_env]
    single["spec"]["volumes"] = [v for v in single["spec"]["volumes"] if v["name"] != "reports"]
    assert sharded == single
    assert set(shard_env) == {"EVALUATOR_SHARD_INDEX", "EVALUATOR_SHARD_COUNT"}


def test_shard_settings_match_the_replicas() -> None:
    """The shard count is the StatefulSet's replica count."""
    env = {e["name"]: e for e in _container(STATEFULSET)["env"]}
    assert int(env["EVALUATOR_SHARD_COUNT"]["value"]) == STATEFULSET["spec"]["replicas"] > 1
    field = env["EVALUATOR_SHARD_INDEX"]["valueFrom"]["fieldRef"]["fieldPath"]
    assert field == "metadata.labels['apps.kubernetes.io/pod-index']"
    assert STATEFULSET["spec"]["serviceName"] == "rag-evaluator-shards"


def test_config_loads_with_shard_settings_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ConfigMap's evaluator.toml passes the evaluator's own config validation, and the
    StatefulSet's environment variables select the shard."""
    data = _one("base/configmap.yaml", "ConfigMap")["data"]
    path = tmp_path / "evaluator.toml"
    path.write_text(data["evaluator.toml"], encoding="utf-8")
    single = load_settings(path)
    assert (single.shard_index, single.shard_count) == (0, 1)
    monkeypatch.setenv("EVALUATOR_SHARD_INDEX", "2")
    monkeypatch.setenv("EVALUATOR_SHARD_COUNT", "3")
    sharded = load_settings(path)
    assert (sharded.shard_index, sharded.shard_count) == (2, 3)
    target = sharded.targets[0]
    assert isinstance(target, HttpTargetConfig)
    assert target.request.headers["Authorization"] == "Bearer ${RAG_API_TOKEN}"


def test_configmap_golden_set_is_valid_and_mounted_where_the_job_reads_it() -> None:
    """The ConfigMap's golden set is valid and mounted where the job reads it."""
    data = _one("base/configmap.yaml", "ConfigMap")["data"]
    (job,) = tomllib.loads(data["evaluator.toml"])["jobs"]
    dataset = Path(job["dataset"])
    assert dataset.parent == Path("/etc/evaluator")
    assert dataset.name in data
    parsed = parse_dataset(data[dataset.name].encode("utf-8"), dataset.name)
    assert len(parsed.questions) >= 5
    assert any(case.unanswerable for case in parsed.questions)


def test_service_selects_the_pods_and_the_servicemonitor_the_service() -> None:
    """The Service selects the pods, and the ServiceMonitor the Service's metrics port."""
    service = _one("base/service.yaml", "Service")
    monitor = _one("base/servicemonitor.yaml", "ServiceMonitor")
    shards = _one("sharded/service-shards.yaml", "Service")
    # the Operator's job label is the Service name: the alert rules select it
    assert service["metadata"]["name"] == SCRAPE_JOB
    assert "jobLabel" not in monitor["spec"]
    for workload in WORKLOADS.values():
        labels = workload["spec"]["template"]["metadata"]["labels"]
        assert service["spec"]["selector"].items() <= labels.items()
        assert workload["spec"]["selector"]["matchLabels"].items() <= labels.items()
    wanted = monitor["spec"]["selector"]["matchLabels"].items()
    assert wanted <= service["metadata"]["labels"].items()
    assert not wanted <= shards["metadata"]["labels"].items(), "pods would be scraped twice"
    ports = {p["name"]: p for p in service["spec"]["ports"]}
    assert [e["port"] for e in monitor["spec"]["endpoints"]] == ["metrics"]
    assert ports["metrics"]["targetPort"] == "metrics"
    assert monitor["spec"]["endpoints"][0]["path"] == "/metrics"


@pytest.mark.parametrize("kustomization", sorted(K8S.rglob("kustomization.yaml")), ids=str)
def test_kustomization_resources_exist(kustomization: Path) -> None:
    """Every resource a kustomization lists exists."""
    resources = load_yaml(kustomization)["resources"]
    for resource in resources:
        path = kustomization.parent / resource
        assert path.is_file() or (path / "kustomization.yaml").is_file(), resource
    listed = {(kustomization.parent / r).resolve() for r in resources}
    for path in kustomization.parent.glob("*.yaml"):
        assert path.name == "kustomization.yaml" or path.resolve() in listed, f"{path} unused"


def test_sharded_overlay_replaces_the_deployment() -> None:
    """The sharded overlay replaces the Deployment with the StatefulSet."""
    kustomization = load_yaml(K8S / "sharded" / "kustomization.yaml")
    (transformer,) = [yaml.safe_load(t) for t in kustomization["transformers"]]
    deletion = yaml.safe_load(transformer["patch"])
    assert deletion["$patch"] == "delete"
    assert (deletion["kind"], deletion["metadata"]["name"]) == ("Deployment", "rag-evaluator")


def _kubectl() -> str:
    path = shutil.which("kubectl")
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail("kubectl is missing: the kustomize tests need `kubectl kustomize`")
        pytest.skip("kubectl is not installed")
    return path


def _kustomize(tmp_path: Path, overlay: str, base_images: str = "") -> list[dict[str, Any]]:
    """``kubectl kustomize`` of a copy of deploy/k8s, with ``base_images`` appended to the
    base's kustomization.yaml (what ``kustomize edit set image`` writes there)."""
    tree = tmp_path / "k8s"
    shutil.copytree(K8S, tree)
    if base_images:
        with (tree / "base" / "kustomization.yaml").open("a", encoding="utf-8") as f:
            f.write(base_images)
    done = subprocess.run(
        [_kubectl(), "kustomize", str(tree / overlay)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def _images(docs: list[dict[str, Any]]) -> dict[str, list[str]]:
    return {
        d["kind"]: [c["image"] for c in d["spec"]["template"]["spec"]["containers"]]
        for d in docs
        if d["kind"] in ("Deployment", "StatefulSet")
    }


_SET_IMAGE = """images:
- name: rag-evaluator
  newName: registry.example.org/team/rag-evaluator
  newTag: 1.2.3
"""


@pytest.mark.e2e
@pytest.mark.parametrize("overlay", ["base", "sharded"])
def test_kustomize_renders_without_an_override(tmp_path: Path, overlay: str) -> None:
    """Each overlay renders with kustomize as shipped."""
    docs = _kustomize(tmp_path, overlay)
    kinds = {d["kind"] for d in docs}
    assert ("Deployment" in kinds) == (overlay == "base")
    assert ("StatefulSet" in kinds) == (overlay == "sharded")
    assert list(_images(docs).values()) == [["rag-evaluator:0.1.0"]]


@pytest.mark.e2e
@pytest.mark.parametrize("overlay", ["base", "sharded"])
def test_image_set_in_base_reaches_every_overlay(tmp_path: Path, overlay: str) -> None:
    """The sharded overlay rendered the StatefulSet with rag-evaluator:0.1.0 whatever the
    base set (kustomize's images apply to a kustomization's own resources only)."""
    docs = _kustomize(tmp_path, overlay, _SET_IMAGE)
    assert list(_images(docs).values()) == [["registry.example.org/team/rag-evaluator:1.2.3"]]


def test_image_matches_the_dockerfile_user() -> None:
    """The pod's user and group are the image's USER."""
    dockerfile = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    (user,) = re.findall(r"^USER (\d+):(\d+)$", dockerfile, re.M)
    pod = DEPLOYMENT["spec"]["template"]["spec"]["securityContext"]
    assert (str(pod["runAsUser"]), str(pod["runAsGroup"])) == user


@pytest.mark.parametrize("kind", WORKLOADS)
def test_network_policy_admits_prometheus_to_the_workload_port_only(kind: str) -> None:
    """The NetworkPolicy selects the evaluator pods and opens only their `metrics` port,
    to Prometheus pods and labelled clients; the Host allow-list takes the Service's names."""
    policy = _one("base/networkpolicy.yaml", "NetworkPolicy")
    pod_labels = WORKLOADS[kind]["spec"]["template"]["metadata"]["labels"]
    selector = policy["spec"]["podSelector"]["matchLabels"]
    assert selector.items() <= pod_labels.items()
    assert ["Ingress"] == policy["spec"]["policyTypes"]
    (rule,) = policy["spec"]["ingress"]
    ports = {p["name"] for p in _container(WORKLOADS[kind])["ports"]}
    assert [{"port": "metrics", "protocol": "TCP"}] == rule["ports"] and "metrics" in ports
    sources = [s["podSelector"]["matchLabels"] for s in rule["from"]]
    assert {"app.kubernetes.io/name": "prometheus"} in sources

    from evaluator.config import ServerConfig
    from evaluator.daemon.access import Access

    access = Access(ServerConfig().allowed_hosts, None, "0.0.0.0")
    service = _one("base/service.yaml", "Service")["metadata"]["name"]
    shards = _one("sharded/service-shards.yaml", "Service")["metadata"]["name"]
    for host in (
        f"{service}:9464",
        f"{service}.monitoring.svc:9464",
        f"{service}-0.{shards}.monitoring.svc.cluster.local:9464",
    ):
        assert access.host_allowed(host), host
