import os
import shutil

from paths import EXAMPLES

MESSY = """# my job
lifecycle:
  command: [echo, hi]   # says hi
job:
    name: x
version: jetstream.v1
"""


def test_fmt_orders_keys_and_keeps_comments(jsctl, write):
    path = write("job.yaml", MESSY)
    code, out, _ = jsctl("fmt", "--check", path)
    assert code == 1 and "would reformat" in out
    assert open(path).read() == MESSY  # --check changes nothing
    code, out, _ = jsctl("fmt", path)
    assert code == 0
    text = open(path).read()
    assert text.index("version:") < text.index("job:") < text.index("lifecycle:")
    assert "# my job" in text and "# says hi" in text
    assert jsctl("fmt", "--check", path)[0] == 0


def test_seed_example_is_already_canonical(jsctl):
    assert jsctl("fmt", "--check", os.path.join(EXAMPLES, "finetune-llama.yaml"))[0] == 0


def test_fmt_quotes_unquoted_reference(jsctl, tmp_path):
    path = tmp_path / "ft.yaml"
    shutil.copy(os.path.join(EXAMPLES, "fine-tune-job.yaml"), path)
    assert jsctl("fmt", str(path))[0] == 0
    assert 'path: "{{jobs.data-prep.outputs.processed_data}}"' in path.read_text()
