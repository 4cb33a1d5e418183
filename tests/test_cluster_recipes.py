"""The cluster recipes (examples/cluster/, docs/cluster.md) are valid as written: the Kubernetes manifests parse
as YAML and follow the batch/v1 Job fields they use (a schema of those fields, from the Kubernetes API
reference: no cluster is run here), and the Slurm scripts are valid bash. The Slurm recipe itself runs in
tests/test_shards.py on a one-node Slurm."""

import re
import subprocess

import pytest

from autograder import KIT

yaml = pytest.importorskip("yaml")
jsonschema = pytest.importorskip("jsonschema")

CLUSTER = KIT / "examples" / "cluster"

QUANTITY = {"type": "string", "pattern": r"^[0-9]+(\.[0-9]+)?(m|Ki|Mi|Gi|Ti)?$"}
CONTAINER = {
    "type": "object",
    "required": ["name", "image", "command", "args"],
    "properties": {
        "name": {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"},
        "image": {"type": "string", "minLength": 1},
        "command": {"type": "array", "items": {"type": "string"}},
        "args": {"type": "array", "items": {"type": "string"}},
        "resources": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                k: {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {"cpu": QUANTITY, "memory": QUANTITY},
                }
                for k in ("requests", "limits")
            },
        },
        "securityContext": {"type": "object"},
        "volumeMounts": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "mountPath"],
                "additionalProperties": False,
                "properties": {"name": {"type": "string"}, "mountPath": {"type": "string"}},
            },
        },
    },
    "additionalProperties": False,
}
# batch/v1 Job, the fields these manifests use (kubernetes.io/docs/reference/kubernetes-api/workload-resources/job-v1)
JOB = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": "batch/v1"},
        "kind": {"const": "Job"},
        "metadata": {
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"}
            },
        },
        "spec": {
            "type": "object",
            "required": ["template"],
            "additionalProperties": False,
            "properties": {
                "completionMode": {"enum": ["NonIndexed", "Indexed"]},
                "completions": {"type": "integer", "minimum": 1},
                "parallelism": {"type": "integer", "minimum": 1},
                "backoffLimit": {"type": "integer", "minimum": 0},
                "backoffLimitPerIndex": {"type": "integer", "minimum": 0},
                "template": {
                    "type": "object",
                    "required": ["spec"],
                    "additionalProperties": False,
                    "properties": {
                        "spec": {
                            "type": "object",
                            "required": ["restartPolicy", "containers"],
                            "additionalProperties": False,
                            "properties": {
                                # a Job's pods may not restart Always
                                "restartPolicy": {"enum": ["Never", "OnFailure"]},
                                "containers": {"type": "array", "minItems": 1, "items": CONTAINER},
                                "volumes": {"type": "array", "items": {"type": "object"}},
                            },
                        }
                    },
                },
            },
        },
    },
}


@pytest.mark.parametrize("name", ["grade-job.yaml", "merge-job.yaml"])
def test_each_kubernetes_manifest_is_a_batch_v1_job(name):
    doc = yaml.safe_load((CLUSTER / "kubernetes" / name).read_text())
    jsonschema.validate(doc, JOB)
    mounts = {
        m["name"] for c in doc["spec"]["template"]["spec"]["containers"] for m in c["volumeMounts"]
    }
    assert mounts <= {v["name"] for v in doc["spec"]["template"]["spec"]["volumes"]}


def test_the_indexed_job_cuts_the_class_in_as_many_shards_as_it_has_pods():
    doc = yaml.safe_load((CLUSTER / "kubernetes" / "grade-job.yaml").read_text())
    spec = doc["spec"]
    assert spec["completionMode"] == "Indexed"
    (command,) = spec["template"]["spec"]["containers"][0]["args"]
    (n,) = re.findall(r"--shard \$k/(\d+)", command)
    assert int(n) == spec["completions"]
    assert "JOB_COMPLETION_INDEX + 1" in command  # the index is 0-based, shards 1-based


@pytest.mark.parametrize("name", ["grade.sbatch", "merge.sbatch", "submit.sh"])
def test_each_slurm_script_is_valid_bash(name):
    done = subprocess.run(
        ["bash", "-n", str(CLUSTER / "slurm" / name)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
