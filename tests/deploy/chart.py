"""Rendering the Helm chart offline with the Helm SDK, and validating what it renders."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from tests.deploy.tools import CHART, missing

PRODUCTION = CHART / "values-production.yaml"
CRD_SCHEMAS = Path(__file__).parent / "crds"
# The oldest Kubernetes the chart supports (Chart.yaml kubeVersion) and the newest known.
KUBE_VERSIONS = ("1.28.0", "1.37.0")

Manifest = dict[str, Any]


def _helm() -> Any:
    try:
        import helm_python
    except ImportError:
        missing("helm-python-sdk", "pip install -e '.[test]'")
    return helm_python


def render_error() -> type[Exception]:
    """What ``render`` raises when a template fails (e.g. a ``required`` value is missing)."""
    error: type[Exception] = _helm().HelmRenderError
    return error


def production_values() -> dict[str, Any]:
    values: dict[str, Any] = yaml.safe_load(PRODUCTION.read_text())
    return values


def _render_files(values: dict[str, Any] | None, release: str, namespace: str) -> dict[str, str]:
    helm = _helm()
    with helm.Chart.load(str(CHART)) as chart:
        files: dict[str, str] = chart.render(
            values or {}, name=release, namespace=namespace, is_install=True
        )
    return files


def render(
    values: dict[str, Any] | None = None, release: str = "svc", namespace: str = "payments"
) -> list[Manifest]:
    """Every manifest the chart renders, hooks included, as ``helm template`` would print them."""
    files = _render_files(values, release, namespace)
    manifests: list[Manifest] = []
    for path, text in sorted(files.items()):
        if path.endswith(".txt"):
            continue
        manifests.extend(doc for doc in yaml.safe_load_all(text) if doc)
    return manifests


def notes(values: dict[str, Any] | None = None) -> str:
    """The NOTES.txt Helm prints after an install or upgrade."""
    files = _render_files(values, "svc", "payments")
    return next(text for path, text in files.items() if path.endswith("/NOTES.txt"))


def lint(values: dict[str, Any] | None = None) -> dict[str, Any]:
    report: dict[str, Any] = _helm().lint(
        str(CHART), values or {}, strict=True, namespace="payments"
    )
    return report


@cache
def crd_schema(api_version: str, kind: str) -> dict[str, Any] | None:
    """The vendored CRD schema of ``kind``, or None for a built-in kind."""
    group, _, version = api_version.rpartition("/")
    path = CRD_SCHEMAS / f"{kind.lower()}-{group.split('.')[0]}-{version}.json"
    if not path.exists():
        return None
    schema: dict[str, Any] = json.loads(path.read_text())
    return schema


def validate(manifest: Manifest, kube_version: str) -> None:
    """Raise when ``manifest`` does not match its schema (strict for built-in kinds)."""
    import kubernetes_validate

    schema = crd_schema(manifest["apiVersion"], manifest["kind"])
    if schema is not None:
        jsonschema.Draft202012Validator(schema).validate(manifest)
        return
    kubernetes_validate.validate(manifest, kube_version, strict=True)


def of_kind(manifests: list[Manifest], kind: str) -> list[Manifest]:
    return [m for m in manifests if m["kind"] == kind]


def hook_events(manifest: Manifest) -> set[str]:
    """The Helm hook events of ``manifest``; empty for an ordinary resource."""
    annotations = manifest["metadata"].get("annotations") or {}
    return {e.strip() for e in annotations.get("helm.sh/hook", "").split(",") if e.strip()}


def hook_weight(manifest: Manifest) -> int:
    return int(manifest["metadata"].get("annotations", {}).get("helm.sh/hook-weight", "0"))


def one(manifests: list[Manifest], kind: str, name: str | None = None) -> Manifest:
    found = [m for m in of_kind(manifests, kind) if name is None or m["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]
