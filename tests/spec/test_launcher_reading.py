"""How `smtrain import` reads a launcher without running it: what counts as known, what is named and where, and
the launchers it refuses (exit 2, the file and line, nothing written)."""

from __future__ import annotations

import json

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from smtrain.spec.imported_spec import imported_text
from smtrain.spec.launcher import LauncherError, SdkObject, Templated, Unknown, read_launcher
from smtrain.spec.sdk_arguments import spec_data
from tests.support.cli_runner import smtrain

HEAD = "from sagemaker.tensorflow import TensorFlow\n"


def launcher(tmp_path, body: str, name: str = "launch.py"):
    path = tmp_path / name
    path.write_text(HEAD + body)
    return read_launcher(path)


def test_values_known_from_names_fstrings_arithmetic_and_dict_spreads(tmp_path):
    read = launcher(tmp_path, 'bucket = "b1"\nprefix = "p"\nhours = 2\nextra = {"volume_size": 50}\n'
                              'est = TensorFlow(output_path=f"s3://{bucket}/{prefix}/" + "out", max_run=hours * 3600,\n'
                              '                 instance_count=-(-2), **extra)\nest.fit()\n')
    args = {k: (a.value, a.line) for k, a in read.arguments.items()}
    assert args == {"output_path": ("s3://b1/p/out", 6), "max_run": (7200, 6), "instance_count": (2, 7),
                    "volume_size": (50, 7)}


def test_the_last_binding_before_the_call_counts_and_later_ones_do_not(tmp_path):
    read = launcher(tmp_path, 'kind = "ml.g5.xlarge"\nkind = "ml.g5.2xlarge"\nTensorFlow(instance_type=kind).fit()\n'
                              'kind = "ml.p4d.24xlarge"\n')
    assert read.arguments["instance_type"].value == "ml.g5.2xlarge"
    assert read.arguments["instance_type"].source == "kind, line 3"


@pytest.mark.parametrize(("expression", "why"), [
    ("os.environ['T']", "computed when the launcher runs"),
    ("undefined_name", "a name the launcher does not bind before this line"),
    ("f'{x:>4}'", "a formatted value (x) the launcher computes when it runs"),
    ("[*kinds]", "computed when the launcher runs"),
])
def test_what_is_computed_when_it_runs_is_unknown_and_says_why(tmp_path, expression, why):
    read = launcher(tmp_path, f"import os\nx = 1\nkinds = []\nTensorFlow(instance_type={expression})\n")
    value = read.arguments["instance_type"].value
    assert isinstance(value, Unknown) and value.why == why


def test_a_loop_variable_is_not_a_constant(tmp_path):
    read = launcher(tmp_path, 'for kind in ["a", "b"]:\n    TensorFlow(instance_type=kind).fit()\n')
    value = read.arguments["instance_type"].value
    assert isinstance(value, Unknown) and value.why.startswith("set at line 2 by code that runs")


def test_the_default_bucket_and_role_become_variables_in_the_text_made_of_them(tmp_path):
    read = launcher(tmp_path, "import sagemaker\nsess = sagemaker.Session()\nrole = sagemaker.get_execution_role()\n"
                              "TensorFlow(role=role + 'x', output_path='s3://' + sess.default_bucket() + '/o',\n"
                              "           checkpoint_s3_uri=f's3://{sess.default_bucket()}/ck').fit()\n")
    role = read.arguments["role"].value
    assert isinstance(role, Templated) and role == "${SMTRAIN_ROLE}x" and role.variables == ("SMTRAIN_ROLE",)
    output = read.arguments["output_path"].value
    assert isinstance(output, Templated) and output == "s3://${SMTRAIN_BUCKET}/o"
    assert read.arguments["checkpoint_s3_uri"].value.variables == ("SMTRAIN_BUCKET",)


def test_a_literal_dollar_brace_is_escaped_in_the_spec(tmp_path):
    read = launcher(tmp_path, 'TensorFlow(environment={"A": "${HOME}"}, role="arn:aws:iam::1:role/r").fit()\n')
    assert spec_data(read).data["environment"] == {"A": "$${HOME}"}


def test_training_input_in_every_written_form(tmp_path):
    read = launcher(tmp_path, "from sagemaker.inputs import TrainingInput\nimport sagemaker\n"
                              "est = TensorFlow()\nest.fit({'a': TrainingInput('s3://b1/a'), "
                              "'b': sagemaker.inputs.TrainingInput(s3_data='s3://b1/b', input_mode='Pipe')})\n")
    assert read.inputs.value == {"a": SdkObject("TrainingInput", {"s3_data": "s3://b1/a"}),
                                 "b": SdkObject("TrainingInput", {"s3_data": "s3://b1/b", "input_mode": "Pipe"})}
    assert spec_data(read).data["inputs"] == {"a": "s3://b1/a", "b": {"uri": "s3://b1/b", "mode": "Pipe"}}


def test_two_estimators_take_the_fitted_one_and_say_so(tmp_path):
    read = launcher(tmp_path, "a = TensorFlow(instance_count=1)\nb = TensorFlow(instance_count=2)\nb.fit()\n")
    assert read.arguments["instance_count"].value == 2
    assert read.notes == ((2, "another TensorFlow(...) estimator: the import takes the one at launch.py:3 (the one "
                              "fit() is called on)"),)
    assert "launch.py:2: another TensorFlow(...) estimator" in [n.render()[:46] for n in spec_data(read).notes]


def test_unknown_arguments_and_odd_values_are_named(tmp_path):
    read = launcher(tmp_path, 'TensorFlow(entry_point="t.py", instance_cont=2, instance_count="2",\n'
                              '           hyperparameters={"layers": [1, 2], "sagemaker_x": 1, "ok": 1},\n'
                              '           distribution={"torch_distributed": {"enabled": True}}).fit()\n')
    imported = spec_data(read)
    assert [n.render() for n in imported.notes if "role" not in n.argument and "output" not in n.argument] == [
        "launch.py:2: instance_count: not imported: '2' is not what the SDK takes here",
        "launch.py:2: instance_type: not known: compute.instance_type is auto (smtrain picks the cheapest GPU "
        "instance that fits)",
        "launch.py:2: entry_point: no source_dir: the SDK packs t.py alone, the spec packs its directory (.)",
        "launch.py:2: instance_cont: not imported: not an argument of SDK v2's TensorFlow estimator that smtrain knows",
        "launch.py:3: hyperparameters['layers']: not imported: [1, 2] is not a number, text or flag (smtrain sends "
        "each value as its JSON text, as the SDK does)",
        "launch.py:3: hyperparameters['sagemaker_x']: not imported: SageMaker's own name, set by smtrain",
        "launch.py:4: distribution.torch_distributed: not imported: not a strategy of SDK v2's TensorFlow estimator "
        "that smtrain runs (the SDK ignores an unknown key)"]
    assert imported.data["hyperparameters"] == {"ok": 1}


def test_a_notebook_launcher_with_magics_shell_lines_and_bash_cells(tmp_path):
    nb = new_notebook(cells=[new_markdown_cell("# launch"), new_code_cell("!pip install -U sagemaker\nfiles = !ls"),
                             new_code_cell("%%bash\naws s3 ls\n"),
                             new_code_cell(HEAD + "%matplotlib inline\nest = TensorFlow(\n    instance_count=os)\n"),
                             new_code_cell("%%time\nest.fit('s3://b1/x')")])
    nbformat.write(nb, tmp_path / "launch.ipynb")
    read = read_launcher(tmp_path / "launch.ipynb")
    assert read.where(read.arguments["instance_count"].line) == "launch.ipynb, cell 4, line 4"
    assert read.inputs.value == "s3://b1/x"


@pytest.mark.parametrize(("text", "message"), [
    ("import sagemaker\nprint(1)\n", "launch.py: no TensorFlow(...) or Estimator(...) call of the SageMaker SDK"),
    ("TensorFlow(\n", "launch.py:1: not valid Python"),
])
def test_launchers_that_cannot_be_imported_exit_2_with_nothing_written(tmp_path, text, message):
    (tmp_path / "launch.py").write_text(text)
    with pytest.raises(LauncherError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        read_launcher(tmp_path / "launch.py")
    proc = smtrain("import", "launch.py", "-o", "json", cwd=tmp_path)
    assert proc.returncode == 2 and message in json.loads(proc.stdout)["error"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["launch.py"]


def test_a_broken_notebook_is_named(tmp_path):
    (tmp_path / "launch.ipynb").write_text("{not json")
    proc = smtrain("import", "launch.ipynb", cwd=tmp_path)
    assert proc.returncode == 2 and "launch.ipynb: not valid JSON at line 1" in proc.stderr


def test_usage_errors(tmp_path):
    assert smtrain("import", cwd=tmp_path).returncode == 2
    (tmp_path / "l.py").write_text(HEAD + "TensorFlow().fit()\n")
    both = smtrain("import", "l.py", "x.yaml", "--job", "x", cwd=tmp_path)
    assert both.returncode == 2 and "with --job NAME, name only the SPEC to write" in both.stderr
    code = smtrain("import", "l.py", "--download-code", "d", cwd=tmp_path)
    assert code.returncode == 2 and "--download-code is for --job" in code.stderr
    assert smtrain("import", "l.txt", cwd=tmp_path).returncode == 2


def test_readme_tables_every_argument_the_import_knows():
    from smtrain.spec import sdk_arguments
    from tests.support import docs

    section = docs.section("Coming from the SageMaker SDK")
    known = {*sdk_arguments.MAPPED, *sdk_arguments.SMTRAIN_OWN, *sdk_arguments.NO_FIELD_YET}
    assert sorted(a for a in known if f"`{a}`" not in section) == []


def test_upload_data_as_the_sagemaker_examples_write_it(tmp_path):
    read = launcher(tmp_path, "import sagemaker\nsess = sagemaker.Session()\nprefix = 'DEMO-mnist'\n"
                              "training_data = sess.upload_data(path='data', key_prefix=prefix + '/train')\n"
                              "own = sess.upload_data('data/test', bucket='b1')\n"
                              "TensorFlow().fit({'training': training_data, 'test': own})\n")
    imported = spec_data(read)
    assert imported.data["inputs"] == {"training": "s3://${SMTRAIN_BUCKET}/DEMO-mnist/train",
                                       "test": "s3://b1/data"}
    assert imported.variables == ("SMTRAIN_BUCKET", "SMTRAIN_ROLE")
    assert [n.render() for n in imported.notes if "upload" in n.message] == [
        "launch.py:7: fit(inputs)['training']: the launcher uploads data to s3://${SMTRAIN_BUCKET}/DEMO-mnist/train "
        "when it runs (sess.upload_data): upload it once (aws s3 sync data s3://${SMTRAIN_BUCKET}/DEMO-mnist/train), "
        "or give data for --local",
        "launch.py:7: fit(inputs)['test']: the launcher uploads data/test to s3://b1/data when it runs "
        "(sess.upload_data): upload it once (aws s3 sync data/test s3://b1/data), or give data/test for --local"]


def test_a_spec_that_cannot_be_written_fails_cleanly_and_leaves_no_temporary_file(tmp_path):
    import subprocess
    import sys

    from tests.support import ROOT

    (tmp_path / "l.py").write_text(HEAD + "TensorFlow(role='arn:aws:iam::1:role/r').fit()\n")
    proc = subprocess.run(["bash", "-c", f'ulimit -f 0; exec "{sys.executable}" -m smtrain import l.py'], cwd=tmp_path,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr == "error: cannot write job.yaml: File too large\n", proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["l.py"]


def test_a_name_set_under_an_if_has_no_one_value_but_main_s_block_runs(tmp_path):
    read = launcher(tmp_path, "import sys\nbig = len(sys.argv) > 1\nif big:\n    kind = 'ml.p4d.24xlarge'\nelse:\n"
                              "    kind = 'ml.g5.xlarge'\nif __name__ == '__main__':\n    nodes = 2\n"
                              "    TensorFlow(instance_type=kind, instance_count=nodes).fit()\n")
    kind = read.arguments["instance_type"].value
    assert isinstance(kind, Unknown) and kind.why == "set under the if at line 4: which value it has depends on the run"
    assert read.arguments["instance_count"].value == 2


def test_sdk_objects_given_by_position(tmp_path):
    read = launcher(tmp_path, "from sagemaker.inputs import FileSystemInput, TrainingInput\n"
                              "from sagemaker.debugger import TensorBoardOutputConfig\n"
                              "TensorFlow(tensorboard_output_config=TensorBoardOutputConfig('s3://b1/tb')).fit({\n"
                              "    'a': TrainingInput('s3://b1/a', 'ShardedByS3Key'),\n"
                              "    'f': FileSystemInput('fs-0abc1234', 'EFS', '/d', 'rw')})\n")
    imported = spec_data(read)
    assert imported.data["tensorboard"] == "s3://b1/tb"
    assert imported.data["inputs"] == {"a": {"uri": "s3://b1/a", "distribution": "ShardedByS3Key"},
                                       "f": {"file_system": {"id": "fs-0abc1234", "type": "EFS", "directory": "/d",
                                                             "access_mode": "rw"}}}


def test_upload_data_of_a_file_is_the_file_s_uri(tmp_path):
    (tmp_path / "train.csv").write_text("1\n")
    read = launcher(tmp_path, "import sagemaker\nsess = sagemaker.Session()\n"
                              "TensorFlow().fit(sess.upload_data('train.csv', key_prefix='mnist'))\n")
    imported = spec_data(read)
    assert imported.data["inputs"] == {"training": "s3://${SMTRAIN_BUCKET}/mnist/train.csv"}
    assert any("aws s3 cp train.csv s3://${SMTRAIN_BUCKET}/mnist/train.csv" in n.message for n in imported.notes)


def test_computed_values_inside_dicts_and_lists_are_named_never_written(tmp_path):
    (tmp_path / "code").mkdir()
    read = launcher(tmp_path, "import os\nTensorFlow(entry_point='t.py', source_dir='code',\n"
                              "    distribution={'mpi': {'enabled': True, 'processes_per_host': int(os.environ['P'])}},\n"
                              "    subnets=['subnet-0abc1234', os.environ['SUBNET']], security_group_ids=['sg-0abc1234'],\n"
                              "    environment={'MODE': os.environ['MODE'], 'API_TOKEN': 'hunter2-secret'},\n"
                              "    git_config={'repo': 'https://me:ghp_abcdef@github.com/o/r.git',\n"
                              "                'branch': os.environ['B']},\n"
                              ").fit()\n")
    imported = spec_data(read)
    text = imported_text(imported, "launch.py")
    assert "hunter2" not in text and "ghp_abcdef" not in text and "me:ghp" not in text
    assert imported.data["environment"] == {"API_TOKEN": "${API_TOKEN}"} and "API_TOKEN" in imported.variables
    assert imported.data["network"]["subnets"] == ["subnet-0abc1234"]
    assert imported.data["code"]["git"] == {"repository": "https://github.com/o/r.git", "directory": "code"}
    assert imported.data["distribution"] == {"strategy": "horovod"}
    named = {n.argument for n in imported.notes}
    assert {"distribution.processes_per_host", "network.subnets[1]", "environment.MODE", "code.git.branch",
            "git_config.repo", "environment['API_TOKEN']"} <= named, named


def test_a_described_job_s_members_all_reach_the_mapping_or_a_note():
    from smtrain.sagemaker.job_import import job_arguments

    described = {
        "TrainingJobName": "resnet-experiment-7", "RoleArn": "arn:aws:iam::123456789012:role/R",
        "HyperParameters": {"sagemaker_program": '"train.py"', "sagemaker_submit_directory": '"s3://b1/code.tar.gz"'},
        "AlgorithmSpecification": {"TrainingImage": "img:2.16", "TrainingInputMode": "File",
                                   "ContainerEntrypoint": ["python"], "EnableSageMakerMetricsTimeSeries": False},
        "ResourceConfig": {"InstanceType": "ml.g5.xlarge", "InstanceCount": 1, "VolumeSizeInGB": 50},
        "StoppingCondition": {"MaxRuntimeInSeconds": 3600, "MaxPendingTimeInSeconds": 7200},
        "OutputDataConfig": {"S3OutputPath": "s3://b1/out"},
        "InputDataConfig": [{"ChannelName": "fs", "DataSource": {"FileSystemDataSource": {
            "FileSystemId": "fs-0abc1234", "FileSystemType": "EFS", "DirectoryPath": "/d",
            "FileSystemAccessMode": "rw"}}}],
        # A member smtrain has no field for (a serverless job's): named, never dropped in silence.
        "ServerlessJobConfig": {"BaseModelArn": "arn:x"}, "TrainingJobStatus": "Completed",
    }
    args, inputs = job_arguments(described, [], "code")
    assert args["base_job_name"] == "resnet-experiment-7" and args["max_pending"] == 7200
    assert args["container_entry_point"] == ["python"] and args["enable_sagemaker_metrics"] is False
    assert args["unread_fields"] == ["ServerlessJobConfig"]
    assert inputs["fs"].arguments["file_system_access_mode"] == "rw"
