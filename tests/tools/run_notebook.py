"""Executes a notebook in a real Jupyter kernel with nbclient, for tests/e2e/test_jupyter.py (run
with the Python that has nbclient, nbformat and ipykernel: build/jupyter-venv).

    run_notebook.py KERNEL_NAME CELLS.json OUT.json CWD

CELLS.json: a list of code cells' sources. The notebook is built with nbformat, executed in a
kernel of that name (found on JUPYTER_PATH) in the folder CWD with errors allowed, and OUT.json gets, per cell,
its outputs as nbformat writes them (stream text, display data by MIME type, errors' ename and
evalue). The executed notebook itself goes next to OUT.json (OUT.ipynb)."""

import json
import sys

import nbformat
from nbclient import NotebookClient

TIMEOUT_S = 120  # per cell


def main():
    kernel, cells_path, out_path, cwd = sys.argv[1:5]
    with open(cells_path, encoding="utf-8") as f:
        sources = json.load(f)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    NotebookClient(nb, kernel_name=kernel, timeout=TIMEOUT_S, allow_errors=True,
                   resources={"metadata": {"path": cwd}}).execute()
    nbformat.write(nb, out_path.rsplit(".", 1)[0] + ".ipynb")
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump([cell.outputs for cell in nb.cells], f)


if __name__ == "__main__":
    main()
